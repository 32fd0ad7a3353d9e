// The HTTP connection table: the per-address share and the total, and which connection makes
// room (the oldest that only waits for a head: of the same address, else of the biggest holder).
#include <catch2/catch.hpp>
#include <memory>
#include <string>
#include <vector>

#include "web/connection_table.h"

using namespace loadwatch;
using Admission = ConnectionTable::Admission;

namespace {

struct Conn : ConnectionTable::Member {
  int evictions = 0;
  void evict() override { ++evictions; }
};

struct Table {
  ConnectionTable table;
  std::vector<std::shared_ptr<Conn>> conns;
  std::uint64_t next = 0;
  Table(std::size_t total, std::size_t per) : table(total, per) {}
  Admission open(const std::string& address, bool waiting = true) {
    auto c = std::make_shared<Conn>();
    c->waiting = waiting;
    conns.push_back(c);
    return table.admit(address, next++, c);
  }
};

}  // namespace

TEST_CASE("connection table: an address at its share crowds only itself") {
  Table t(100, 3);
  for (int i = 0; i < 3; ++i) CHECK(t.open("10.0.0.1") == Admission::admitted);
  CHECK(t.open("10.0.0.2") == Admission::admitted);
  CHECK(t.open("10.0.0.1") == Admission::admitted_evicting_own);
  CHECK(t.conns[0]->evictions == 1);  // the oldest of its own
  CHECK(t.conns[3]->evictions == 0);  // never another address's
  CHECK(t.table.size() == 4);
  // Busy connections (a request in progress) are not closed: the new one is.
  for (auto& c : t.conns) c->waiting = false;
  CHECK(t.open("10.0.0.1") == Admission::refused_address);
  CHECK(t.table.size() == 4);
  t.table.leave("10.0.0.1", 1);  // a connection closes: room again
  CHECK(t.open("10.0.0.1") == Admission::admitted);
  t.table.leave("10.0.0.1", 0);  // already evicted: nothing happens
  CHECK(t.table.size() == 4);
}

TEST_CASE("connection table: when full, the biggest holder's oldest waiting one goes") {
  Table t(6, 4);
  for (int i = 0; i < 4; ++i) CHECK(t.open("10.0.0.9") == Admission::admitted);
  CHECK(t.open("10.0.0.2") == Admission::admitted);
  CHECK(t.open("10.0.0.3") == Admission::admitted);
  CHECK(t.open("127.0.0.1") == Admission::admitted_evicting_other);
  CHECK(t.conns[0]->evictions == 1);
  CHECK(t.conns[4]->evictions == 0);
  CHECK(t.table.size() == 6);
  for (auto& c : t.conns) c->waiting = false;
  CHECK(t.open("127.0.0.1") == Admission::refused_full);
  CHECK(t.table.size() == 6);
}
