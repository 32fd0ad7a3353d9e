#include "collectors/locustpush.h"

#include <string>

#include "collectors/push_body.h"
#include "config/options.h"
#include "util/heap_trim.h"
#include "util/unix_time.h"

namespace loadwatch {

namespace {

class LocustPushCollector : public Collector {
 public:
  explicit LocustPushCollector(std::shared_ptr<LocustPushModel> model) : model_(std::move(model)) {}
  void collect(SampleContext& ctx, MetricSink& out) override { model_->collect(out, ctx.now); }

 private:
  std::shared_ptr<LocustPushModel> model_;
};

}  // namespace

HttpHandler make_locust_push_handler(std::shared_ptr<LocustPushModel> model) {
  return [model = std::move(model)](const HttpRequest& req) -> HttpResponse {
    if (req.method != "POST") {
      auto r = json_error(405, "method not allowed: use POST");
      r.headers.emplace_back("Allow", "POST");
      return r;
    }
    GunzipResult inflated;
    HttpResponse refused;
    auto body = push_body(req, kLocustPushMaxBody, inflated, refused);
    if (!body) {
      model->count_rejected(refused.status == 413 ? "too_long" : "parse");
      return refused;
    }
    LocustPush push;
    std::string error;
    bool parsed = parse_locust_push(*body, push, error);
    note_heap_freed(req.body.size() + inflated.data.size());
    if (!parsed) {
      model->count_rejected("parse");
      return json_error(400, error);
    }
    auto outcome = model->ingest(push, unix_now());
    if (outcome.refused) {
      std::string_view reason = outcome.refused;
      if (reason == "stale") {
        return json_error(409, "source \"" + push.source +
                                   "\": time is not after the last push's (reason stale)");
      }
      auto r = json_error(429, "source \"" + push.source +
                                   "\" refused (reason max_sources): too many sources, and none "
                                   "has been quiet long enough to be replaced");
      r.headers.emplace_back("Retry-After",
                             std::to_string(static_cast<long long>(outcome.retry_after_s)));
      return r;
    }
    HttpResponse r;
    r.status = 204;
    return r;
  };
}

std::unique_ptr<Collector> make_locustpush_collector(const CollectorEnv& env) {
  auto model = std::make_shared<LocustPushModel>();
  // Whoever can reach the port can push: only the operator's flag lets that open, phase and
  // close runs.
  if (env.options.push_run_annotations) model->set_run_observer(env.runs);
  if (env.http) {
    env.http->route(kLocustPushPath, make_locust_push_handler(model), kLocustPushMaxBody);
  }
  return std::make_unique<LocustPushCollector>(std::move(model));
}

}  // namespace loadwatch
