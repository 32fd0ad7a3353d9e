#pragma once
// Collector "textfile": node_exporter's textfile convention (--collector.textfile.directory).

#include <memory>

#include "collectors/collector.h"

namespace loadwatch {

/// Factory for the collector table: reads every `*.prom` file of Options::textfile_directory
/// each sample (a file is re-parsed only when its mtime, size or inode changed) and exports
/// their metrics unchanged, merged by family, plus loadwatch_textfile_mtime_seconds{file} and
/// loadwatch_textfile_scrape_error. A no-op collector when no directory is set.
std::unique_ptr<Collector> make_textfile_collector(const CollectorEnv& env);

}  // namespace loadwatch
