// The Prometheus text format parser against the format spec's own example, each rule of
// the spec, a real Mountebank 2.9.1 /metrics capture, and inputs that must fail cleanly.
#include <catch2/catch.hpp>
#include <cmath>
#include <fstream>
#include <limits>
#include <random>
#include <sstream>

#include "sources/prom_text_parser.h"
#include "tests/lib/fixture_file.h"

using loadwatch::parse_prom_text;
using loadwatch::parse_prom_value;
using loadwatch::test::read_fixture;
using prometheus::MetricType;

namespace {

const prometheus::MetricFamily* family(const loadwatch::PromTextParse& p, const std::string& name) {
  for (const auto& f : p.families) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

std::string label(const prometheus::ClientMetric& m, const std::string& name) {
  for (const auto& l : m.label) {
    if (l.name == name) return l.value;
  }
  return "<absent>";
}

// The example of https://prometheus.io/docs/instrumenting/exposition_formats/ verbatim.
const char* kSpecExample = R"(# HELP http_requests_total The total number of HTTP requests.
# TYPE http_requests_total counter
http_requests_total{method="post",code="200"} 1027 1395066363000
http_requests_total{method="post",code="400"}    3 1395066363000

# Escaping in label values:
msdos_file_access_time_seconds{path="C:\\DIR\\FILE.TXT",error="Cannot find file:\n\"FILE.TXT\""} 1.458255915e9

# Minimalistic line:
metric_without_timestamp_and_labels 12.47

# A weird metric from before the epoch:
something_weird{problem="division by zero"} +Inf -3982045

# A histogram, which has a pretty complex representation in the text format:
# HELP http_request_duration_seconds A histogram of the request duration.
# TYPE http_request_duration_seconds histogram
http_request_duration_seconds_bucket{le="0.05"} 24054
http_request_duration_seconds_bucket{le="0.1"} 33444
http_request_duration_seconds_bucket{le="0.2"} 100392
http_request_duration_seconds_bucket{le="0.5"} 129389
http_request_duration_seconds_bucket{le="1"} 133988
http_request_duration_seconds_bucket{le="+Inf"} 144320
http_request_duration_seconds_sum 53423
http_request_duration_seconds_count 144320

# Finally a summary, which has a complex representation, too:
# HELP rpc_duration_seconds A summary of the RPC duration in seconds.
# TYPE rpc_duration_seconds summary
rpc_duration_seconds{quantile="0.01"} 3102
rpc_duration_seconds{quantile="0.05"} 3272
rpc_duration_seconds{quantile="0.5"} 4773
rpc_duration_seconds{quantile="0.9"} 9001
rpc_duration_seconds{quantile="0.99"} 76656
rpc_duration_seconds_sum 1.7560473e+07
rpc_duration_seconds_count 2693
)";

}  // namespace

