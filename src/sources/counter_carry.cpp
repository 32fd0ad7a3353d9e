#include "sources/counter_carry.h"

namespace loadwatch {

double CounterCarry::update(const std::string& key, double raw, double tolerance) {
  if (!(raw > 0)) raw = 0;  // NaN, negative
  auto [it, inserted] = series_.try_emplace(key);
  Series& s = it->second;
  if (!inserted && !s.absent && raw < s.last && s.last - raw <= tolerance * s.last) raw = s.last;
  if (!inserted && (raw < s.last || s.absent)) s.offset += s.last;
  s.absent = false;
  s.last = raw;
  s.seen = true;
  return raw + s.offset;
}

void CounterCarry::reset_all() {
  for (auto& [key, s] : series_) {
    s.offset += s.last;
    s.last = 0;
  }
}

void CounterCarry::end_scrape(std::size_t keep) {
  bool prune = series_.size() > keep;
  for (auto it = series_.begin(); it != series_.end();) {
    Series& s = it->second;
    if (!s.seen) {
      if (prune) {
        it = series_.erase(it);
        continue;
      }
      s.absent = true;
    }
    s.seen = false;
    ++it;
  }
}

}  // namespace loadwatch
