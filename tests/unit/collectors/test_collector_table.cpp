// The collector table and the core's list of collector names (which config validation uses
// without linking the collectors) name the same collectors in the same order.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "collectors/collector.h"
#include "config/collector_names.h"
#include "config/config.h"

using namespace loadwatch;

TEST_CASE("collector_table() and kCollectorNames agree, name by name and in order") {
  std::vector<std::string> table, names;
  for (const auto& spec : collector_table()) table.emplace_back(spec.name);
  for (auto n : kCollectorNames) names.emplace_back(n);
  CHECK(table == names);
}

TEST_CASE("a config accepts every collector of the table and refuses another name") {
  for (const auto& spec : collector_table()) {
    INFO(spec.name);
    const Config c = parse_config(
        std::string("allow_empty: true\ncollectors:\n  ") + spec.name + ": false\n", "t");
    CHECK(c.collectors.at(spec.name) == false);
  }
  CHECK_THROWS_AS(parse_config("allow_empty: true\ncollectors:\n  nosuch: true\n", "t"),
                  ConfigError);
  CHECK_FALSE(is_collector_name(""));
  CHECK_FALSE(is_collector_name("Stat"));
}