TEST_CASE("the spec's example parses into its six families", "[prom_text]") {
  auto p = parse_prom_text(kSpecExample);
  REQUIRE(p.ok());
  REQUIRE(p.families.size() == 6);

  const auto* req = family(p, "http_requests_total");
  REQUIRE(req);
  CHECK(req->type == MetricType::Counter);
  CHECK(req->help == "The total number of HTTP requests.");
  REQUIRE(req->metric.size() == 2);
  CHECK(req->metric[0].counter.value == 1027);
  CHECK(req->metric[0].timestamp_ms == 1395066363000);
  CHECK(label(req->metric[0], "method") == "post");
  CHECK(label(req->metric[1], "code") == "400");
  CHECK(req->metric[1].counter.value == 3);

  const auto* msdos = family(p, "msdos_file_access_time_seconds");
  REQUIRE(msdos);
  CHECK(msdos->type == MetricType::Untyped);
  CHECK(label(msdos->metric[0], "path") == "C:\\DIR\\FILE.TXT");
  CHECK(label(msdos->metric[0], "error") == "Cannot find file:\n\"FILE.TXT\"");
  CHECK(msdos->metric[0].untyped.value == 1.458255915e9);

  const auto* weird = family(p, "something_weird");
  REQUIRE(weird);
  CHECK(std::isinf(weird->metric[0].untyped.value));
  CHECK(weird->metric[0].untyped.value > 0);
  CHECK(weird->metric[0].timestamp_ms == -3982045);

  const auto* hist = family(p, "http_request_duration_seconds");
  REQUIRE(hist);
  CHECK(hist->type == MetricType::Histogram);
  REQUIRE(hist->metric.size() == 1);
  const auto& h = hist->metric[0].histogram;
  REQUIRE(h.bucket.size() == 6);
  CHECK(h.bucket[0].upper_bound == 0.05);
  CHECK(h.bucket[0].cumulative_count == 24054);
  CHECK(std::isinf(h.bucket[5].upper_bound));
  CHECK(h.bucket[5].cumulative_count == 144320);
  CHECK(h.sample_sum == 53423);
  CHECK(h.sample_count == 144320);
  CHECK(hist->metric[0].label.empty());  // le is not kept as a label

  const auto* sum = family(p, "rpc_duration_seconds");
  REQUIRE(sum);
  CHECK(sum->type == MetricType::Summary);
  REQUIRE(sum->metric.size() == 1);
  const auto& s = sum->metric[0].summary;
  REQUIRE(s.quantile.size() == 5);
  CHECK(s.quantile[0].quantile == 0.01);
  CHECK(s.quantile[0].value == 3102);
  CHECK(s.quantile[4].quantile == 0.99);
  CHECK(s.sample_sum == 1.7560473e+07);
  CHECK(s.sample_count == 2693);
  CHECK(sum->metric[0].label.empty());
}

TEST_CASE("special values NaN, +Inf, -Inf and signs", "[prom_text]") {
  double v = 0;
  CHECK(parse_prom_value("NaN", v));
  CHECK(std::isnan(v));
  CHECK(parse_prom_value("nan", v));
  CHECK(std::isnan(v));
  CHECK(parse_prom_value("+Inf", v));
  CHECK((std::isinf(v) && v > 0));
  CHECK(parse_prom_value("-Inf", v));
  CHECK((std::isinf(v) && v < 0));
  CHECK(parse_prom_value("Inf", v));
  CHECK(parse_prom_value("-1.5e-3", v));
  CHECK(v == -1.5e-3);
  CHECK(parse_prom_value("+42", v));
  CHECK(v == 42);
  CHECK(parse_prom_value(".5", v));
  CHECK(v == 0.5);
  CHECK(parse_prom_value("1e999", v));
  CHECK(std::isinf(v));
  CHECK(parse_prom_value("1e-999", v));
  CHECK(v == 0);
  CHECK_FALSE(parse_prom_value("", v));
  CHECK_FALSE(parse_prom_value("+", v));
  CHECK_FALSE(parse_prom_value("--1", v));
  CHECK_FALSE(parse_prom_value("+-1", v));
  CHECK_FALSE(parse_prom_value("1x", v));
  CHECK_FALSE(parse_prom_value("nan(123)", v));
  CHECK_FALSE(parse_prom_value("0x10", v));
  CHECK_FALSE(parse_prom_value("infinite", v));

  auto p = parse_prom_text("# TYPE g gauge\ng{a=\"1\"} NaN\ng{a=\"2\"} -Inf 17\n");
  REQUIRE(p.ok());
  REQUIRE(p.families.size() == 1);
  CHECK(std::isnan(p.families[0].metric[0].gauge.value));
  CHECK(p.families[0].metric[1].gauge.value == -std::numeric_limits<double>::infinity());
  CHECK(p.families[0].metric[1].timestamp_ms == 17);
}

TEST_CASE("HELP escapes, comments and blank lines", "[prom_text]") {
  auto p = parse_prom_text(
      "# a comment\n#HELP not_help is a comment too\n\n   \n"
      "# HELP x  line one\\nline two \\\\ done\n# TYPE x gauge\nx 1\n"
      "# HELP empty\nempty 2\n");
  REQUIRE(p.ok());
  REQUIRE(p.families.size() == 2);
  CHECK(p.families[0].help == "line one\nline two \\ done");
  CHECK(p.families[1].name == "empty");
  CHECK(p.families[1].help.empty());
  CHECK(p.families[1].type == MetricType::Untyped);
}

