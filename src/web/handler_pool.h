#pragma once
// The threads that run request handlers (and password checks) away from the I/O threads, fair
// to every client address: a bounded number of handler slots with a share per address, and
// queued work served round-robin across addresses, so one busy address cannot make the others
// wait behind all of its requests.

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

namespace loadwatch {

class HandlerPool {
 public:
  enum class Slot { taken, full, address_full };

  /// `threads` run the work; `slots` handlers may be queued or running at once in all,
  /// `slots_per_address` of them for one address.
  /// `thread_name`: what its threads are called (util/thread_name.h).
  HandlerPool(int threads, int slots, int slots_per_address,
              const char* thread_name = "lw-handler");
  ~HandlerPool();
  HandlerPool(const HandlerPool&) = delete;
  HandlerPool& operator=(const HandlerPool&) = delete;

  /// Takes a handler slot for `address`, or says why not (nothing is taken then).
  Slot take_slot(const std::string& address);
  void give_back_slot(const std::string& address);
  int slots_in_use() const;

  /// Queues `task` behind the earlier work of the same address; addresses take turns.
  void submit(const std::string& address, std::function<void()> task);
  /// Drops the queued work (destroying its tasks on this thread), waits for the running work
  /// and joins the threads. Idempotent.
  void stop();

 private:
  void work();

  const int slots_;
  const int slots_per_address_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  int in_use_ = 0;
  std::unordered_map<std::string, int> slots_by_address_;
  std::unordered_map<std::string, std::deque<std::function<void()>>> queues_;
  std::deque<std::string> turns_;  // addresses with queued work, next first
  std::vector<std::thread> threads_;
};

}  // namespace loadwatch
