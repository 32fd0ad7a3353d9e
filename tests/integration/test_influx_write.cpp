// The InfluxDB write endpoints through the real HTTP server (web/http_server.h) on loopback, with
// libcurl as the client.
#include <curl/curl.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <map>
#include <string>

#include "collectors/influx.h"
#include "runs/run_book.h"
#include "tests/lib/loopback_server.h"
#include "tests/lib/sample_values.h"
#include "util/gzip.h"
#include "web/http_server.h"

using namespace loadwatch;

namespace {

struct Reply {
  long status = 0;
  std::string body;
};

size_t append(char* data, size_t size, size_t n, void* out) {
  static_cast<std::string*>(out)->append(data, size * n);
  return size * n;
}

Reply request(const std::string& url, const std::string& method, const std::string& body,
              std::vector<std::string> headers = {}) {
  CURL* c = curl_easy_init();
  REQUIRE(c);
  Reply r;
  curl_slist* hl = nullptr;
  for (const auto& h : headers) hl = curl_slist_append(hl, h.c_str());
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method.c_str());
  if (method == "POST") {
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body.data());
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
  }
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, hl);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, append);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &r.body);
  curl_easy_setopt(c, CURLOPT_TIMEOUT, 20L);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  CURLcode rc = curl_easy_perform(c);
  if (rc == CURLE_OK) curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r.status);
  curl_slist_free_all(hl);
  curl_easy_cleanup(c);
  INFO(curl_easy_strerror(rc));
  REQUIRE((rc == CURLE_OK || rc == CURLE_SEND_ERROR));
  return r;
}

std::map<std::string, double> collect(Collector& col, const FsRoot& root) {
  SampleContext ctx{root, root, 0, {}};
  MetricSink sink;
  col.collect(ctx, sink);
  return test::sample_values(sink);
}

struct Server {
  Options options;
  Config config;
  FsRoot root{"/nonexistent"};
  HttpServer http{test::loopback_settings()};
  std::unique_ptr<Collector> collector;
  Server() {
    CollectorEnv env{options, config, root, root, &http};
    collector = make_influx_collector(env);
    http.start();
  }
  std::string url(const std::string& path) const { return test::loopback_url(http, path); }
};

/// The two collections hold the same series with the same values (NaN equal to NaN), except
/// the push wall-clock time, which differs between any two writes.
void check_same_samples(const std::map<std::string, double>& a,
                        const std::map<std::string, double>& b) {
  REQUIRE(a.size() == b.size());
  for (const auto& [key, value] : a) {
    INFO(key);
    REQUIRE(b.count(key) == 1);
    if (key.rfind("loadwatch_push_last_timestamp_seconds{", 0) == 0) continue;
    if (std::isnan(value)) {
      CHECK(std::isnan(b.at(key)));
    } else {
      CHECK(b.at(key) == value);
    }
  }
}

const char* kBody =
    "events,application=shop,title=ApacheJMeter text=\"Test started\" 1700000000000000000\n"
    "jmeter,application=shop,transaction=all,statut=all count=10,countError=1,avg=5.0,"
    "pct90.0=9.0 1700000005000000000\n"
    "jmeter,application=shop,transaction=home,statut=all count=10,pct90.0=9.0 "
    "1700000005000000000\n"
    "jmeter,application=shop,transaction=home,statut=ko count=1 1700000005000000000\n"
    "jmeter,application=,transaction=internal minAT=1,maxAT=2,meanAT=1.5,startedT=2,endedT=0 "
    "1700000005000000000\n";

}  // namespace

TEST_CASE("influx http: v1 /write takes a JMeter body and answers 204") {
  Server s;
  auto r = request(s.url("/write?db=perf"), "POST", kBody);
  CHECK(r.status == 204);
  CHECK(r.body.empty());
  auto v = collect(*s.collector, s.root);
  CHECK(v["loadwatch_generator_requests_total{source=perf}"] == 10);
  CHECK(v["loadwatch_generator_failures_total{source=perf}"] == 1);
  CHECK(v["loadwatch_generator_endpoint_failures_total{source=perf,name=home,method=}"] == 1);
  CHECK(v["loadwatch_generator_latency_seconds{source=perf,quantile=0.9}"] == Approx(0.009));
  CHECK(v["loadwatch_generator_users{source=perf}"] == 2);
  CHECK(v["loadwatch_generator_run_start_timestamp_seconds{source=perf}"] == 1700000000);
}

