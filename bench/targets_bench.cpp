// targets_bench — CPU time per sample of the targets collector.
//
// Runs the real collector (collectors/targets.cpp) in-process over /proc for the given
// targets, SAMPLES times, and prints the CPU time (user + system of this process) per
// sample, the first sample and WARMUP more apart (16 by default: the first opens the kept fds,
// and a full listing checks every process each sample while it is new to the registry, which
// on a fixture tree is its first 16 listings). Run it on processes older than 16 s: a real
// process is checked every sample while younger than that. With --floor it
// also runs bench/proc_floor over the same PIDs and prints the ratio; with --libproc2 it reads the
// same PIDs through procps_pids_select (chunks of 255) for comparison.
//
// With --one-read it also times, next to each sample, a listing of /proc and one pread of
// /proc/PID/schedstat on a kept fd for every member and, as often as the comm scan must look at
// it (every pass while younger than 16 s, then once every 16 passes), for every other listed
// process (OneRead below): the least a sample can cost when none of them ran. With
// --max-one-read-ratio R it exits 1 when the collector costs more than R times that (the
// guard on sleeping processes: run it with every member asleep and --samples 45 or more, so
// that their periodic re-reads are in the average).
//
// Usage:
//   targets_bench --target NAME=SELECTOR [--target ...] [--samples 20] [--interval-ms 100]
//                 [--warmup 16] [--procfs /proc] [--sysfs /sys] [--pids-out FILE] [--floor PATH]
//                 [--libproc2] [--one-read] [--max-one-read-ratio R]
// Output, one key=value line each (bench/run_core.py reads them):
//   targets_bench targets=2 processes=501 samples=20 cpu_us_per_sample=8123.4
//       cpu_us_first_sample=20345.1 fds_kept=2004
//   proc_floor pids=501 passes=20 cpu_us_per_pass=15012.3 ...      (with --floor)
//   ratio targets_over_floor=0.54                                   (with --floor)
//   libproc2 pids=501 passes=20 cpu_us_per_pass=25012.3 ratio_over_floor=1.67 (--libproc2)
//   one_read pids=620 passes=20 reads_per_pass=508.1 cpu_us_per_pass=1012.3  (--one-read)
//   ratio targets_over_one_read=1.12                                   (with --one-read)
#include <dirent.h>
#include <fcntl.h>
#include <libproc2/pids.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "bench/cpu_clock.h"
#include "collectors/collector.h"
#include "collectors/targets.h"
#include "config/config.h"
#include "config/options.h"
#include "metrics/metric_sink.h"
#include "process/process_registry.h"
#include "procfs/fs_root.h"

using namespace loadwatch;
using loadwatch::bench::process_cpu_seconds;

