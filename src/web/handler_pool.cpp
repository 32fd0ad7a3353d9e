#include "web/handler_pool.h"

#include <utility>

#include "util/thread_name.h"

namespace loadwatch {

HandlerPool::HandlerPool(int threads, int slots, int slots_per_address, const char* thread_name)
    : slots_(slots), slots_per_address_(slots_per_address) {
  for (int i = 0; i < threads; ++i) {
    threads_.emplace_back([this, thread_name] {
      name_this_thread(thread_name);
      work();
    });
  }
}

HandlerPool::~HandlerPool() { stop(); }

HandlerPool::Slot HandlerPool::take_slot(const std::string& address) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (in_use_ >= slots_) return Slot::full;
  int& mine = slots_by_address_[address];
  if (mine >= slots_per_address_) return Slot::address_full;
  ++mine;
  ++in_use_;
  return Slot::taken;
}

void HandlerPool::give_back_slot(const std::string& address) {
  std::lock_guard<std::mutex> lock(mutex_);
  --in_use_;
  auto it = slots_by_address_.find(address);
  if (it != slots_by_address_.end() && --it->second <= 0) slots_by_address_.erase(it);
}

int HandlerPool::slots_in_use() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return in_use_;
}

void HandlerPool::submit(const std::string& address, std::function<void()> task) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_) return;  // the task is destroyed on return, unrun
    auto& queue = queues_[address];
    if (queue.empty()) turns_.push_back(address);
    queue.push_back(std::move(task));
  }
  wake_.notify_one();
}

void HandlerPool::work() {
  for (;;) {
    std::function<void()> task;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [this] { return stopping_ || !turns_.empty(); });
      if (stopping_) return;
      std::string address = std::move(turns_.front());
      turns_.pop_front();
      auto it = queues_.find(address);
      task = std::move(it->second.front());
      it->second.pop_front();
      if (it->second.empty()) {
        queues_.erase(it);
      } else {
        turns_.push_back(std::move(address));  // its next task waits for the others' turns
      }
    }
    task();
  }
}

void HandlerPool::stop() {
  decltype(queues_) dropped;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
    dropped.swap(queues_);
    turns_.clear();
  }
  wake_.notify_all();
  for (auto& t : threads_) {
    if (t.joinable()) t.join();
  }
  threads_.clear();
}

}  // namespace loadwatch
