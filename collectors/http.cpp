#include "collectors/http.h"

#include "web/http_server.h"

namespace loadwatch {

namespace {

class HttpCollector final : public Collector {
 public:
  explicit HttpCollector(const HttpServer* server) : server_(server) {}

  void collect(SampleContext&, MetricSink& out) override {
    if (!server_) return;
    HttpServerStats s = server_->stats();
    out.gauge("loadwatch_http_connections",
              "Open HTTP connections (past the TLS handshake), idle and slow ones included.", {},
              s.connections);
    out.gauge("loadwatch_http_max_connections",
              "HTTP connections served at once (--web.max-connections, capped by RLIMIT_NOFILE).",
              {}, s.max_connections);
    out.gauge("loadwatch_http_request_body_bytes",
              "Memory reserved by the request bodies being read.", {},
              static_cast<double>(s.body_bytes));
    out.gauge("loadwatch_http_request_body_max_bytes",
              "Request body memory of all requests together beyond which requests get 503.", {},
              static_cast<double>(s.max_body_memory));
    for (const auto& [reason, n] : s.rejected) {
      out.counter("loadwatch_http_rejected_requests_total",
                  "HTTP requests and connections turned away or cut off by a limit, by reason.",
                  {{"reason", reason}}, static_cast<double>(n));
    }
  }

 private:
  const HttpServer* server_;
};

}  // namespace

std::unique_ptr<Collector> make_http_collector(const CollectorEnv& env) {
  return std::make_unique<HttpCollector>(env.http);
}

}  // namespace loadwatch