TEST_CASE("influx http: v2 /api/v2/write uses the bucket and precision") {
  Server s;
  auto r = request(s.url("/api/v2/write?org=o&bucket=b2&precision=s"), "POST",
                   "events text=\"x started\" 1700000000\n"
                   "jmeter,transaction=all,statut=all count=3 1700000001\n",
                   {"Authorization: Token secret"});
  CHECK(r.status == 204);
  auto v = collect(*s.collector, s.root);
  CHECK(v["loadwatch_generator_requests_total{source=b2}"] == 3);
  CHECK(v["loadwatch_generator_run_start_timestamp_seconds{source=b2}"] == 1700000000);
}

TEST_CASE("influx http: a malformed line gives 400 naming it; valid lines still taken") {
  Server s;
  auto r = request(s.url("/write?db=perf"), "POST",
                   "jmeter,transaction=all,statut=all count=4\n"
                   "jmeter,transaction=all,statut=all count=oops\n"
                   "jmeter,transaction=all,statut=all count=5\n");
  CHECK(r.status == 400);
  CHECK_THAT(r.body, Catch::Contains("line 2") && Catch::Contains("invalid field value") &&
                         Catch::Contains("count=oops") && Catch::StartsWith("{\"error\":"));
  auto v = collect(*s.collector, s.root);
  CHECK(v["loadwatch_generator_requests_total{source=perf}"] == 9);
  CHECK(v["loadwatch_push_rejected_lines_total{protocol=influx,reason=parse}"] == 1);
}

TEST_CASE("influx http: missing db, bad precision, wrong method, unsupported encoding") {
  Server s;
  auto r = request(s.url("/write"), "POST", "m v=1");
  CHECK(r.status == 400);
  CHECK_THAT(r.body, Catch::Contains("db is required"));
  r = request(s.url("/api/v2/write?org=o"), "POST", "m v=1");
  CHECK(r.status == 400);
  CHECK_THAT(r.body, Catch::Contains("bucket is required"));
  r = request(s.url("/write?db=x&precision=weeks"), "POST", "m v=1");
  CHECK(r.status == 400);
  // The error quotes the client's bytes: control characters escaped, invalid UTF-8 replaced,
  // the body still one JSON object.
  r = request(s.url("/write?db=x&precision=w%22%0A%FF"), "POST", "m v=1");
  CHECK(r.status == 400);
  CHECK(r.body == "{\"error\":\"invalid precision \\\"w\\\"\\n\xEF\xBF\xBD\\\"\"}\n");
  r = request(s.url("/write?db=x"), "GET", "");
  CHECK(r.status == 405);
  for (const char* encoding : {"br", "deflate", "zstd", "gzip, br"}) {
    INFO(encoding);
    r = request(s.url("/write?db=x"), "POST", "m v=1",
                {std::string("Content-Encoding: ") + encoding});
    CHECK(r.status == 415);
    CHECK_THAT(r.body, Catch::StartsWith("{\"error\":") && Catch::Contains("not supported"));
  }
  auto v = collect(*s.collector, s.root);
  CHECK(v.count("loadwatch_generator_requests_total{source=x}") == 0);
}

TEST_CASE("influx http: a body over the limit gets 413 and changes nothing") {
  Server s;
  std::string line = "jmeter,transaction=all,statut=all count=1\n";
  std::string body;
  body.reserve(kInfluxMaxBody + line.size());
  while (body.size() <= kInfluxMaxBody) body += line;
  auto r = request(s.url("/write?db=big"), "POST", body);
  CHECK(r.status == 413);
  auto v = collect(*s.collector, s.root);
  CHECK(v.count("loadwatch_generator_requests_total{source=big}") == 0);
  // The server still answers afterwards.
  CHECK(request(s.url("/write?db=big"), "POST", line).status == 204);
}

