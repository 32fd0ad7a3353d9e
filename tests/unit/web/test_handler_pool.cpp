// The HTTP handler pool: handler slots in all and per address, and queued work taken in turns
// by address, so one address's backlog does not delay another's request.
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "web/handler_pool.h"

using namespace loadwatch;
using Slot = HandlerPool::Slot;

TEST_CASE("handler pool: slots in all and per address") {
  HandlerPool pool(1, 4, 2);
  CHECK(pool.take_slot("a") == Slot::taken);
  CHECK(pool.take_slot("a") == Slot::taken);
  CHECK(pool.take_slot("a") == Slot::address_full);
  CHECK(pool.take_slot("b") == Slot::taken);
  CHECK(pool.take_slot("c") == Slot::taken);
  CHECK(pool.take_slot("d") == Slot::full);
  CHECK(pool.slots_in_use() == 4);
  pool.give_back_slot("a");
  CHECK(pool.take_slot("d") == Slot::taken);
  CHECK(pool.take_slot("a") == Slot::full);
}

TEST_CASE("handler pool: addresses take turns") {
  HandlerPool pool(1, 100, 100);
  std::mutex m;
  std::condition_variable cv;
  bool release = false;
  std::atomic<bool> started{false};
  std::vector<std::string> order;
  pool.submit("flood", [&] {
    started = true;
    std::unique_lock<std::mutex> lock(m);
    cv.wait_for(lock, std::chrono::seconds(10), [&] { return release; });
    order.push_back("flood");
  });
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!started && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  REQUIRE(started);
  for (int i = 0; i < 9; ++i) {
    pool.submit("flood", [&] {
      std::lock_guard<std::mutex> lock(m);
      order.push_back("flood");
    });
  }
  pool.submit("scrape", [&] {
    std::lock_guard<std::mutex> lock(m);
    order.push_back("scrape");
  });
  {
    std::lock_guard<std::mutex> lock(m);
    release = true;
  }
  cv.notify_all();
  deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(m);
      if (order.size() == 11 || std::chrono::steady_clock::now() > deadline) break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  pool.stop();
  REQUIRE(order.size() == 11);
  CHECK(order[1] == "flood");   // the flood's next task had its turn first...
  CHECK(order[2] == "scrape");  // ...then the scrape, not after the other eight
}
