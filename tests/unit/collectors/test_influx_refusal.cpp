// The Influx write handler when the model cannot keep a database: the writer must see an
// error naming why (InfluxDB answers a full database with an error too), never a 204 that
// silently loses the run's numbers; and it is counted.
#include <catch2/catch.hpp>
#include <memory>
#include <string>

#include "collectors/influx.h"
#include "tests/lib/sample_values.h"

using namespace loadwatch;

namespace {

HttpRequest write(const std::string& db, const std::string& body) {
  HttpRequest r;
  r.method = "POST";
  r.path = "/write";
  r.query = "db=" + db;
  r.body = body;
  return r;
}

const char* kLine = "jmeter,transaction=all,statut=all count=1\n";

}  // namespace

TEST_CASE("influx: the 65th database gets 429 naming the reason, and is counted") {
  auto model = std::make_shared<JMeterModel>("influx");
  auto handler = make_influx_write_handler(model, false);
  for (int i = 0; i < 64; ++i) {
    REQUIRE(handler(write("db" + std::to_string(i), kLine)).status == 204);
  }
  HttpResponse r = handler(write("db64", kLine));
  CHECK(r.status == 429);
  CHECK(r.content_type == "application/json");
  CHECK(r.body.find("max_sources") != std::string::npos);
  CHECK(r.body.find("db64") != std::string::npos);
  bool retry_after = false;
  for (const auto& [name, value] : r.headers) {
    if (name == "Retry-After") retry_after = std::stoi(value) > 0;
  }
  CHECK(retry_after);
  // A database already kept is still taken.
  CHECK(handler(write("db3", kLine)).status == 204);

  MetricSink sink;
  model->collect(sink, 1000);
  auto v = test::sample_values(sink);
  CHECK(v["loadwatch_push_rejected_lines_total{protocol=influx,reason=max_sources}"] == 1);
  CHECK(v.count("loadwatch_generator_requests_total{source=db64}") == 0);
  CHECK(v["loadwatch_generator_requests_total{source=db3}"] == 2);
}

TEST_CASE("influx: a database refused for the series cap gets 429 too") {
  JMeterModel::Limits limits;
  limits.max_series = JMeterModel::kSourceSeries;  // room for one source only
  auto model = std::make_shared<JMeterModel>("influx", limits);
  auto handler = make_influx_write_handler(model, false);
  REQUIRE(handler(write("a", kLine)).status == 204);
  HttpResponse r = handler(write("b", kLine));
  CHECK(r.status == 429);
  CHECK(r.body.find("max_series") != std::string::npos);
}
