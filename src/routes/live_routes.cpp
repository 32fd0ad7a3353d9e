#include "routes/live_routes.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>

#include "history/history.h"
#include "util/static_files.h"

namespace loadwatch {

const char* const kLivePageCsp =
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; "
    "frame-ancestors 'none'";

namespace {

HttpResponse error(int status, const std::string& message) {
  HttpResponse r;
  r.status = status;
  r.content_type = "application/json";
  // The message may quote the client's bytes: invalid UTF-8 becomes U+FFFD, not a 500.
  r.body = nlohmann::json{{"status", "error"}, {"error", message}}.dump(
               -1, ' ', false, nlohmann::json::error_handler_t::replace) +
           "\n";
  return r;
}

// Longest number put_value writes: a whole number below 1e15 ("-999999999999999", 16) or the
// shortest form of a float ("-1.17549435e-38", 15).
constexpr std::size_t kMaxValueChars = 16;

// Writes one JSON number (null for NaN) at `p`, which has room for kMaxValueChars.
char* put_value(char* p, float v) {
  if (!std::isfinite(v)) return std::copy_n("null", 4, p);
  // Most gauges (bytes, fds, threads, connections) are whole numbers: print them as integers,
  // which is several times cheaper than the shortest float form.
  if (std::fabs(v) < 1e15f) {
    const auto whole = static_cast<long long>(v);
    if (static_cast<float>(whole) == v) return std::to_chars(p, p + kMaxValueChars, whole).ptr;
  }
  return std::to_chars(p, p + kMaxValueChars, v).ptr;
}

// Longest timestamp put_time writes: 19 digits, a sign, the point and 3 decimals.
constexpr std::size_t kMaxTimeChars = 24;

char* put_time(char* p, double t) {
  // Milliseconds as an integer and a fixed point: faster than a fixed-precision to_chars.
  auto ms = static_cast<long long>(std::llround(t * 1000));
  p = std::to_chars(p, p + kMaxTimeChars, ms / 1000).ptr;
  *p++ = '.';
  int frac = static_cast<int>(ms % 1000);
  *p++ = static_cast<char>('0' + frac / 100);
  *p++ = static_cast<char>('0' + frac / 10 % 10);
  *p++ = static_cast<char>('0' + frac % 10);
  return p;
}

HttpResponse static_file(const std::string& name, const char* content_type) {
  HttpResponse r;
  auto bytes = find_static_file(name);
  if (!bytes) return error(404, "no such file");
  r.content_type = content_type;
  r.body.assign(bytes->data(), bytes->size());
  r.headers.push_back({"Content-Security-Policy", kLivePageCsp});
  r.headers.push_back({"X-Content-Type-Options", "nosniff"});
  r.headers.push_back({"Cache-Control", "no-cache"});
  return r;
}

HttpResponse series_list(const History& history, const Sampler& sampler) {
  nlohmann::json data = nlohmann::json::array();
  for (const auto& s : history.list()) {
    data.push_back(
        {{"series", s.key}, {"family", s.family}, {"labels", s.labels}, {"counter", s.counter}});
  }
  HttpResponse r;
  r.content_type = "application/json";
  r.body = nlohmann::json{{"status", "success"},
                          {"points", history.capacity()},
                          {"max_series", history.max_series()},
                          {"interval_seconds",
                           std::chrono::duration<double>(sampler.interval()).count()},
                          {"data", data}}
               .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) +
           "\n";
  return r;
}

}  // namespace

