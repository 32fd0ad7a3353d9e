#include <sys/resource.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <condition_variable>
#include <future>
#include <mutex>
#include <thread>

#include "../../lib/eventually.h"
// The answer builder: reads admitted while a builder is free or one waits, built answers
// counted until sent, builder threads at a lower priority.
#include "routes/answer_builder.h"

using namespace loadwatch;
using loadwatch::test::eventually;

namespace {

HttpRequest request(const char* method) {
  HttpRequest r;
  r.method = method;
  r.path = "/api/v1/history";
  return r;
}

/// A handler that blocks until released, counting the calls that entered it.
struct Gate {
  std::mutex mutex;
  std::condition_variable cv;
  bool open = false;
  int entered = 0;

  HttpHandler handler() {
    return [this](const HttpRequest&) {
      std::unique_lock lock(mutex);
      ++entered;
      cv.notify_all();
      cv.wait(lock, [this] { return open; });
      HttpResponse r;
      r.body = "answer";
      return r;
    };
  }
  int inside() {
    std::lock_guard lock(mutex);
    return entered;
  }
  void release() {
    {
      std::lock_guard lock(mutex);
      open = true;
    }
    cv.notify_all();
  }
};

}  // namespace

TEST_CASE("reads past the builders and one waiting get 503 at once; writes still queue") {
  AnswerBuilder builder(1);
  Gate gate;
  HttpHandler h = builder.wrap(gate.handler());
  auto building = std::async(std::launch::async, [&] { return h(request("GET")); });
  REQUIRE(eventually([&] { return gate.inside() == 1; }));
  // Two more reads: one is admitted to wait, the other refused without waiting for either.
  auto a = std::async(std::launch::async, [&] { return h(request("GET")); });
  auto b = std::async(std::launch::async, [&] { return h(request("GET")); });
  auto ready = [](std::future<HttpResponse>& f) {
    return f.wait_for(std::chrono::milliseconds(0)) == std::future_status::ready;
  };
  const bool one_refused = eventually([&] { return ready(a) || ready(b); });
  if (!one_refused) gate.release();  // so the futures can end
  REQUIRE(one_refused);
  CHECK_FALSE((ready(a) && ready(b)));
  auto& refused_future = ready(a) ? a : b;
  auto& waiting = ready(a) ? b : a;
  HttpResponse refused = refused_future.get();
  CHECK(refused.status == 503);
  CHECK_THAT(refused.body, Catch::Contains("busy with other reads"));
  bool retry_after = false;
  for (const auto& [k, v] : refused.headers) retry_after |= k == "Retry-After" && v == "1";
  CHECK(retry_after);
  auto write = std::async(std::launch::async, [&] { return h(request("POST")); });
  CHECK(write.wait_for(std::chrono::milliseconds(100)) == std::future_status::timeout);
  gate.release();
  CHECK(building.get().status == 200);
  CHECK(waiting.get().status == 200);
  CHECK(write.get().status == 200);
  CHECK(h(request("GET")).status == 200);  // the admissions were given back
}

TEST_CASE("built answers count until the server frees them; past the cap reads get 503") {
  AnswerBuilder builder(2, 10000);
  HttpHandler big = builder.wrap([](const HttpRequest&) {
    HttpResponse r;
    r.body.assign(20000, 'x');
    return r;
  });
  HttpResponse first = big(request("GET"));
  REQUIRE(first.status == 200);
  REQUIRE(first.shared_body);
  CHECK(first.shared_body->size() == 20000);
  CHECK(first.body.empty());
  CHECK(builder.answer_bytes() >= 20000);
  HttpResponse second = big(request("GET"));
  CHECK(second.status == 503);
  CHECK_THAT(second.body, Catch::Contains("answers being sent hold more"));
  first = HttpResponse();  // the server wrote it and let it go
  CHECK(builder.answer_bytes() == 0);
  CHECK(big(request("GET")).status == 200);
}

TEST_CASE("the builder threads run at a lower priority than the caller") {
  AnswerBuilder builder(1);
  const int mine = getpriority(PRIO_PROCESS, static_cast<id_t>(gettid()));
  HttpHandler h = builder.wrap([](const HttpRequest&) {
    HttpResponse r;
    r.body = std::to_string(getpriority(PRIO_PROCESS, static_cast<id_t>(gettid())));
    return r;
  });
  HttpResponse r = h(request("GET"));
  CHECK(std::stoi(*r.shared_body) == std::min(mine + AnswerBuilder::kNiceness, 19));
}