TEST_CASE("influx http: a gzip body lands exactly as the plain body") {
  Server plain, gz;
  REQUIRE(request(plain.url("/write?db=perf"), "POST", kBody).status == 204);
  auto r =
      request(gz.url("/write?db=perf"), "POST", gzip_compress(kBody), {"Content-Encoding: gzip"});
  CHECK(r.status == 204);
  CHECK(r.body.empty());
  auto want = collect(*plain.collector, plain.root);
  CHECK(want["loadwatch_generator_requests_total{source=perf}"] == 10);
  check_same_samples(want, collect(*gz.collector, gz.root));
}

TEST_CASE("influx http: v2 gzip in any case, in several members; identity as is") {
  std::string body =
      "events text=\"x started\" 1700000000\n"
      "jmeter,transaction=all,statut=all count=3 1700000001\n";
  Server plain, gz;
  const char* url = "/api/v2/write?org=o&bucket=b2&precision=s";
  REQUIRE(request(plain.url(url), "POST", body).status == 204);
  // telegraf and the Go client send one member; `gzip -c a b` style bodies have several.
  auto r = request(gz.url(url), "POST",
                   gzip_compress(body.substr(0, 20)) + gzip_compress(body.substr(20)),
                   {"Content-Encoding:  GZip ", "Authorization: Token secret"});
  CHECK(r.status == 204);
  check_same_samples(collect(*plain.collector, plain.root), collect(*gz.collector, gz.root));

  Server id;
  CHECK(request(id.url(url), "POST", body, {"Content-Encoding: identity"}).status == 204);
  check_same_samples(collect(*plain.collector, plain.root), collect(*id.collector, id.root));
}

TEST_CASE("influx http: a malformed line inside a gzip body is named like a plain one") {
  Server s;
  auto r = request(s.url("/write?db=perf"), "POST",
                   gzip_compress("jmeter,transaction=all,statut=all count=4\n"
                                 "jmeter,transaction=all,statut=all count=oops\n"),
                   {"Content-Encoding: gzip"});
  CHECK(r.status == 400);
  CHECK_THAT(r.body, Catch::Contains("line 2") && Catch::Contains("count=oops"));
  auto v = collect(*s.collector, s.root);
  CHECK(v["loadwatch_generator_requests_total{source=perf}"] == 4);
}

TEST_CASE("influx http: a gzip bomb gets 413, nothing is taken, the server keeps serving") {
  Server s;
  // 64 MiB of valid lines, ~64 KiB on the wire: far under the 16 MiB body limit, far over it
  // once inflated.
  std::string line = "jmeter,transaction=all,statut=all count=1\n";
  std::string big;
  big.reserve((64u << 20) + line.size());
  while (big.size() < (64u << 20)) big += line;
  std::string bomb = gzip_compress(big, 9);
  big = std::string();
  REQUIRE(bomb.size() < kInfluxMaxBody / 16);
  auto r = request(s.url("/write?db=bomb"), "POST", bomb, {"Content-Encoding: gzip"});
  CHECK(r.status == 413);
  CHECK_THAT(r.body, Catch::StartsWith("{\"error\":") &&
                         Catch::Contains("inflates past " + std::to_string(kInfluxMaxBody)));
  auto v = collect(*s.collector, s.root);
  CHECK(v.count("loadwatch_generator_requests_total{source=bomb}") == 0);
  // Still serving, plain and gzip.
  CHECK(request(s.url("/write?db=bomb"), "POST", line).status == 204);
  CHECK(request(s.url("/write?db=bomb"), "POST", gzip_compress(line), {"Content-Encoding: gzip"})
            .status == 204);
  v = collect(*s.collector, s.root);
  CHECK(v["loadwatch_generator_requests_total{source=bomb}"] == 2);
}

TEST_CASE("influx http: corrupt or truncated gzip gets 400 and changes nothing") {
  Server s;
  std::string gz = gzip_compress(kBody);
  std::string bad_crc = gz;
  bad_crc[bad_crc.size() - 8] ^= 0x55;
  auto r = request(s.url("/write?db=bad"), "POST", bad_crc, {"Content-Encoding: gzip"});
  CHECK(r.status == 400);
  CHECK_THAT(r.body, Catch::StartsWith("{\"error\":\"invalid gzip body"));
  r = request(s.url("/write?db=bad"), "POST", gz.substr(0, gz.size() / 2),
              {"Content-Encoding: gzip"});
  CHECK(r.status == 400);
  CHECK_THAT(r.body, Catch::Contains("truncated gzip body"));
  r = request(s.url("/write?db=bad"), "POST", kBody, {"Content-Encoding: gzip"});  // not gzip
  CHECK(r.status == 400);
  CHECK_THAT(r.body, Catch::Contains("invalid gzip body"));
  auto v = collect(*s.collector, s.root);
  CHECK(v.count("loadwatch_generator_requests_total{source=bad}") == 0);
}

