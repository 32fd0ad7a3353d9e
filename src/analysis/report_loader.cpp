#include "analysis/report_loader.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "util/bounded_json.h"

namespace loadwatch::analysis {

std::string read_input(const std::string& path, std::size_t max_bytes) {
  std::string text;
  auto read_all = [&](std::istream& in) {
    char buf[65536];
    while (in.read(buf, sizeof buf) || in.gcount() > 0) {
      text.append(buf, static_cast<std::size_t>(in.gcount()));
      if (text.size() > max_bytes) {
        throw ReportLoadError(path + ": larger than " + std::to_string(max_bytes >> 20) + " MiB");
      }
    }
  };
  if (path == "-") {
    read_all(std::cin);
    return text;
  }
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
    throw ReportLoadError(path + ": is a directory");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ReportLoadError(path + ": " + std::strerror(errno));
  read_all(in);
  return text;
}

CapacityReport report_from_csv(std::string_view text, const std::string& input_label,
                               const CsvOptions& csv, const AnalysisOptions& analysis) {
  CapacityReport r;
  std::string latency_column;
  r.phases = read_capacity_csv(text, csv, &latency_column);
  r.input = input_label;
  if (!latency_column.empty() && latency_column.rfind("p95", 0) != 0) {
    r.input += " (column \"" + latency_column + "\" stands in for p95)";
  }
  analyse(r, analysis);
  return r;
}

CapacityReport report_from_json(std::string_view text) {
  nlohmann::json j;
  try {
    j = parse_bounded_json(text);
  } catch (const JsonInputError& e) {
    throw ReportLoadError(e.what());
  }
  if (!j.is_object()) {
    throw ReportLoadError(std::string("expected a report (a JSON object), got ") + j.type_name());
  }
  try {
    return j.get<CapacityReport>();
  } catch (const std::invalid_argument& e) {
    throw ReportLoadError(e.what());
  } catch (const nlohmann::json::exception& e) {
    throw ReportLoadError(e.what());
  }
}

bool FileReportLoader::accepts(const std::string& ref) const {
  struct stat st {};
  return ref == "-" || ::stat(ref.c_str(), &st) == 0;
}

CapacityReport FileReportLoader::load(const std::string& ref) const {
  std::string text = read_input(ref);
  std::size_t first = text.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) throw ReportLoadError(ref + ": empty");
  try {
    // A CSV starts with its header; "[" is JSON too, refused as JSON rather than read as a
    // one-column CSV of a single enormous line.
    if (text[first] == '{' || text[first] == '[') return report_from_json(text);
    return report_from_csv(text, "csv:" + ref, csv_, analysis_);
  } catch (const ReportLoadError& e) {
    throw ReportLoadError(ref + ": " + e.what());
  } catch (const CsvError& e) {
    throw ReportLoadError(ref + ": " + e.what());
  }
}

CapacityReport load_report(const std::string& ref,
                           const std::vector<std::unique_ptr<ReportLoader>>& loaders) {
  for (const auto& loader : loaders) {
    if (loader->accepts(ref)) return loader->load(ref);
  }
  throw ReportLoadError(ref + ": no such report file");
}

}  // namespace loadwatch::analysis