TEST_CASE("label syntax: blanks, trailing comma, empty set, colons, CRLF", "[prom_text]") {
  auto p = parse_prom_text(
      "a:b:c {  x = \"1\" , y=\"\" , } 3\r\n"
      "d{} 4\n"
      "e\t5\t6\n"
      "f{z=\"}{,=\\\"\"}7\n");
  REQUIRE(p.ok());
  REQUIRE(p.families.size() == 4);
  CHECK(p.families[0].name == "a:b:c");
  CHECK(label(p.families[0].metric[0], "x") == "1");
  CHECK(label(p.families[0].metric[0], "y") == "");
  CHECK(p.families[0].metric[0].untyped.value == 3);
  CHECK(p.families[1].metric[0].label.empty());
  CHECK(p.families[2].metric[0].timestamp_ms == 6);
  CHECK(label(p.families[3].metric[0], "z") == "}{,=\"");
  CHECK(p.families[3].metric[0].untyped.value == 7);
}

TEST_CASE("histograms and summaries group by label set", "[prom_text]") {
  auto p = parse_prom_text(R"(# TYPE h histogram
h_bucket{le="1",path="/a"} 1
h_bucket{path="/b",le="1"} 5
h_bucket{le="+Inf",path="/a"} 2
h_bucket{le="+Inf",path="/b"} 7
h_sum{path="/a"} 0.5
h_count{path="/a"} 2
h_sum{path="/b"} 3
h_count{path="/b"} 7 1000
# TYPE s summary
s{quantile="0.5",op="r"} 1
s_sum{op="r"} 10
s_count{op="r"} 4
s{quantile="0.5",op="w"} NaN
s_count{op="w"} 0
# TYPE s_count_alone counter
s_count_alone 3
# TYPE h2 histogram
h2_sum{le="7",x="1"} 4
h2_bucket{x="1",le="+Inf"} 2
)");
  REQUIRE(p.ok());
  const auto* h = family(p, "h");
  REQUIRE(h);
  REQUIRE(h->metric.size() == 2);
  CHECK(label(h->metric[0], "path") == "/a");
  CHECK(label(h->metric[0], "le") == "<absent>");
  CHECK(h->metric[0].histogram.bucket.size() == 2);
  CHECK(h->metric[0].histogram.sample_count == 2);
  CHECK(h->metric[1].histogram.sample_count == 7);
  CHECK(h->metric[1].histogram.bucket[0].cumulative_count == 5);
  CHECK(h->metric[1].timestamp_ms == 1000);
  const auto* s = family(p, "s");
  REQUIRE(s);
  REQUIRE(s->metric.size() == 2);
  CHECK(s->metric[0].summary.sample_sum == 10);
  CHECK(s->metric[0].summary.sample_count == 4);
  CHECK(std::isnan(s->metric[1].summary.quantile[0].value));
  // le on a _sum is not a label either (expfmt): one metric, labels {x}.
  const auto* h2 = family(p, "h2");
  REQUIRE(h2);
  REQUIRE(h2->metric.size() == 1);
  CHECK(h2->metric[0].label.size() == 1);
  CHECK(h2->metric[0].histogram.sample_sum == 4);
  CHECK(h2->metric[0].histogram.bucket.size() == 1);
  // Its own TYPE line makes s_count_alone a family, not part of s.
  REQUIRE(family(p, "s_count_alone"));
  CHECK(family(p, "s_count_alone")->type == MetricType::Counter);
}

TEST_CASE("suffixed names without a summary/histogram TYPE are plain families", "[prom_text]") {
  auto p =
      parse_prom_text("x_bucket{le=\"1\"} 1\nx_sum 2\nx_count 3\n# TYPE c counter\nc_total 1\n");
  REQUIRE(p.ok());
  REQUIRE(p.families.size() == 4);
  CHECK(p.families[0].name == "x_bucket");
  CHECK(label(p.families[0].metric[0], "le") == "1");
  CHECK(p.families[3].name == "c_total");  // TYPE c does not adopt c_total in format 0.0.4
  CHECK(p.families[3].type == MetricType::Untyped);
}