namespace {

/// The daemon's wiring: the influx listener told about runs, runs kept on disk.
struct RunServer {
  Options options;
  Config config;
  FsRoot root{"/nonexistent"};
  std::string dir;
  std::unique_ptr<RunBook> book;
  HttpServer http{test::loopback_settings()};
  std::unique_ptr<Collector> collector;
  explicit RunServer(bool annotations) {
    char tmpl[] = "/tmp/lw_influx_runs_XXXXXX";
    dir = mkdtemp(tmpl);
    options.push_run_annotations = annotations;
    book = std::make_unique<RunBook>(std::make_unique<RunStore>(dir));
    CollectorEnv env{options, config, root, root, &http, book.get()};
    collector = make_influx_collector(env);
    http.start();
  }
  ~RunServer() {
    http.stop();
    book.reset();
    std::filesystem::remove_all(dir);
  }
  std::string url(const std::string& path) const { return test::loopback_url(http, path); }
  std::vector<std::string> files() const {
    std::vector<std::string> out;
    for (const auto& e : std::filesystem::directory_iterator(dir + "/runs")) {
      out.push_back(e.path().filename().string());
    }
    std::sort(out.begin(), out.end());
    return out;
  }
};

std::string annotation(const std::string& text, long long seconds) {
  return "events,application=shop,title=ApacheJMeter text=\"" + text + "\" " +
         std::to_string(seconds) + "000000000\n";
}

/// `n` runs annotated over /write, one second each, as an unauthenticated pusher may send.
void push_flood(const RunServer& s, int n) {
  long long t = 1796144712;
  for (int i = 0; i < n; ++i) {
    auto body = annotation("flood" + std::to_string(i) + " started", t + 2 * i) +
                annotation("flood" + std::to_string(i) + " ended", t + 2 * i + 1);
    REQUIRE(request(s.url("/write?db=perf"), "POST", body).status == 204);
  }
}

}  // namespace

TEST_CASE("influx http: without --push.run-annotations, 101 pushed runs change no run") {
  RunServer s(false);
  // Three real runs, as the API makes them.
  for (int i = 0; i < 3; ++i) {
    s.book->start_run(StartRunRequest{"real" + std::to_string(i), {}});
    s.book->stop_run();
  }
  const auto before = s.files();
  REQUIRE(before.size() == 3);
  push_flood(s, 101);
  s.book->checkpoint();
  CHECK_FALSE(s.book->current());
  CHECK(s.book->list().size() == 3);
  CHECK(s.files() == before);
}

TEST_CASE("influx http: with --push.run-annotations, pushed annotations open and close a run") {
  RunServer s(true);
  long long t = 1796144712;
  REQUIRE(request(s.url("/write?db=perf"), "POST", annotation("Checkout started", t)).status ==
          204);
  REQUIRE(s.book->current());
  CHECK(s.book->current()->origin == "jmeter:perf");
  REQUIRE(request(s.url("/write?db=perf"), "POST", annotation("Checkout ended", t + 9)).status ==
          204);
  CHECK_FALSE(s.book->current());
  s.book->checkpoint();  // the writer thread's files are on disk
  CHECK(s.files().size() == 1);
}

TEST_CASE("influx http: with --push.run-annotations, 101 pushed runs never delete the API's") {
  RunServer s(true);
  for (int i = 0; i < 3; ++i) {
    s.book->start_run(StartRunRequest{"real" + std::to_string(i), {}});
    s.book->stop_run();
  }
  const auto api = s.files();
  push_flood(s, 101);
  s.book->checkpoint();
  auto files = s.files();
  for (const auto& f : api) CHECK(std::find(files.begin(), files.end(), f) != files.end());
  std::size_t api_kept = 0;
  for (const Run& r : s.book->list()) api_kept += r.origin == "api";
  CHECK(api_kept == 3);
}
