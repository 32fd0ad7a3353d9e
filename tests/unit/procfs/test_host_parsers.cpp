// Host-file parsers (stat, softirqs, meminfo, loadavg, file-nr) on string literals: real
// content from a 2-CPU kernel 6.18 machine, older and newer kernel layouts, and malformed input.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "procfs/file_nr.h"
#include "procfs/loadavg.h"
#include "procfs/meminfo.h"
#include "procfs/softirqs.h"
#include "procfs/stat.h"

using namespace loadwatch;

namespace {

// Captured on this machine (Linux 6.18, 2 vCPUs); the intr line is shortened.
constexpr std::string_view kStat =
    "cpu  8420 0 6660 41160 523 0 233 0 0 0\n"
    "cpu0 3438 0 2639 22303 23 0 83 0 0 0\n"
    "cpu1 4982 0 4021 18856 500 0 150 0 0 7\n"
    "intr 199840 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 1 1 9 0 0 0 0 51 38 0 16\n"
    "ctxt 412953\n"
    "btime 1796083095\n"
    "processes 7846\n"
    "procs_running 4\n"
    "procs_blocked 1\n"
    "softirq 149538 0 16443 4 5215 48396 0 7 38669 0 40804\n";

constexpr std::string_view kSoftirqs =
    "                    CPU0       CPU1       \n"
    "          HI:          0          0\n"
    "       TIMER:       7745       8705\n"
    "      NET_TX:          3          1\n"
    "      NET_RX:       2425       2790\n"
    "       BLOCK:          0      48396\n"
    "    IRQ_POLL:          0          0\n"
    "     TASKLET:          4          3\n"
    "       SCHED:      19580      19094\n"
    "     HRTIMER:          0          0\n"
    "         RCU:      18932      21899\n";

constexpr std::string_view kMeminfo =
    "MemTotal:       24683620 kB\n"
    "MemFree:        23847128 kB\n"
    "MemAvailable:   24290704 kB\n"
    "Buffers:           19316 kB\n"
    "Cached:           281484 kB\n"
    "SwapCached:            0 kB\n"
    "Active(anon):       1552 kB\n"
    "SwapTotal:       2097148 kB\n"
    "SwapFree:        2000000 kB\n"
    "VmallocTotal:   34359738367 kB\n"
    "HugePages_Total:       0\n"
    "Hugepagesize:       2048 kB\n"
    "DirectMap2M:    25137152 kB\n";

// Every prefix of `text` (a file cut short by a partial read) and a bounded amount of random
// garbage: each input must either parse into a value `valid(input, value)` accepts or throw
// std::runtime_error; another exception type escapes and fails the test. The whole text parses,
// the empty text is refused, and so is some of the garbage.
template <class Parse, class Valid>
void check_parses_or_throws(std::string_view text, Parse parse, Valid valid) {
  enum Outcome { kValid, kThrew, kInvalid };
  auto outcome = [&](std::string_view s) {
    try {
      return valid(s, parse(s)) ? kValid : kInvalid;
    } catch (const std::runtime_error&) {
      return kThrew;
    }
  };
  CHECK(outcome(text) == kValid);
  CHECK(outcome("") == kThrew);
  std::size_t invalid = 0, threw = 0;
  auto tally = [&](const std::string& s) {
    switch (outcome(s)) {
      case kInvalid:
        ++invalid;
        UNSCOPED_INFO("parsed into an invalid value: " << s);
        break;
      case kThrew:
        ++threw;
        break;
      case kValid:
        break;
    }
  };
  for (size_t n = 0; n <= text.size(); ++n) tally(std::string(text.substr(0, n)));
  std::mt19937 rng(12345);
  const std::string alphabet = std::string(text) + "\t\r\n:-+.e/\x01\xff" + std::string(1, '\0');
  for (int round = 0; round < 2000; ++round) {
    std::string s(rng() % 200, ' ');
    for (char& c : s) c = alphabet[rng() % alphabet.size()];
    tally(s);
  }
  CHECK(invalid == 0);
  CHECK(threw > 0);
}

}  // namespace

