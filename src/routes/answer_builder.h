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
//
// Reads are admitted while a builder is free or one read waits (kWaitingReads), and while built
// answers still being sent hold less than kMaxAnswerBytes; past either, a read is answered 503
// at once. A read waiting for a builder holds a handler thread (one of four), and 20 readers
// held them all: /metrics waited behind the builds. The builders run at a lower priority
// (kNiceness), so a burst of answers takes the CPU the sampler leaves, not the sampler's. Writes
// (the run API's POSTs) are authorised and rare: they always wait their turn.

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "web/http_server.h"

namespace loadwatch {

class AnswerBuilder {
 public:
  /// Builder threads, started here.
  static constexpr int kDefaultThreads = 2;
  /// Bytes of built read answers held at once, from their build until their last byte is
  /// written (a slow reader holds its answer that long). The check comes before a build, so
  /// the most held is this plus one answer per builder thread.
  static constexpr std::size_t kMaxAnswerBytes = 64u << 20;
  /// Reads that may wait for a builder, besides one building on each.
  static constexpr int kWaitingReads = 1;
  /// Niceness the builder threads add to the daemon's.
  static constexpr int kNiceness = 10;

  explicit AnswerBuilder(int threads = kDefaultThreads,
                         std::size_t max_answer_bytes = kMaxAnswerBytes);
  /// Builds what is queued, then joins the threads. Stop the server first: a handler that
  /// asks after this would wait forever.
  ~AnswerBuilder();
  AnswerBuilder(const AnswerBuilder&) = delete;
  AnswerBuilder& operator=(const AnswerBuilder&) = delete;

  /// Runs handler(req) on a builder thread, waits for it and returns its answer (or throws its
  /// exception); a read (GET, HEAD) past kWaitingReads, or while kMaxAnswerBytes are held,
  /// gets a 503 with Retry-After instead. The answer's body is sent from a shared copy that
  /// counts against kMaxAnswerBytes until it is freed. Called from a builder thread, it runs
  /// inline: a nested call never deadlocks.
  /// When the builders run out of work, the heap is trimmed at the next sample
  /// (util/heap_trim), so a burst of big answers is given back to the kernel. Thread-safe.
  HttpResponse build(const HttpHandler& handler, const HttpRequest& req);

  /// `handler`, built here on every request: what a route that builds a big answer registers.
  /// The builder must outlive the server.
  HttpHandler wrap(HttpHandler handler);

  /// Bytes of built answers held now (built, not yet sent); any thread.
  std::size_t answer_bytes() const { return answer_bytes_->load(); }

 private:
  void work();
  HttpResponse run(const HttpHandler& handler, const HttpRequest& req);

  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> queue_;
  bool stopping_ = false;
  int reads_ = 0;  // reads admitted and not answered yet
  const std::size_t max_answer_bytes_;
  /// Shared with the answers' bodies, which may outlive the builder in a closing connection.
  std::shared_ptr<std::atomic<std::size_t>> answer_bytes_ =
      std::make_shared<std::atomic<std::size_t>>(0);
  std::vector<std::thread> threads_;
};

}  // namespace loadwatch
