// CounterCarry: loadwatch counters never go down when an upstream counter resets.
#include <catch2/catch.hpp>
#include <cmath>

#include "sources/counter_carry.h"

using loadwatch::CounterCarry;

TEST_CASE("a decrease adds the last value to the offset", "[carry]") {
  CounterCarry c;
  CHECK(c.update("a", 5) == 5);
  CHECK(c.update("a", 9) == 9);
  CHECK(c.update("a", 0) == 9);
  CHECK(c.update("a", 4) == 13);
  CHECK(c.update("a", 2) == 15);  // second reset
  CHECK(c.update("a", 2) == 15);  // unchanged is not a reset
  CHECK(c.update("b", 1) == 1);   // series are independent
  CHECK(c.update("a", std::nan("")) == 15);
  CHECK(c.update("a", -3) == 15);
}

TEST_CASE("reset_all carries series that already grew past their last value", "[carry]") {
  CounterCarry c;
  c.update("a", 10);
  c.update("b", 10);
  c.reset_all();
  CHECK(c.update("a", 12) == 22);  // grew past 10 before we looked: still a new run
  CHECK(c.update("b", 3) == 13);
  CHECK(c.update("b", 5) == 15);
}

TEST_CASE("a series absent from a scrape restarts when it comes back", "[carry]") {
  CounterCarry c;
  c.update("a", 10);
  c.update("b", 7);
  c.end_scrape(100);
  c.update("b", 8);  // a is absent from this scrape
  c.end_scrape(100);
  CHECK(c.update("a", 12) == 22);
  CHECK(c.update("b", 9) == 9);
  c.end_scrape(100);
  CHECK(c.update("a", 13) == 23);
}

TEST_CASE("end_scrape forgets absent series beyond the bound", "[carry]") {
  CounterCarry c;
  for (int i = 0; i < 10; ++i) c.update("s" + std::to_string(i), i);
  c.end_scrape(5);
  CHECK(c.size() == 10);  // all seen in this scrape
  c.update("s1", 1);
  c.end_scrape(5);
  CHECK(c.size() == 1);
  c.end_scrape(5);
  CHECK(c.size() == 1);  // within the bound: kept, marked absent
}

TEST_CASE("a decrease within the tolerance is float noise, not a reset", "[carry]") {
  CounterCarry c;
  CHECK(c.update("sum", 1.0000000000001) == 1.0000000000001);
  CHECK(c.update("sum", 1.0, 1e-9) == 1.0000000000001);
  CHECK(c.update("sum", 0.5, 1e-9) == 1.5000000000001);  // a real drop still is
}