TEST_CASE("families without samples are dropped", "[prom_text]") {
  auto p =
      parse_prom_text("# HELP lonely nothing here\n# TYPE lonely counter\n# TYPE g gauge\ng 1\n");
  REQUIRE(p.ok());
  REQUIRE(p.families.size() == 1);
  CHECK(p.families[0].name == "g");
}

TEST_CASE("malformed lines fail with their line number", "[prom_text]") {
  struct Case {
    const char* text;
    const char* error;
  };
  const Case cases[] = {
      {"ok 1\n9bad 1\n", "line 2: invalid metric name \"9bad\""},
      {"ok 1\n\nx{a=\"unterminated} 1\n", "line 3: unterminated value of label a"},
      {"x{a=\"\\t\"} 1\n", "line 1: invalid escape sequence \\t in label value"},
      {"x{a=1} 1\n", "line 1: expected '\"' to open the value of label a"},
      {"x{a=\"1\" b=\"2\"} 1\n", "line 1: expected ',' or '}' after label a"},
      {"x{a=\"1\",a=\"2\"} 1\n", "line 1: duplicate label name \"a\""},
      {"x{__name__=\"y\"} 1\n", "line 1: label name __name__ is reserved"},
      {"x{1a=\"y\"} 1\n", "line 1: invalid label name \"1a\""},
      {"x{a=\"1\"\n", "line 1: unterminated label set"},
      {"x\n", "line 1: missing value for metric x"},
      {"x one\n", "line 1: invalid value \"one\" for metric x"},
      {"x 1 2.5\n", "line 1: invalid timestamp \"2.5\" for metric x"},
      {"x 1 2 3\n", "line 1: unexpected text after the timestamp of metric x"},
      {"# TYPE x gauge\n# TYPE x counter\n", "line 2: second TYPE line for metric x"},
      {"x 1\n# TYPE x gauge\n", "line 2: TYPE line for metric x after its samples"},
      {"# TYPE x gauges\n", "line 1: unknown metric type \"gauges\" for x"},
      {"# TYPE x\n", "line 1: unknown metric type \"\" for x"},
      {"# HELP x a\n# HELP x b\n", "line 2: second HELP line for metric x"},
      {"# HELP x bad \\t escape\n", "line 1: invalid escape sequence \\t in HELP text"},
      {"# HELP\n", "line 1: HELP line without a metric name"},
      {"# TYPE h histogram\nh_bucket 1\n", "line 2: histogram sample h_bucket without a le label"},
      {"# TYPE h histogram\nh 1\n",
       "line 2: histogram sample h needs a _bucket, _sum or _count suffix"},
      {"# TYPE s summary\ns 1\n", "line 2: summary sample s without a quantile label"},
      {"# TYPE s summary\ns{quantile=\"x\"} 1\n", "line 2: invalid quantile label value \"x\""},
  };
  for (const auto& c : cases) {
    INFO(c.text);
    auto p = parse_prom_text(c.text);
    CHECK(p.error == c.error);
    CHECK(p.families.empty());
  }
}

TEST_CASE("a real Mountebank 2.9.1 /metrics capture", "[prom_text]") {
  auto p = parse_prom_text(read_fixture("sources/mountebank_2.9.1_metrics.txt"));
  REQUIRE(p.ok());
  const auto* req = family(p, "mb_request_total");
  REQUIRE(req);
  CHECK(req->type == MetricType::Counter);
  REQUIRE(req->metric.size() == 2);
  CHECK(label(req->metric[0], "imposter") == "[http:23600 orders api] ");
  CHECK(req->metric[0].counter.value == 7);
  CHECK(req->metric[1].counter.value == 3);
  const auto* gc = family(p, "mb_nodejs_gc_duration_seconds");
  REQUIRE(gc);
  CHECK(gc->type == MetricType::Histogram);
  CHECK(gc->metric[0].histogram.bucket.size() == 7);
  const auto* match = family(p, "mb_predicate_match_duration_seconds");
  REQUIRE(match);
  REQUIRE(match->metric.size() == 2);
  CHECK(match->metric[0].histogram.sample_count == 7);
  CHECK(label(match->metric[1], "imposter") == "[http:23601] ");
  // mb writes HELP/TYPE for mb_blocked_ip_total with no sample: dropped.
  CHECK(family(p, "mb_blocked_ip_total") == nullptr);
}

