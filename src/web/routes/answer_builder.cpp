#include "web/routes/answer_builder.h"

#include <exception>
#include <optional>

#include "util/heap_trim.h"

namespace loadwatch {

namespace {
thread_local bool on_builder = false;
}  // namespace

AnswerBuilder::AnswerBuilder(int threads) {
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
