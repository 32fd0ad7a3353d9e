#include "analysis/junit.h"

#include <sstream>

#include "analysis/format_figures.h"

namespace loadwatch::analysis {

namespace {

/// Escapes for attribute and text content; drops the control characters XML 1.0 forbids.
std::string xml_escape(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (char ch : s) {
    unsigned char c = static_cast<unsigned char>(ch);
    switch (ch) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        if (c < 0x20 && ch != '\t' && ch != '\n' && ch != '\r') break;
        out += ch;
    }
  }
  return out;
}

}  // namespace

std::string junit_xml(const Comparison& comparison, const std::string& suite_name) {
  int tests = 0, failures = 0, errors = 0, skipped = 0;
  std::ostringstream cases;
  for (const PhaseComparison& p : comparison.phases) {
    std::string classname = xml_escape(fmt_phase(p.base_phase, p.users));
    if (!p.current_phase) {
      ++tests, ++errors;
      cases << "    <testcase classname=\"" << classname << "\" name=\"phase present\">\n"
            << "      <error type=\"missing\" message=\"the current run has no phase matching "
            << xml_escape(p.base_phase) << "\"/>\n    </testcase>\n";
      continue;
    }
    for (const RuleResult& r : p.results) {
      ++tests;
      cases << "    <testcase classname=\"" << classname << "\" name=\""
            << xml_escape(r.rule.describe()) << "\"";
      if (r.verdict == Verdict::ok || r.verdict == Verdict::within_noise) {
        cases << ">\n      <system-out>" << xml_escape(r.message) << "</system-out>\n";
      } else if (r.verdict == Verdict::inconclusive) {
        ++skipped;
        cases << ">\n      <skipped message=\"inconclusive: " << xml_escape(r.message) << "\"/>\n";
      } else if (r.verdict == Verdict::regression) {
        ++failures;
        cases << ">\n      <failure type=\"regression\" message=\"" << xml_escape(r.message)
              << "\"/>\n";
      } else {
        ++errors;
        cases << ">\n      <error type=\"no_data\" message=\"" << xml_escape(r.message) << "\"/>\n";
      }
      cases << "    </testcase>\n";
    }
  }
  for (const std::string& problem : comparison.problems) {
    ++tests, ++errors;
    cases << "    <testcase classname=\"input\" name=\"reports\">\n      <error type=\"bad_input\" "
          << "message=\"" << xml_escape(problem) << "\"/>\n    </testcase>\n";
  }
  std::ostringstream out;
  std::string name = xml_escape(suite_name);
  out << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      << "<testsuites name=\"" << name << "\" tests=\"" << tests << "\" failures=\"" << failures
      << "\" errors=\"" << errors << "\">\n"
      << "  <testsuite name=\"" << name << "\" tests=\"" << tests << "\" failures=\"" << failures
      << "\" errors=\"" << errors << "\" skipped=\"" << skipped << "\">\n"
      << cases.str() << "  </testsuite>\n</testsuites>\n";
  return out.str();
}

}  // namespace loadwatch::analysis
