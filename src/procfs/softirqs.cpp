#include "procfs/softirqs.h"

#include <stdexcept>

#include "procfs/tokenizer.h"

namespace loadwatch {

using namespace host_parse;

std::vector<SoftirqCount> parse_softirqs(std::string_view text) {
  // The header names one column per *possible* CPU (kernel/softirq.c show_softirqs uses
  // for_each_possible_cpu), so every row has exactly as many counts as the header has names,
  // offline CPUs included.
  std::string_view header;
  while (!text.empty() && header.empty()) header = trim(next_line(text));
  size_t columns = 0;
  for (std::string_view f = next_field(header); !f.empty(); f = next_field(header)) {
    if (f.substr(0, 3) != "CPU") throw std::runtime_error("header: unexpected " + quote(f));
    ++columns;
  }
  if (columns == 0) throw std::runtime_error("no CPU header line");

  std::vector<SoftirqCount> rows;
  while (!text.empty()) {
    std::string_view line = next_line(text);
    if (trim(line).empty()) continue;
    const auto colon = line.find(':');
    if (colon == std::string_view::npos)
      throw std::runtime_error("row without ':': " + quote(line));
    SoftirqCount row;
    row.type = std::string(trim(line.substr(0, colon)));
    if (row.type.empty() || row.type.find_first_of(" \t") != std::string::npos) {
      throw std::runtime_error("bad softirq type " + quote(row.type));
    }
    for (const auto& r : rows) {
      if (r.type == row.type) throw std::runtime_error("duplicate softirq type " + quote(row.type));
    }
    std::string_view rest = line.substr(colon + 1);
    size_t n = 0;
    // Each per-CPU count is an unsigned int in the kernel (kstat_softirqs_cpu) and wraps at
    // 2^32; the sum then drops, which Prometheus treats as a counter reset.
    for (std::string_view f = next_field(rest); !f.empty(); f = next_field(rest), ++n) {
      row.total += to_u64(f, row.type);
    }
    if (n != columns) {
      throw std::runtime_error(row.type + ": " + std::to_string(n) + " counts, header has " +
                               std::to_string(columns) + " CPUs");
    }
    rows.push_back(std::move(row));
  }
  if (rows.empty()) throw std::runtime_error("no softirq rows");
  return rows;
}

}  // namespace loadwatch