// ---------------------------------------------------------------- stat

TEST_CASE("parse_stat reads per-CPU ticks and skips the aggregate line", "[stat]") {
  const ProcStat st = parse_stat(kStat);
  REQUIRE(st.cpus.size() == 2);
  CHECK(st.cpus[0].cpu == 0);
  CHECK(st.cpus[0].modes == 8);
  CHECK(st.cpus[0].ticks == std::array<std::uint64_t, 8>{3438, 0, 2639, 22303, 23, 0, 83, 0});
  CHECK(st.cpus[1].cpu == 1);
  CHECK(st.cpus[1].ticks == std::array<std::uint64_t, 8>{4982, 0, 4021, 18856, 500, 0, 150, 0});
  CHECK(st.context_switches == 412953u);
  CHECK(st.forks == 7846u);
  CHECK(st.procs_running == 4u);
  CHECK(st.procs_blocked == 1u);
}

TEST_CASE("parse_stat exports modes in proc(5) order without guest columns", "[stat]") {
  REQUIRE(kCpuModes.size() == 8);
  CHECK(std::string(kCpuModes[0]) == "user");
  CHECK(std::string(kCpuModes[3]) == "idle");
  CHECK(std::string(kCpuModes[6]) == "softirq");
  CHECK(std::string(kCpuModes[7]) == "steal");
  // guest_nice 7 on cpu1 above is not part of any mode.
  const ProcStat st = parse_stat(kStat);
  for (auto t : st.cpus[1].ticks) CHECK(t != 7);
}

TEST_CASE("parse_stat handles old kernels with fewer columns and lines", "[stat]") {
  // Linux 2.4: four columns, no procs_running/procs_blocked.
  const ProcStat st = parse_stat(
      "cpu  10 20 30 40\n"
      "cpu0 10 20 30 40\n"
      "page 5741 1808\n"
      "ctxt 115315\n"
      "btime 769041601\n"
      "processes 86031\n");
  REQUIRE(st.cpus.size() == 1);
  CHECK(st.cpus[0].modes == 4);
  CHECK(st.cpus[0].ticks[3] == 40);
  CHECK(st.context_switches == 115315u);
  CHECK(st.forks == 86031u);
  CHECK_FALSE(st.procs_running.has_value());
  CHECK_FALSE(st.procs_blocked.has_value());

  // Linux 2.6.0–2.6.10: seven columns (no steal).
  const ProcStat seven = parse_stat("cpu0 1 2 3 4 5 6 7\n");
  CHECK(seven.cpus[0].modes == 7);
  CHECK(seven.cpus[0].ticks[6] == 7);
}

TEST_CASE("parse_stat ignores columns and lines a newer kernel may add", "[stat]") {
  const ProcStat st = parse_stat(
      "cpu0 1 2 3 4 5 6 7 8 9 10 11 12\n"
      "some_new_line 1 2 3\n"
      "ctxt 5 6\n");
  CHECK(st.cpus[0].modes == 8);
  CHECK(st.cpus[0].ticks == std::array<std::uint64_t, 8>{1, 2, 3, 4, 5, 6, 7, 8});
  CHECK(st.context_switches == 5u);
}

TEST_CASE("parse_stat keeps the CPU number of each line (offline CPUs are absent)", "[stat]") {
  const ProcStat st = parse_stat("cpu 2 2 2 2\ncpu0 1 1 1 1\ncpu3 1 1 1 1\n");
  REQUIRE(st.cpus.size() == 2);
  CHECK(st.cpus[0].cpu == 0);
  CHECK(st.cpus[1].cpu == 3);
}