HttpResponse history_response(const History& history, const HttpRequest& req) {
  HistoryQuery q;
  auto param = [&req](const std::string& name) { return req.query_param(name); };
  if (auto why = read_history_query(param, q)) return error(400, *why);
  HistoryColumns cols = history.query(q);
  if (cols.truncated) {
    return error(400, "series: the names match more than " +
                          std::to_string(kHistoryMaxSeriesPerRequest) +
                          " series; name fewer or exact series");
  }
  std::size_t values = cols.time.size() * (cols.series.size() + 1);
  if (values > kHistoryMaxValuesPerResponse) {
    return error(400, "the answer would hold " + std::to_string(values) + " values, more than " +
                          std::to_string(kHistoryMaxValuesPerResponse) +
                          "; ask for a shorter since..until or fewer series");
  }
  std::string out;
  out += "{\"status\":\"success\",\"series\":[\"time\"";
  for (const auto& s : cols.series)
    out +=
        "," + nlohmann::json(s.key).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  out += "],\"counter\":[false";
  for (const auto& s : cols.series) out += s.counter ? ",true" : ",false";
  out += std::string("],\"rate\":") + (q.rate ? "true" : "false") + ",\"data\":[";
  // Numbers are written straight into the buffer: the answer can hold a million of them. The
  // reservation is the worst case but only address space; each column grows the string by
  // its own worst case only, so the zeroing of resize() touches little more than is written.
  out.reserve(out.size() + values * (kMaxValueChars + 1) + (cols.values.size() + 1) * 4 + 16);
  std::size_t used = out.size();
  auto room = [&](std::size_t numbers, std::size_t chars_each) {
    out.resize(used + numbers * (chars_each + 1) + 4);
    return out.data() + used;
  };
  char* p = room(cols.time.size(), kMaxTimeChars);
  *p++ = '[';
  for (std::size_t i = 0; i < cols.time.size(); ++i) {
    if (i) *p++ = ',';
    p = put_time(p, cols.time[i]);
  }
  *p++ = ']';
  used = static_cast<std::size_t>(p - out.data());
  for (const auto& col : cols.values) {
    p = room(col.size(), kMaxValueChars);
    *p++ = ',';
    *p++ = '[';
    // A value equal to the previous one (a flat gauge; Locust's figures change every 2 s) is
    // copied from it rather than formatted again.
    std::uint32_t prev_bits = 0;
    const char* prev = nullptr;
    std::size_t prev_len = 0;
    for (std::size_t i = 0; i < col.size(); ++i) {
      if (i) *p++ = ',';
      std::uint32_t bits;
      std::memcpy(&bits, &col[i], sizeof bits);
      if (prev && bits == prev_bits) {
        std::memcpy(p, prev, prev_len);
        p += prev_len;
        continue;
      }
      prev = p;
      p = put_value(p, col[i]);
      prev_len = static_cast<std::size_t>(p - prev);
      prev_bits = bits;
    }
    *p++ = ']';
    used = static_cast<std::size_t>(p - out.data());
  }
  out.resize(used);
  out += "]}\n";
  HttpResponse r;
  r.content_type = "application/json";
  r.body = std::move(out);
  r.headers.push_back({"Cache-Control", "no-store"});
  return r;
}

void add_live_routes(HttpServer& server, const Sampler& sampler, const History* history,
                     AnswerBuilder& builder) {
  server.route("/api/v1/history", builder.wrap([history](const HttpRequest& req) {
    if (!history) return error(404, "the history is off (--history.points=0)");
    return history_response(*history, req);
  }));
  server.route("/api/v1/history/series", builder.wrap([history, &sampler](const HttpRequest&) {
    if (!history) return error(404, "the history is off (--history.points=0)");
    return series_list(*history, sampler);
  }));
  const std::pair<const char*, const char*> files[] = {
      {"live.js", "text/javascript; charset=utf-8"},
      {"live.css", "text/css; charset=utf-8"},
      {"uPlot.iife.min.js", "text/javascript; charset=utf-8"},
      {"uPlot.min.css", "text/css; charset=utf-8"},
  };
  for (const auto& [name, type] : files) {
    std::string n = name, t = type;
    server.route("/static/" + n, [n, t](const HttpRequest&) { return static_file(n, t.c_str()); });
  }
}

}  // namespace loadwatch
