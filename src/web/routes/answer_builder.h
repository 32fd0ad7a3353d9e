#pragma once
// Where the answers that take memory to build are built: a run with its phases, a page of runs,
// a report, the history's columns. They are built on a few threads of their own, one answer per
// thread at a time, instead of on whichever HTTP thread took the request.
//
// Why: building such an answer allocates and frees thousands of small blocks (JSON nodes, run
// copies). glibc keeps freed small blocks in a cache per thread (up to 7 per size class), and
// each cached block pins its page. Spread over every HTTP thread, a burst of readers left those
// pages behind on each of them, RSS stayed above the baseline, and malloc_trim could not give
// them back. On the builder threads the scratch stays in a few threads' caches and is reused by
// the next answer; the peak is one build per builder thread, whatever the number of readers.

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "web/http_server.h"

namespace loadwatch {

class AnswerBuilder {
 public:
  /// Builder threads, started here.
  static constexpr int kDefaultThreads = 2;

  explicit AnswerBuilder(int threads = kDefaultThreads);
  /// Builds what is queued, then joins the threads. Stop the server first: a handler that
  /// asks after this would wait forever.
  ~AnswerBuilder();
  AnswerBuilder(const AnswerBuilder&) = delete;
  AnswerBuilder& operator=(const AnswerBuilder&) = delete;

  /// Runs handler(req) on a builder thread, waits for it and returns its answer (or throws its
  /// exception). Called from a builder thread, it runs inline: a nested call never deadlocks.
  /// When the builders run out of work, the heap is trimmed at the next sample
  /// (util/heap_trim), so a burst of big answers is given back to the kernel. Thread-safe.
  HttpResponse build(const HttpHandler& handler, const HttpRequest& req);

  /// `handler`, built here on every request: what a route that builds a big answer registers.
  /// The builder must outlive the server.
  HttpHandler wrap(HttpHandler handler);

 private:
  void work();

  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> queue_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace loadwatch