TEST_CASE("parse_stat rejects malformed input", "[stat]") {
  CHECK_THROWS_AS(parse_stat(""), std::runtime_error);
  CHECK_THROWS_WITH(parse_stat("hello world\n"), Catch::Contains("no cpuN line"));
  CHECK_THROWS_WITH(parse_stat("cpu  1 2 3 4\n"), Catch::Contains("no cpuN line"));
  CHECK_THROWS_WITH(parse_stat("cpu0 1 2 3\n"), Catch::Contains("at least 4"));
  CHECK_THROWS_WITH(parse_stat("cpu0 1 x 3 4\n"),
                    Catch::Contains("cpu0") && Catch::Contains("\"x\""));
  CHECK_THROWS_AS(parse_stat("cpu0 1 -2 3 4\n"), std::runtime_error);
  CHECK_THROWS_AS(parse_stat("cpu0 1 2.5 3 4\n"), std::runtime_error);
  CHECK_THROWS_AS(parse_stat("cpu0 99999999999999999999 2 3 4\n"), std::runtime_error);
  CHECK_THROWS_AS(parse_stat("cpuX 1 2 3 4\n"), std::runtime_error);
  CHECK_THROWS_AS(parse_stat("cpu99999999999 1 2 3 4\n"), std::runtime_error);
  CHECK_THROWS_WITH(parse_stat("cpu0 1 2 3 4\ncpu0 1 2 3 4\n"), Catch::Contains("duplicate"));
  CHECK_THROWS_WITH(parse_stat("cpu0 1 2 3 4\nctxt abc\n"), Catch::Contains("ctxt"));
  CHECK_THROWS_AS(parse_stat("cpu0 1 2 3 4\nctxt\n"), std::runtime_error);
  CHECK_THROWS_AS(parse_stat("cpu0 1 2 3 4\nprocs_running 1e3\n"), std::runtime_error);
}

TEST_CASE("parse_stat survives truncation and garbage", "[stat]") {
  // A parsed stat has CPUs in strictly ascending order, each with 4 to 8 modes.
  check_parses_or_throws(kStat, parse_stat, [](std::string_view, const ProcStat& st) {
    bool ok = !st.cpus.empty();
    for (size_t i = 0; i < st.cpus.size(); ++i) {
      ok = ok && st.cpus[i].modes >= 4 && st.cpus[i].modes <= kCpuModes.size();
      ok = ok && (i == 0 || st.cpus[i - 1].cpu < st.cpus[i].cpu);
    }
    return ok;
  });
}

// ---------------------------------------------------------------- softirqs

TEST_CASE("parse_softirqs sums each type over CPUs in file order", "[softirqs]") {
  const auto rows = parse_softirqs(kSoftirqs);
  REQUIRE(rows.size() == 10);
  CHECK(rows[0].type == "HI");
  CHECK(rows[0].total == 0);
  CHECK(rows[1].type == "TIMER");
  CHECK(rows[1].total == 7745 + 8705);
  CHECK(rows[3].type == "NET_RX");
  CHECK(rows[3].total == 2425 + 2790);
  CHECK(rows[4].type == "BLOCK");
  CHECK(rows[4].total == 48396);
  CHECK(rows[9].type == "RCU");
  CHECK(rows[9].total == 18932 + 21899);
}

TEST_CASE("parse_softirqs takes any number of CPUs and unknown types", "[softirqs]") {
  const auto one = parse_softirqs("    CPU0\n  HI: 5\n NEW_TYPE: 7\n\n");
  REQUIRE(one.size() == 2);
  CHECK(one[1].type == "NEW_TYPE");
  CHECK(one[1].total == 7);

  // Per-CPU counts are unsigned int: four CPUs near 2^32 must not overflow the 64-bit sum.
  const auto big =
      parse_softirqs("CPU0 CPU1 CPU2 CPU3\nNET_RX: 4294967295 4294967295 4294967295 4294967295\n");
  CHECK(big[0].total == 4ull * 4294967295ull);
}