namespace {

[[noreturn]] void usage(const char* msg) {
  std::fprintf(stderr, "targets_bench: %s\n", msg);
  std::fprintf(stderr,
               "usage: targets_bench --target NAME=SELECTOR [--target ...] [--samples N] "
               "[--interval-ms MS] [--warmup N] [--procfs DIR] [--sysfs DIR] [--pids-out FILE] "
               "[--floor PATH] [--libproc2] [--one-read] [--max-one-read-ratio R]\n");
  std::exit(2);
}

// The same items the collector reads, through libproc2: stat, status, io (no fd count:
// libproc2 has no item for it, so stat() of PID/fd is added by hand).
double libproc2_pass_us(const std::vector<unsigned>& pids, int passes, const std::string& procfs) {
  enum pids_item items[] = {PIDS_ID_PID, PIDS_TICS_ALL, PIDS_VSIZE_BYTES,   PIDS_NLWP,
                            PIDS_VM_RSS, PIDS_VM_SWAP,  PIDS_IO_READ_BYTES, PIDS_IO_WRITE_BYTES};
  struct pids_info* info = nullptr;
  if (procps_pids_new(&info, items, sizeof items / sizeof items[0]) < 0) return -1;
  const double t0 = process_cpu_seconds();
  for (int p = 0; p < passes; ++p) {
    for (std::size_t i = 0; i < pids.size(); i += 255) {
      std::vector<unsigned> chunk(pids.begin() + static_cast<long>(i),
                                  pids.begin() + static_cast<long>(std::min(pids.size(), i + 255)));
      procps_pids_select(info, chunk.data(), static_cast<int>(chunk.size()), PIDS_SELECT_PID);
    }
    for (unsigned pid : pids) {
      struct stat st {};
      ::stat((procfs + "/" + std::to_string(pid) + "/fd").c_str(), &st);
    }
  }
  const double used = process_cpu_seconds() - t0;
  procps_pids_unref(&info);
  return used / passes * 1e6;
}

// The least a sample can cost when none of its processes ran: a listing of `procfs`, one pread
// of PID/schedstat on a kept fd for every member of the targets (the processes the sample
// reports), and one for every other listed process as often as a comm selector's scan must
// look at it by its documented bounds: every pass while it is younger than kScanYoungSeconds,
// then once every kScanRecheckSamples passes at a phase set by its PID. The fds follow the
// listing: a process that came is opened (its start time read) and one that went is closed
// between the timed parts, so that the floor reads the processes the sample covers now, not
// the ones of its first pass, and pays no open.
class OneRead {
 public:
  explicit OneRead(std::string procfs) : procfs_(std::move(procfs)) {}
  ~OneRead() {
    for (const Kept& k : kept_) ::close(k.fd);
  }
  OneRead(const OneRead&) = delete;
  OneRead& operator=(const OneRead&) = delete;

  /// Processes listed in the last pass, and preads in the last pass.
  std::size_t count() const { return kept_.size(); }
  std::size_t reads() const { return due_.size(); }

  /// CPU seconds of one pass over the sorted `members`.
  double pass(const std::vector<unsigned>& members) {
    ++passes_;
    const double t0 = process_cpu_seconds();
    listed_.clear();
    if (DIR* dir = ::opendir(procfs_.c_str())) {  // the listing a comm selector needs
      while (struct dirent* e = ::readdir(dir)) {
        if (e->d_name[0] >= '1' && e->d_name[0] <= '9') {
          listed_.push_back(static_cast<unsigned>(std::strtoul(e->d_name, nullptr, 10)));
        }
      }
      ::closedir(dir);
    }
    const double listing = process_cpu_seconds() - t0;
    follow_listing(members);
    char buf[128];
    const double t1 = process_cpu_seconds();
    for (int fd : due_) {
      if (::pread(fd, buf, sizeof buf, 0) < 0) continue;  // exited meanwhile
    }
    return listing + (process_cpu_seconds() - t1);
  }

 private:
  struct Kept {
    unsigned pid;
    int fd;
    unsigned long long young_until;  // clock ticks after boot (stat's starttime + 16 s)
  };

  // Ticks after boot, as stat's starttime counts them.
  static unsigned long long boot_ticks() {
    timespec ts{};
    clock_gettime(CLOCK_BOOTTIME, &ts);
    const auto hz = static_cast<unsigned long long>(::sysconf(_SC_CLK_TCK));
    return static_cast<unsigned long long>(ts.tv_sec) * hz +
           static_cast<unsigned long long>(ts.tv_nsec) * hz / 1000000000ull;
  }

  // starttime + kScanYoungSeconds of PID, 0 when unreadable (then never young).
  unsigned long long young_until(unsigned pid) const {
    std::ifstream in(procfs_ + "/" + std::to_string(pid) + "/stat");
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const auto paren = text.rfind(')');
    if (paren == std::string::npos) return 0;
    const char* p = text.c_str() + paren + 1;
    for (int field = 3; field < 22 && *p; ++field) {  // starttime is field 22 (proc(5))
      while (*p == ' ') ++p;
      while (*p && *p != ' ') ++p;
    }
    const unsigned long long start = std::strtoull(p, nullptr, 10);
    if (start == 0) return 0;
    return start + ProcessRegistry::kScanYoungSeconds *
                       static_cast<unsigned long long>(::sysconf(_SC_CLK_TCK));
  }