TEST_CASE("every prefix of a real capture and random bytes parse or fail cleanly", "[prom_text]") {
  std::string real = read_fixture("sources/mountebank_2.9.1_metrics.txt");
  size_t ok = 0;
  for (size_t n = 0; n <= real.size(); n += 7) {
    auto p = parse_prom_text(std::string_view(real).substr(0, n));
    if (p.ok())
      ++ok;
    else
      CHECK(p.error.rfind("line ", 0) == 0);
  }
  CHECK(ok > 0);
  std::mt19937 rng(42);
  const std::string alphabet = "ab_:{}=\",\\n \t#\n019.+-eEINafT";
  for (int i = 0; i < 3000; ++i) {
    std::string s(rng() % 80, ' ');
    for (auto& c : s) c = alphabet[rng() % alphabet.size()];
    auto p = parse_prom_text(s);
    if (!p.ok()) CHECK(p.error.rfind("line ", 0) == 0);
  }
}

TEST_CASE("strict mode accepts loadwatch's own serialization of the spec example",
          "[prom_text][strict]") {
  auto parsed = parse_prom_text(kSpecExample);
  REQUIRE(parsed.ok());
  std::string page = loadwatch::serialize_text(parsed.families);
  auto strict = parse_prom_text(page, loadwatch::PromTextLimits::strict_mode());
  INFO(page);
  CHECK(strict.error == "");
  CHECK(strict.families.size() == parsed.families.size());
}

TEST_CASE("strict mode rejects what would break a scrape", "[prom_text][strict]") {
  auto strict = [](const std::string& text) {
    return parse_prom_text(text, loadwatch::PromTextLimits::strict_mode()).error;
  };
  CHECK(strict("a{l=\"\xff\"} 1\n").find("not valid UTF-8") != std::string::npos);
  CHECK(strict("# HELP a caf\xe9\na 1\n").find("not valid UTF-8") != std::string::npos);
  CHECK(strict("a{l=\"1\"} 1\na{l=\"1\"} 2\n").find("duplicate series") != std::string::npos);
  CHECK(strict("a{x=\"1\",y=\"2\"} 1\na{y=\"2\",x=\"1\"} 2\n").find("duplicate series") !=
        std::string::npos);
  CHECK(strict("# TYPE s summary\ns{quantile=\"0.5\"} 1\ns{quantile=\"0.5\"} 2\n")
            .find("duplicate series") != std::string::npos);
  CHECK(strict("a 1\nb 1\na{l=\"2\"} 1\n").find("not contiguous") != std::string::npos);
  CHECK(strict("a 1\n# HELP a late\n").find("after its samples") != std::string::npos);
  CHECK(strict("a 1\r\n") != "");
  // The same inputs parse leniently (as a source's body).
  CHECK(parse_prom_text("a{l=\"1\"} 1\na{l=\"1\"} 2\n").ok());
  CHECK(parse_prom_text("a 1\nb 1\na{l=\"2\"} 1\n").ok());
  CHECK(strict("a{l=\"é\"} 1\n# HELP b x\n# TYPE b gauge\nb 2\n") == "");
}