TEST_CASE("parse_softirqs rejects malformed input", "[softirqs]") {
  CHECK_THROWS_WITH(parse_softirqs(""), Catch::Contains("no CPU header"));
  CHECK_THROWS_WITH(parse_softirqs("\n\n"), Catch::Contains("no CPU header"));
  CHECK_THROWS_AS(parse_softirqs("garbage here\nHI: 1\n"), std::runtime_error);
  CHECK_THROWS_WITH(parse_softirqs("CPU0 CPU1\n"), Catch::Contains("no softirq rows"));
  CHECK_THROWS_WITH(parse_softirqs("CPU0 CPU1\nHI: 1\n"), Catch::Contains("1 counts"));
  CHECK_THROWS_AS(parse_softirqs("CPU0 CPU1\nHI: 1 2 3\n"), std::runtime_error);
  CHECK_THROWS_WITH(parse_softirqs("CPU0 CPU1\nHI: 1 x\n"), Catch::Contains("HI"));
  CHECK_THROWS_AS(parse_softirqs("CPU0 CPU1\nHI 1 2\n"), std::runtime_error);
  CHECK_THROWS_AS(parse_softirqs("CPU0 CPU1\n: 1 2\n"), std::runtime_error);
  CHECK_THROWS_WITH(parse_softirqs("CPU0\nHI: 1\nHI: 2\n"), Catch::Contains("duplicate"));
}

TEST_CASE("parse_softirqs survives truncation and garbage", "[softirqs]") {
  // Parsed softirqs have at least one row and unique, non-empty types without blanks.
  check_parses_or_throws(kSoftirqs, parse_softirqs,
                         [](std::string_view, const std::vector<SoftirqCount>& rows) {
                           std::set<std::string> types;
                           for (const auto& r : rows) {
                             if (r.type.empty() || r.type.find_first_of(" \t") != std::string::npos)
                               return false;
                             if (!types.insert(r.type).second) return false;
                           }
                           return !rows.empty();
                         });
}

// ---------------------------------------------------------------- meminfo

TEST_CASE("parse_meminfo converts kB to bytes", "[meminfo]") {
  const MemInfo m = parse_meminfo(kMeminfo);
  CHECK(m.total_bytes == 24683620ull * 1024);
  CHECK(m.available_bytes == 24290704ull * 1024);
  CHECK(m.swap_total_bytes == 2097148ull * 1024);
  CHECK(m.swap_free_bytes == 2000000ull * 1024);
}

TEST_CASE("parse_meminfo leaves fields an old kernel lacks empty", "[meminfo]") {
  // Linux < 3.14 has no MemAvailable.
  const MemInfo m = parse_meminfo("MemTotal: 1000 kB\nMemFree: 10 kB\nCached: 5 kB\n");
  CHECK(m.total_bytes == 1024000);
  CHECK_FALSE(m.available_bytes.has_value());
  CHECK_FALSE(m.swap_total_bytes.has_value());
}

TEST_CASE("parse_meminfo rejects malformed input", "[meminfo]") {
  CHECK_THROWS_WITH(parse_meminfo(""), Catch::Contains("no MemTotal"));
  CHECK_THROWS_WITH(parse_meminfo("MemFree: 10 kB\n"), Catch::Contains("no MemTotal"));
  CHECK_THROWS_WITH(parse_meminfo("garbage\n"), Catch::Contains("without ':'"));
  CHECK_THROWS_AS(parse_meminfo("MemTotal:\n"), std::runtime_error);
  CHECK_THROWS_WITH(parse_meminfo("MemTotal: abc kB\n"), Catch::Contains("MemTotal"));
  CHECK_THROWS_WITH(parse_meminfo("MemTotal: 10 MB\n"), Catch::Contains("unit"));
  CHECK_THROWS_AS(parse_meminfo("MemTotal: 10 kB extra\n"), std::runtime_error);
  CHECK_THROWS_WITH(parse_meminfo("MemTotal: 18014398509481984 kB\n"),
                    Catch::Contains("out of range"));
  CHECK_THROWS_AS(parse_meminfo("MemTotal: 10 kB\nMemAvailable: -1 kB\n"), std::runtime_error);
}

