#pragma once
// The daemon's own history as a series source: the report endpoint's input.

#include "history/history.h"
#include "report/series_source.h"

namespace loadwatch::report {

class HistorySeriesSource : public SeriesSource {
 public:
  explicit HistorySeriesSource(const History& history) : history_(history) {}
  std::vector<LabeledSeries> fetch(const std::string& family,
                                   const std::map<std::string, std::string>& match, double from,
                                   double to) override;
  std::optional<int> host_cores() override;

 private:
  const History& history_;
};

}  // namespace loadwatch::report
