#include "routes/answer_builder.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <exception>
#include <optional>
#include <string>

#include "util/heap_trim.h"
#include "util/thread_name.h"

namespace loadwatch {

namespace {
thread_local bool on_builder = false;

HttpResponse busy(const std::string& why) {
  HttpResponse r;
  r.status = 503;
  r.content_type = "application/json";
  r.body = "{\"status\":\"error\",\"error\":\"" + why + "; retry later\"}\n";
  r.headers.push_back({"Retry-After", "1"});
  r.refused_busy = true;
  return r;
}

/// Lowers the calling thread's priority by kNiceness (Linux: a thread's own nice value). Only
/// ever lowers it, which needs no privilege; a refusal leaves the thread as it was.
void lower_priority(int niceness) {
  const auto tid = static_cast<id_t>(gettid());
  errno = 0;
  const int now = getpriority(PRIO_PROCESS, tid);
  if (errno != 0) return;
  setpriority(PRIO_PROCESS, tid, std::min(now + niceness, 19));
}
}  // namespace

AnswerBuilder::AnswerBuilder(int threads, std::size_t max_answer_bytes)
    : max_answer_bytes_(max_answer_bytes) {
  for (int i = 0; i < std::max(1, threads); ++i) threads_.emplace_back([this] { work(); });
}

AnswerBuilder::~AnswerBuilder() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (auto& t : threads_) t.join();
}

void AnswerBuilder::work() {
  on_builder = true;
  name_this_thread("lw-builder");
  lower_priority(kNiceness);
  std::unique_lock lock(mutex_);
  for (;;) {
    wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, and nothing left to build
    auto task = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    task();
    task = nullptr;  // its captures are freed here, on this thread
    lock.lock();
    // A burst is over: its scratch is free, in blocks too many to count. The sampler gives it
    // back to the kernel after its next sample (one malloc_trim per sample at most).
    if (queue_.empty()) trim_heap_soon();
  }
}

HttpResponse AnswerBuilder::build(const HttpHandler& handler, const HttpRequest& req) {
  if (on_builder) return handler(req);
  if (req.method != "GET" && req.method != "HEAD") return run(handler, req);
  {
    std::lock_guard lock(mutex_);
    if (reads_ >= static_cast<int>(threads_.size()) + kWaitingReads) {
      return busy("the answer builders are busy with other reads");
    }
    if (answer_bytes_->load() >= max_answer_bytes_) {
      return busy("answers being sent hold more than " + std::to_string(max_answer_bytes_) +
                  " bytes");
    }
    ++reads_;
  }
  struct Done {
    AnswerBuilder& self;
    ~Done() {
      std::lock_guard lock(self.mutex_);
      --self.reads_;
    }
  } done{*this};
  HttpResponse answer = run(handler, req);
  if (answer.shared_body || answer.body.empty()) return answer;
  // Counted until the server frees the body, after its last byte is written (or the
  // connection closes): what slow readers hold is bounded too, not only the builds.
  const std::size_t bytes = answer.body.capacity();
  answer_bytes_->fetch_add(bytes);
  answer.shared_body =
      std::shared_ptr<const std::string>(new std::string(std::move(answer.body)),
                                         [held = answer_bytes_, bytes](const std::string* body) {
                                           delete body;
                                           held->fetch_sub(bytes);
                                         });
  answer.body = std::string();
  return answer;
}

HttpResponse AnswerBuilder::run(const HttpHandler& handler, const HttpRequest& req) {
  std::optional<HttpResponse> answer;
  std::exception_ptr failed;
  bool done = false;
  std::condition_variable finished;
  {
    std::lock_guard lock(mutex_);
    queue_.emplace_back([&] {
      try {
        answer = handler(req);
      } catch (...) {
        failed = std::current_exception();
      }
      std::lock_guard done_lock(mutex_);
      done = true;
      finished.notify_one();
    });
  }
  wake_.notify_one();
  {
    std::unique_lock lock(mutex_);
    finished.wait(lock, [&] { return done; });
  }
  if (failed) std::rethrow_exception(failed);
  return std::move(*answer);
}

HttpHandler AnswerBuilder::wrap(HttpHandler handler) {
  return
      [this, handler = std::move(handler)](const HttpRequest& req) { return build(handler, req); };
}

}  // namespace loadwatch
