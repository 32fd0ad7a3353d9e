// node_exporter's textfile collector, re-done: batch jobs (here: wrk through
// scripts/wrk/loadwatch.lua) drop `*.prom` files in text exposition format into a directory,
// writing a temporary file and renaming it so a reader never sees half a file. As in
// node_exporter: a file that fails to parse, carries client-side timestamps or redefines a
// family with another type is skipped whole and sets loadwatch_textfile_scrape_error to 1;
// the other files are still exported; a missing directory is a scrape error, not a failure.
#include "collectors/textfile.h"

#include <dirent.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <unordered_map>
#include <vector>

#include "procfs/fs_root.h"
#include "runs/wrk_summary.h"
#include "sources/prom_text_parser.h"

namespace loadwatch {

namespace {

constexpr off_t kMaxFileBytes = 16 << 20;
constexpr std::size_t kMaxFiles = 1000;

struct CachedFile {
  struct timespec mtime {};
  off_t size = -1;
  ino_t inode = 0;
  std::vector<prometheus::MetricFamily> families;
  std::string error;  // why the file is skipped; empty when it is fine
};

bool ends_with(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string check_parsed(const PromTextParse& parsed) {
  if (!parsed.ok()) return parsed.error;
  for (const auto& f : parsed.families) {
    for (const auto& m : f.metric) {
      if (m.timestamp_ms != 0) {
        return "metric " + f.name + " has a client-side timestamp, which is not supported";
      }
    }
  }
  return "";
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
    std::map<std::string, std::string> given_help;                          // family -> HELP
    for (const auto& name : names) {
      CachedFile file = load(name);
      if (file.size < 0) {  // vanished between readdir and stat: a normal race
        continue;
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
        family.help = help != given_help.end() ? help->second
                                               : "Metric read from " + dir_ + "/" + file_name;
      }
      out.family(std::move(family));
    }
    cache_ = std::move(next);
    out.gauge("loadwatch_textfile_scrape_error",
              "1 if the textfile directory or any *.prom file in it could not be read or parsed.",
              {}, error ? 1 : 0);
  }

 private:
  CachedFile load(const std::string& name) {
    CachedFile file;
    std::string path = dir_ + "/" + name;
    struct stat st {};
    if (stat(path.c_str(), &st) != 0) return file;  // size stays -1: vanished
    if (!S_ISREG(st.st_mode)) {
      file.size = 0;
      file.error = "not a regular file";
      return file;
    }
    auto it = cache_.find(name);
    if (it != cache_.end() && it->second.size == st.st_size && it->second.inode == st.st_ino &&
        it->second.mtime.tv_sec == st.st_mtim.tv_sec &&
        it->second.mtime.tv_nsec == st.st_mtim.tv_nsec) {
      return it->second;  // unchanged since the last sample: no re-parse
    }
    file.mtime = st.st_mtim;
    file.size = st.st_size;
    file.inode = st.st_ino;
    if (st.st_size > kMaxFileBytes) {
      file.error = "larger than " + std::to_string(kMaxFileBytes) + " bytes";
      return file;
    }
    std::string text;
    if (int err = read_whole_file(path, text); err != 0) {
      if (err == ENOENT) {
        file.size = -1;
        return file;
      }
      file.error = std::string("cannot read: ") + std::strerror(err);
      return file;
    }
    auto parsed = parse_prom_text(text);
    file.error = check_parsed(parsed);
    if (file.error.empty()) file.families = std::move(parsed.families);
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