TEST_CASE("limits: past max_series samples are read, counted, not kept", "[prom_text][limits]") {
  std::string text = "# TYPE c counter\n";
  for (int i = 0; i < 5000; ++i) text += "c{i=\"" + std::to_string(i) + "\"} 1\n";
  text += "# HELP d new family past the cap\nd 1\n";
  loadwatch::PromTextLimits limits;
  limits.max_series = 100;
  auto p = parse_prom_text(text, limits);
  REQUIRE(p.ok());
  REQUIRE(p.families.size() == 1);
  CHECK(p.families[0].metric.size() == 100);
  CHECK(p.dropped.at("max_series") == 4900 + 1);
  // A syntax error past the cap still fails the parse.
  CHECK_FALSE(parse_prom_text(text + "bad{\n", limits).ok());
}

TEST_CASE("limits: oversized labels drop the sample without storing the value",
          "[prom_text][limits]") {
  std::string huge(15u << 20, 'x');  // one 15 MiB label value, as a hostile source sent
  std::string text = "a{l=\"" + huge + "\"} 1\na{l=\"ok\"} 2\n";
  std::string many = "b{";
  for (int i = 0; i < 100000; ++i) many += "l" + std::to_string(i) + "=\"v\",";
  many += "} 1\n";
  text += many;
  text += "c{" + std::string(300, 'n') + "=\"v\"} 1\n";
  auto p = parse_prom_text(text);
  REQUIRE(p.ok());
  REQUIRE(p.families.size() == 1);
  CHECK(p.families[0].name == "a");
  CHECK(p.families[0].metric.size() == 1);
  CHECK(p.dropped.at("label_limit") == 3);
}

TEST_CASE("limits: a label value's cap holds for the value written again, invalid UTF-8 repaired",
          "[prom_text][limits]") {
  // Each invalid byte is written back as U+FFFD, three bytes: 683 of them make 2,049.
  using loadwatch::kMaxLabelValueBytes;
  std::string over(kMaxLabelValueBytes / 3 + 1, '\xf3');
  std::string at(kMaxLabelValueBytes / 3, '\xf3');
  auto p = parse_prom_text("a{l=\"" + over + "\"} 1\nb{l=\"" + at + "\"} 2\n");
  REQUIRE(p.ok());
  REQUIRE(p.families.size() == 1);
  CHECK(p.families[0].name == "b");
  CHECK(p.dropped.at("label_limit") == 1);
  // What was kept parses back from the page, within the cap.
  auto again = parse_prom_text(loadwatch::serialize_text(p.families));
  REQUIRE(again.families.size() == 1);
  CHECK(again.families[0].metric[0].label[0].value.size() == 3 * at.size());
  CHECK(again.families[0].metric[0].label[0].value.size() <= kMaxLabelValueBytes);
}

TEST_CASE("limits: quantiles and buckets per series, HELP length", "[prom_text][limits]") {
  std::string text = "# HELP s " + std::string(10000, 'h') + "é\n# TYPE s summary\n";
  for (int i = 0; i < 100; ++i) text += "s{quantile=\"0." + std::to_string(i) + "1\"} 1\n";
  text += "# TYPE h histogram\n";
  for (int i = 0; i < 400; ++i) text += "h_bucket{le=\"" + std::to_string(i) + "\"} 1\n";
  auto p = parse_prom_text(text);
  REQUIRE(p.ok());
  CHECK(family(p, "s")->help.size() == loadwatch::kMaxHelpBytes);
  CHECK(family(p, "s")->metric[0].summary.quantile.size() == loadwatch::kMaxQuantilesPerSeries);
  CHECK(family(p, "h")->metric[0].histogram.bucket.size() == loadwatch::kMaxBucketsPerSeries);
  CHECK(p.dropped.at("max_quantiles") == 100 - loadwatch::kMaxQuantilesPerSeries);
  CHECK(p.dropped.at("max_buckets") == 400 - loadwatch::kMaxBucketsPerSeries);
  // A HELP cut inside a multi-byte character keeps valid UTF-8.
  std::string cut = "# HELP u " + std::string(loadwatch::kMaxHelpBytes - 1, 'h') + "é\nu 1\n";
  auto q = parse_prom_text(cut);
  REQUIRE(q.ok());
  CHECK(q.families[0].help.size() == loadwatch::kMaxHelpBytes - 1);
  CHECK(loadwatch::valid_utf8(q.families[0].help));
}