TEST_CASE("parse_meminfo survives truncation and garbage", "[meminfo]") {
  // Nothing parses without a MemTotal line.
  check_parses_or_throws(kMeminfo, parse_meminfo, [](std::string_view in, const MemInfo&) {
    return in.find("MemTotal:") != std::string_view::npos;
  });
}

// ---------------------------------------------------------------- loadavg

TEST_CASE("parse_loadavg reads the three averages", "[loadavg]") {
  const LoadAvg l = parse_loadavg("2.12 0.85 0.33 1/103 7863\n");
  CHECK(l.load1 == 2.12);
  CHECK(l.load5 == 0.85);
  CHECK(l.load15 == 0.33);
  const LoadAvg idle = parse_loadavg("0.00 0.00 0.00");
  CHECK(idle.load1 == 0.0);
  const LoadAvg busy = parse_loadavg("1024.50 300.25 12.00 900/1000 1\n");
  CHECK(busy.load1 == 1024.5);
}

TEST_CASE("parse_loadavg rejects malformed input", "[loadavg]") {
  CHECK_THROWS_WITH(parse_loadavg(""), Catch::Contains("load1"));
  CHECK_THROWS_WITH(parse_loadavg("0.10 0.20\n"), Catch::Contains("load15"));
  CHECK_THROWS_AS(parse_loadavg("x 0.2 0.3\n"), std::runtime_error);
  CHECK_THROWS_AS(parse_loadavg("-1.0 0.2 0.3\n"), std::runtime_error);
  CHECK_THROWS_AS(parse_loadavg("nan 0.2 0.3\n"), std::runtime_error);
  CHECK_THROWS_AS(parse_loadavg("inf 0.2 0.3\n"), std::runtime_error);
  CHECK_THROWS_AS(parse_loadavg("1e3 0.2 0.3\n"), std::runtime_error);
  CHECK_THROWS_AS(parse_loadavg("0,50 0.2 0.3\n"), std::runtime_error);  // no locale commas
}

TEST_CASE("parse_loadavg survives truncation and garbage", "[loadavg]") {
  // Parsed load averages are finite and not negative.
  check_parses_or_throws("2.12 0.85 0.33 1/103 7863\n", parse_loadavg,
                         [](std::string_view, const LoadAvg& l) {
                           for (double v : {l.load1, l.load5, l.load15}) {
                             if (!std::isfinite(v) || v < 0) return false;
                           }
                           return true;
                         });
}

// ---------------------------------------------------------------- file-nr

TEST_CASE("parse_file_nr reads allocated, unused and maximum", "[filefd]") {
  const FileNr f = parse_file_nr("572\t0\t2466160\n");
  CHECK(f.allocated == 572);
  CHECK(f.unused == 0);
  CHECK(f.maximum == 2466160);
  // fs.file-max is LONG_MAX on many distributions (systemd raises it).
  CHECK(parse_file_nr("1184\t0\t9223372036854775807\n").maximum == 9223372036854775807ull);
}

TEST_CASE("parse_file_nr rejects malformed input", "[filefd]") {
  CHECK_THROWS_WITH(parse_file_nr(""), Catch::Contains("allocated"));
  CHECK_THROWS_WITH(parse_file_nr("572\t0\n"), Catch::Contains("maximum"));
  CHECK_THROWS_AS(parse_file_nr("572 zero 100\n"), std::runtime_error);
  CHECK_THROWS_AS(parse_file_nr("-5 0 100\n"), std::runtime_error);
}

TEST_CASE("parse_file_nr survives truncation and garbage", "[filefd]") {
  // Any three unsigned numbers are a file-nr: the outcome checked is parse or throw.
  check_parses_or_throws("572\t0\t2466160\n", parse_file_nr,
                         [](std::string_view, const FileNr&) { return true; });
}