  // Untimed: keeps an fd for each listed PID and picks the ones this pass reads.
  void follow_listing(const std::vector<unsigned>& members) {
    std::sort(listed_.begin(), listed_.end());
    std::vector<Kept> next;
    next.reserve(listed_.size());
    auto old = kept_.begin();
    for (unsigned pid : listed_) {
      while (old != kept_.end() && old->pid < pid) ::close((old++)->fd);
      if (old != kept_.end() && old->pid == pid) {
        next.push_back(*old++);
        continue;
      }
      const std::string path = procfs_ + "/" + std::to_string(pid) + "/schedstat";
      const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
      if (fd >= 0) next.push_back({pid, fd, young_until(pid)});
    }
    for (; old != kept_.end(); ++old) ::close(old->fd);
    kept_ = std::move(next);
    due_.clear();
    const unsigned long long now = boot_ticks();
    for (const Kept& k : kept_) {
      if (std::binary_search(members.begin(), members.end(), k.pid) || now < k.young_until ||
          (passes_ + k.pid) % ProcessRegistry::kScanRecheckSamples == 0) {
        due_.push_back(k.fd);
      }
    }
  }

  std::string procfs_;
  std::vector<Kept> kept_;  // sorted by PID
  std::vector<unsigned> listed_;
  std::vector<int> due_;
  unsigned passes_ = 0;
};

std::vector<unsigned> member_pids(const std::vector<TargetState>& states) {
  std::vector<unsigned> pids;
  for (const auto& t : states) {
    for (pid_t p : t.pids) pids.push_back(static_cast<unsigned>(p));
  }
  std::sort(pids.begin(), pids.end());
  pids.erase(std::unique(pids.begin(), pids.end()), pids.end());
  return pids;
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  Config config;
  int samples = 20;
  int interval_ms = 100;
  // A full listing checks every process each sample while it is new to the registry (on a
  // fixture tree, its first 16 listings): the steady state starts after that.
  int warmup = static_cast<int>(ProcessRegistry::kScanYoungSamples);
  std::string pids_out, floor_bin;
  bool libproc2 = false;
  bool one_read = false;
  double max_one_read_ratio = 0;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) usage(("missing value after " + a).c_str());
      return argv[++i];
    };
    if (a == "--target") {
      std::string t = next();
      auto eq = t.find('=');
      if (eq == std::string::npos) usage("--target wants NAME=SELECTOR");
      try {
        config.targets.push_back({t.substr(0, eq), parse_selector(t.substr(eq + 1)), true});
      } catch (const std::exception& e) {
        usage(e.what());
      }
    } else if (a == "--samples") {
      samples = std::max(1, std::atoi(next().c_str()));
    } else if (a == "--warmup") {
      warmup = std::max(0, std::atoi(next().c_str()));
    } else if (a == "--interval-ms") {
      interval_ms = std::max(0, std::atoi(next().c_str()));
    } else if (a == "--procfs") {
      options.procfs = next();
    } else if (a == "--sysfs") {
      options.sysfs = next();
    } else if (a == "--pids-out") {
      pids_out = next();
    } else if (a == "--floor") {
      floor_bin = next();
    } else if (a == "--libproc2") {
      libproc2 = true;
    } else if (a == "--one-read") {
      one_read = true;
    } else if (a == "--max-one-read-ratio") {
      one_read = true;
      max_one_read_ratio = std::atof(next().c_str());
    } else {
      usage(("unknown argument " + a).c_str());
    }
  }
  if (config.targets.empty()) usage("no --target");

  FsRoot proc(options.procfs), sys(options.sysfs);
  auto collector = make_targets_collector(CollectorEnv{options, config, proc, sys, nullptr});

  auto sample = [&](std::vector<TargetState>* states) {
    MetricSink sink;
    SampleContext ctx{proc, sys, 0, {}};
    collector->collect(ctx, sink);
    if (states) *states = std::move(ctx.targets);
  };

  std::vector<TargetState> states;
  double t0 = process_cpu_seconds();
  sample(&states);
  const double first_us = (process_cpu_seconds() - t0) * 1e6;
  auto pause = [&] {
    if (interval_ms) std::this_thread::sleep_for(std::chrono::milliseconds(interval_ms));
  };
  for (int s = 0; s < warmup; ++s) {
    pause();
    sample(nullptr);
  }

  // The one-read floor is timed next to each sample, so that both see the same load on a
  // shared machine; which of the two comes first after the pause alternates (the first runs
  // with the caches the pause left, the second with the ones the first warmed).
  std::optional<OneRead> floor_reads;
  if (one_read) floor_reads.emplace(options.procfs);
  std::vector<unsigned> pids = member_pids(states);
  double total = 0, one_read_total = 0;
  std::size_t floor_reads_total = 0;
  for (int s = 0; s < samples; ++s) {
    pause();
    const bool floor_first = floor_reads && s % 2 == 1;
    if (floor_first) one_read_total += floor_reads->pass(pids);
    t0 = process_cpu_seconds();
    sample(&states);
    total += process_cpu_seconds() - t0;
    if (floor_reads) pids = member_pids(states);
    if (floor_reads && !floor_first) one_read_total += floor_reads->pass(pids);
    if (floor_reads) floor_reads_total += floor_reads->reads();
  }
  const double per_sample_us = total / samples * 1e6;
  pids = member_pids(states);

  std::printf(
      "targets_bench targets=%zu processes=%zu samples=%d cpu_us_per_sample=%.1f "
      "cpu_us_first_sample=%.1f\n",
      states.size(), pids.size(), samples, per_sample_us, first_us);
  for (const auto& t : states) {
    std::printf("target name=%s selector=%s up=%d processes=%zu\n", t.name.c_str(),
                t.selector.c_str(), t.up ? 1 : 0, t.pids.size());
  }
  std::fflush(stdout);

  if (!pids_out.empty()) {
    std::ofstream out(pids_out);
    for (unsigned p : pids) out << p << "\n";
  }

  double floor_us = -1;
  if (!floor_bin.empty()) {
    std::string list = "/tmp/targets_bench." + std::to_string(::getpid()) + ".pids";
    {
      std::ofstream out(list);
      for (unsigned p : pids) out << p << "\n";
    }
    std::string cmd =
        floor_bin + " -n " + std::to_string(samples) + " -r " + options.procfs + " < " + list;
    if (FILE* f = ::popen(cmd.c_str(), "r")) {
      char line[512];
      while (std::fgets(line, sizeof line, f)) {
        std::fputs(line, stdout);
        if (const char* p = std::strstr(line, "cpu_us_per_pass=")) floor_us = std::atof(p + 16);
      }
      ::pclose(f);
    }
    ::unlink(list.c_str());
    if (floor_us > 0) std::printf("ratio targets_over_floor=%.2f\n", per_sample_us / floor_us);
  }
  if (libproc2) {
    const double us = libproc2_pass_us(pids, samples, options.procfs);
    std::printf("libproc2 pids=%zu passes=%d cpu_us_per_pass=%.1f", pids.size(), samples, us);
    if (floor_us > 0) std::printf(" ratio_over_floor=%.2f", us / floor_us);
    std::printf("\n");
  }
  if (one_read) {
    const double us = one_read_total / samples * 1e6;
    std::printf("one_read pids=%zu passes=%d reads_per_pass=%.1f cpu_us_per_pass=%.1f\n",
                floor_reads->count(), samples, static_cast<double>(floor_reads_total) / samples,
                us);
    const double ratio = us > 0 ? per_sample_us / us : 0;
    std::printf("ratio targets_over_one_read=%.2f\n", ratio);
    if (max_one_read_ratio > 0 && !(ratio <= max_one_read_ratio)) {
      std::printf("FAIL: over %.2f times one read per process\n", max_one_read_ratio);
      return 1;
    }
  }
  return 0;
}
