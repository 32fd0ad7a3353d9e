// node_exporter's textfile collector, re-done: batch jobs (here: wrk through
// scripts/wrk/loadwatch.lua) drop `*.prom` files in text exposition format into a directory,
// writing a temporary file and renaming it so a reader never sees half a file. As in
// node_exporter: a file that fails to parse, carries client-side timestamps or redefines a
// family with another type is skipped whole and sets loadwatch_textfile_scrape_error to 1;
// the other files are still exported; a missing directory is a scrape error, not a failure.
#include "collectors/textfile.h"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "collectors/textfile_content.h"
#include "metrics/series_guard.h"
#include "procfs/fs_root.h"
#include "runs/wrk_summary.h"
#include "sources/prom_text_parser.h"
#include "util/bounded_file.h"
#include "util/heap_trim.h"
#include "util/log.h"

namespace loadwatch {

namespace {

constexpr std::size_t kMaxFileBytes = 16 << 20;
constexpr std::size_t kMaxFiles = 1000;

struct CachedFile {
  struct timespec mtime {};
  off_t size = -1;
  ino_t inode = 0;
  std::vector<prometheus::MetricFamily> families;
  std::string error;           // why the file is skipped; empty when it is fine
  std::size_t series = 0;      // kept
  DropCounts dropped;          // not kept, noted at each sample
  bool truncated = false;      // the directory's series budget cut it
  std::size_t budget = 0;      // the budget it was parsed with
  std::size_t text_bytes = 0;  // of the text parsed, freed with the entry
};

bool ends_with(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

class TextfileCollector : public Collector {
 public:
  TextfileCollector(std::string dir, RunObserver* runs) : dir_(std::move(dir)), runs_(runs) {}

  void collect(SampleContext&, MetricSink& out) override {
    if (dir_.empty()) return;
    bool error = false;
    std::vector<std::string> names;
    if (DIR* d = opendir(dir_.c_str())) {
      while (dirent* e = readdir(d)) {
        std::string name = e->d_name;
        if (ends_with(name, ".prom") && names.size() < kMaxFiles) names.push_back(name);
      }
      closedir(d);
    } else {
      warn_once("cannot read textfile directory " + dir_);
      error = true;
    }
    std::sort(names.begin(), names.end());  // stable merge order

    // Types already in the sample (other collectors, earlier files): a file may not change one.
    std::unordered_map<std::string, prometheus::MetricType> types;
    for (const auto& f : out.families()) types.emplace(f.name, f.type);

    std::map<std::string, CachedFile> next;
    std::vector<std::pair<prometheus::MetricFamily, std::string>> accepted;  // family, file
    std::map<std::string, std::string> given_help;                           // family -> HELP
    // Series of all files together are capped: files in name order take what is left.
    std::size_t budget = kMaxTextfileSeries;
    for (const auto& name : names) {
      CachedFile file = load(name, budget);
      if (file.size < 0) {  // vanished between readdir and stat: a normal race
        continue;
      }
      if (file.error.empty()) {
        if (file.series > budget) {  // an earlier file grew: this one gets less
          count_drop(file.dropped, drop_reason::kMaxSeries,
                     double(cap_series(file.families, budget)));
          file.series = budget;
          file.truncated = true;
        }
        budget -= file.series;
      }
      std::string problem = file.error;
      if (problem.empty()) {
        for (const auto& f : file.families) {
          auto it = types.find(f.name);
          if (it != types.end() && it->second != f.type) {
            problem = "family " + f.name + " already exported with another type";
            break;
          }
        }
      }
      if (problem.empty()) {
        for (const auto& f : file.families) types.emplace(f.name, f.type);
      }
      if (!problem.empty()) {
        warn_once(dir_ + "/" + name + ": " + problem);
        error = true;
      } else {
        for (const auto& f : file.families) {
          if (!f.help.empty()) given_help.emplace(f.name, f.help);
          accepted.emplace_back(f, name);
        }
        for (const auto& [reason, n] : file.dropped) {
          out.note_dropped(reason, n);
          warn_once(dir_ + "/" + name + ": " + std::to_string(static_cast<long long>(n)) +
                    " series not exported (reason " + reason + ", see docs/limits.md)");
        }
        double mtime = static_cast<double>(file.mtime.tv_sec) + file.mtime.tv_nsec / 1e9;
        out.gauge("loadwatch_textfile_mtime_seconds", "Unix mtime of each textfile read.",
                  {{"file", name}}, mtime);
      }
      next.emplace(name, std::move(file));
    }
    for (auto& [family, file_name] : accepted) {
      if (family.help.empty()) {
        // A family merged from several files takes the HELP one of them gives; with none, a
        // generated one, as node_exporter does (`promtool check metrics` wants a HELP).
        auto help = given_help.find(family.name);
        family.help =
            help != given_help.end() ? help->second : "Metric read from " + dir_ + "/" + file_name;
      }
      out.foreign(std::move(family));
    }
    std::size_t freed = 0;
    for (const auto& [name, old] : cache_) {
      auto it = next.find(name);
      if (it == next.end() || it->second.text_bytes != old.text_bytes ||
          it->second.mtime.tv_nsec != old.mtime.tv_nsec)
        freed += old.text_bytes;
    }
    cache_ = std::move(next);
    note_heap_freed(freed);
    out.gauge("loadwatch_textfile_scrape_error",
              "1 if the textfile directory or any *.prom file in it could not be read or parsed.",
              {}, error ? 1 : 0);
  }

 private:
  CachedFile load(const std::string& name, std::size_t budget) {
    CachedFile file;
    std::string path = dir_ + "/" + name;
    // Opened first, then checked on the open fd: not a symlink, a regular file, at most the
    // cap. A file swapped for a FIFO, a device or a link to /dev/zero between a check and
    // the read can neither stall nor flood the sampler.
    BoundedFile in(path, Symlinks::Refuse);
    if (in.error() == ENOENT) return file;  // size stays -1: vanished
    if (in.error() != 0) {
      file.size = 0;
      file.error = in.describe(in.error());
      return file;
    }
    const struct stat& st = in.status();
    auto it = cache_.find(name);
    if (it != cache_.end() && it->second.size == st.st_size && it->second.inode == st.st_ino &&
        it->second.mtime.tv_sec == st.st_mtim.tv_sec &&
        it->second.mtime.tv_nsec == st.st_mtim.tv_nsec &&
        !(it->second.truncated && budget > it->second.budget)) {
      return it->second;  // unchanged since the last sample: no re-parse
    }
    file.mtime = st.st_mtim;
    file.size = st.st_size;
    file.inode = st.st_ino;
    if (static_cast<std::uint64_t>(st.st_size) > kMaxFileBytes) {
      file.error = in.describe(EFBIG, kMaxFileBytes);  // without reading it
      return file;
    }
    std::string text;
    text.reserve(static_cast<std::size_t>(st.st_size));  // one buffer, not a doubling one
    if (int err = in.read(kMaxFileBytes, text); err != 0) {
      file.error =
          err == EFBIG ? in.describe(err, kMaxFileBytes) : "cannot read: " + in.describe(err);
      return file;
    }
    TextfileContent content = parse_textfile(text, budget);
    file.error = std::move(content.error);
    file.families = std::move(content.families);
    file.series = content.series;
    file.dropped = std::move(content.dropped);
    file.truncated = content.truncated;
    file.budget = budget;
    file.text_bytes = text.capacity();
    text = std::string();  // a 16 MiB file's text goes before the trim below looks
    note_heap_freed(file.text_bytes);
    // Only when (re)parsed: a summary is one run, however many samples read it.
    if (file.error.empty() && runs_) {
      report_wrk_summaries(file.families, st.st_mtim.tv_sec + st.st_mtim.tv_nsec / 1e9, *runs_);
    }
    return file;
  }

  void warn_once(const std::string& message) {
    if (warned_.size() > 256) warned_.clear();  // bounded; a persisting problem warns again
    if (warned_.insert(message).second) spdlog::warn("textfile: {}", message);
  }

  std::string dir_;
  RunObserver* runs_;
  std::map<std::string, CachedFile> cache_;
  std::set<std::string> warned_;
};

}  // namespace

std::unique_ptr<Collector> make_textfile_collector(const CollectorEnv& env) {
  return std::make_unique<TextfileCollector>(env.options.textfile_directory, env.runs);
}

}  // namespace loadwatch
