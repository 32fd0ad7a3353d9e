// The textfile collector's file reading: a *.prom file swapped for a FIFO, a device or a
// symlink is skipped with a scrape error, at once, and the other files are still exported.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include "collectors/textfile.h"
#include "tests/lib/temp_dir.h"

using namespace loadwatch;
namespace fs = std::filesystem;
using loadwatch::test::TempDir;

namespace {

/// One collect(): the names of the families exported and the scrape error gauge.
struct Result {
  std::set<std::string> families;
  double scrape_error = -1;
};

Result collect_once(Collector& c, const FsRoot& root) {
  SampleContext ctx{root, root, 0, {}};
  MetricSink sink;
  c.collect(ctx, sink);
  Result r;
  for (const auto& f : sink.families()) {
    r.families.insert(f.name);
    if (f.name == "loadwatch_textfile_scrape_error") r.scrape_error = f.metric.at(0).gauge.value;
  }
  return r;
}

}  // namespace

TEST_CASE("textfile: FIFOs, devices and symlinks are skipped at once, the rest exported") {
  TempDir d;
  std::ofstream(d / "good.prom") << "# TYPE good gauge\ngood 1\n";
  REQUIRE(::mkfifo((d / "fifo.prom").c_str(), 0600) == 0);
  // A writer that holds the FIFO open and never writes: a blocking read would wait forever.
  int writer = ::open((d / "fifo.prom").c_str(), O_RDWR | O_NONBLOCK);
  REQUIRE(writer >= 0);
  fs::create_symlink("/dev/zero", d / "zero.prom");
  std::ofstream(d / "elsewhere.txt") << "# TYPE linked gauge\nlinked 1\n";
  fs::create_symlink(d / "elsewhere.txt", d / "linked.prom");

  Options options;
  options.textfile_directory = d.path.string();
  Config config;
  FsRoot root("/nonexistent");
  CollectorEnv env{options, config, root, root, nullptr};
  auto c = make_textfile_collector(env);
  auto start = std::chrono::steady_clock::now();
  Result r = collect_once(*c, root);
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(1));
  CHECK(r.families.count("good") == 1);
  CHECK(r.families.count("linked") == 0);
  CHECK(r.scrape_error == 1);

  // A good file swapped for a FIFO (rename over it) between two samples.
  ::close(writer);
  fs::remove(d / "zero.prom");
  fs::remove(d / "linked.prom");
  fs::rename(d / "fifo.prom", d / "good.prom");
  r = collect_once(*c, root);
  CHECK(r.families.count("good") == 0);
  CHECK(r.scrape_error == 1);
  fs::remove(d / "good.prom");
  std::ofstream(d / "good.prom") << "# TYPE good gauge\ngood 2\n";
  r = collect_once(*c, root);
  CHECK(r.families.count("good") == 1);
  CHECK(r.scrape_error == 0);
}
