#include "report/history_series_source.h"

#include <unistd.h>

#include <cmath>

namespace loadwatch::report {

std::vector<LabeledSeries> HistorySeriesSource::fetch(
    const std::string& family, const std::map<std::string, std::string>& match, double from,
    double to) {
  HistoryQuery q;
  q.select.push_back(HistorySelector{family, match});
  q.since = std::nextafter(from, -1e300);  // since is exclusive; the window is closed
  q.until = to;
  q.max_series = 10000;  // a report reads whole families; the history's own cap bounds them
  HistoryColumns cols = history_.query(q);
  std::vector<LabeledSeries> out;
  for (std::size_t s = 0; s < cols.series.size(); ++s) {
    LabeledSeries ls;
    ls.labels = cols.series[s].labels;
    for (std::size_t i = 0; i < cols.time.size(); ++i) {
      float v = cols.values[s][i];
      if (!std::isnan(v)) ls.series.add(cols.time[i], v);
    }
    out.push_back(std::move(ls));
  }
  return out;
}

std::optional<int> HistorySeriesSource::host_cores() {
  long n = sysconf(_SC_NPROCESSORS_ONLN);  // the history is this host's
  if (n > 0) return static_cast<int>(n);
  return std::nullopt;
}

}  // namespace loadwatch::report
