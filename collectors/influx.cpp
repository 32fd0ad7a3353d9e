// JMeter's InfluxdbBackendListenerClient (3.2+) POSTs line protocol to the URL it is given
// (default http://host:8086/write?db=jmeter; 5.2+ also /api/v2/write?org=..&bucket=.. with a
// Token header) every 5 s and once at teardown. loadwatch answers like InfluxDB would: 204 on
// success, 400 with {"error": ...} on a malformed line. Telegraf, the influxdb-client libraries
// and the influx CLI gzip their bodies (Content-Encoding: gzip), which InfluxDB accepts too.
#include "collectors/influx.h"

#include <string>

#include "collectors/push_body.h"
#include "util/gzip.h"
#include "util/heap_trim.h"
#include "util/unix_time.h"

namespace loadwatch {

namespace {

class InfluxCollector : public Collector {
 public:
  explicit InfluxCollector(std::shared_ptr<JMeterModel> model) : model_(std::move(model)) {}
  void collect(SampleContext& ctx, MetricSink& out) override {
    model_->forget_quiet(ctx.now);
    model_->collect(out, ctx.now);
  }

 private:
  std::shared_ptr<JMeterModel> model_;
};

}  // namespace

HttpHandler make_influx_write_handler(std::shared_ptr<JMeterModel> model, bool v2) {
  return [model = std::move(model), v2](const HttpRequest& req) -> HttpResponse {
    if (req.method != "POST") {
      auto r = json_error(405, "method not allowed: use POST");
      r.headers.emplace_back("Allow", "POST");
      return r;
    }
    const char* param = v2 ? "bucket" : "db";
    std::string source = req.query_param(param);
    if (source.empty()) return json_error(400, std::string(param) + " is required");
    if (source.size() > 256) return json_error(400, std::string(param) + " is too long");
    auto ns = influx_precision_ns(req.query_param("precision"));
    if (!ns) return json_error(400, "invalid precision \"" + req.query_param("precision") + "\"");
    GunzipResult inflated;
    HttpResponse refused;
    auto body = push_body(req, kInfluxMaxBody, inflated, refused);
    if (!body) return refused;
    auto outcome = model->ingest_influx(source, *body, unix_now(), *ns);
    note_heap_freed(req.body.size() + inflated.data.size());  // both go after the answer
    if (outcome.refused) {
      // InfluxDB answers a full database with an error the writer logs; a 204 here would
      // lose the run's numbers silently.
      std::string_view reason = outcome.refused;
      std::string why =
          std::string(param) + " \"" + source + "\" refused (reason " + std::string(reason) + "): ";
      if (reason == "max_sources") {
        why +=
            "too many databases, and none of those kept has been quiet long enough to be "
            "replaced";
      } else if (reason == "max_series") {
        why += "the series cap of this listener is reached";
      } else {
        why += "the name is too long";
      }
      auto r = json_error(reason == "label_limit" ? 400 : 429, why);
      if (outcome.retry_after_s > 0) {
        r.headers.emplace_back("Retry-After",
                               std::to_string(static_cast<long long>(outcome.retry_after_s)));
      }
      return r;
    }
    if (outcome.malformed == 0) {
      HttpResponse r;
      r.status = 204;
      return r;
    }
    std::string msg = "partial write: " + std::to_string(outcome.malformed) +
                      " malformed line(s), " + std::to_string(outcome.points) +
                      " valid point(s) taken";
    for (const auto& e : outcome.errors) {
      msg += "; unable to parse line " + std::to_string(e.line) + ": " + e.message + ": '" +
             std::string(e.text) + "'";
    }
    return json_error(400, msg);
  };
}

std::unique_ptr<Collector> make_influx_collector(const CollectorEnv& env) {
  auto model = std::make_shared<JMeterModel>("influx");
  // Anyone who can reach /write can push: only the operator's flag makes them a run writer.
  if (env.options.push_run_annotations) model->set_run_observer(env.runs);
  if (env.http) {
    env.http->route("/write", make_influx_write_handler(model, false), kInfluxMaxBody);
    env.http->route("/api/v2/write", make_influx_write_handler(model, true), kInfluxMaxBody);
  }
  return std::make_unique<InfluxCollector>(std::move(model));
}

}  // namespace loadwatch
