#include "runs/run_request.h"

#include <cmath>
#include <nlohmann/json.hpp>

#include "metrics/exposition.h"
#include "runs/run.h"
#include "runs/run_rules.h"

namespace loadwatch {

namespace {

// Bodies are flat: a label map is the deepest thing. Refusing deeper nesting while parsing
// keeps a hostile body from building a deep tree at all.
constexpr int kMaxDepth = 4;
// The most values a body can need: its fields and a full label map.
constexpr std::size_t kMaxRequestValues = 2 * kMaxLabels + kMaxRunHosts + 16;

nlohmann::json parse_object(std::string_view body) {
  if (body.size() > kMaxRunBodyBytes) {
    throw RunRequestError("body", "larger than " + std::to_string(kMaxRunBodyBytes) + " bytes");
  }
  nlohmann::json j;
  try {
    j = parse_bounded_json(body, kMaxDepth, kMaxRequestValues);
  } catch (const std::runtime_error& e) {
    throw RunRequestError("body", e.what());
  }
  if (!j.is_object()) throw RunRequestError("body", "want a JSON object");
  return j;
}

void check_fields(const nlohmann::json& j, std::initializer_list<const char*> known) {
  for (const auto& [key, value] : j.items()) {
    bool ok = false;
    for (const char* k : known) ok = ok || key == k;
    if (!ok && key.empty()) throw RunRequestError("body", "a field with an empty name");
    if (!ok) throw RunRequestError(key, "unknown field");
  }
}

std::string name_field(const nlohmann::json& j, const char* field) {
  auto it = j.find(field);
  if (it == j.end()) throw RunRequestError(field, "required");
  if (!it->is_string()) throw RunRequestError(field, "want a string");
  std::string name = it->get<std::string>();
  if (std::string why = name_problem(name); !why.empty()) throw RunRequestError(field, why);
  return name;
}

bool label_name_ok(const std::string& k) {
  if (k.empty() || k.size() > kMaxRunLabelNameBytes || k.rfind("__", 0) == 0) return false;
  for (std::size_t i = 0; i < k.size(); ++i) {
    char c = k[i];
    bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
    if (!alpha && !(i > 0 && c >= '0' && c <= '9')) return false;
  }
  return true;
}

/// "at": unix seconds, finite, 1970..2100 (the clock bound is the book's: it knows now).
std::optional<double> instant_field(const nlohmann::json& j) {
  auto it = j.find("at");
  if (it == j.end() || it->is_null()) return std::nullopt;
  if (!it->is_number()) throw RunRequestError("at", "want unix seconds");
  double v = it->get<double>();
  if (!(v >= 0 && v < 4102444800.0)) throw RunRequestError("at", "want unix seconds");
  return v;
}

/// "hosts": names of hosts (absent or null: none).
std::vector<std::string> hosts_field(const nlohmann::json& j) {
  std::vector<std::string> out;
  auto hosts = j.find("hosts");
  if (hosts == j.end() || hosts->is_null()) return out;
  if (!hosts->is_array()) throw RunRequestError("hosts", "want an array of names");
  if (hosts->size() > kMaxRunHosts) {
    throw RunRequestError("hosts", "more than " + std::to_string(kMaxRunHosts) + " hosts");
  }
  for (const auto& h : *hosts) {
    if (!h.is_string()) throw RunRequestError("hosts", "want an array of names");
    out.push_back(h.get<std::string>());
  }
  if (std::string why = hosts_problem(out); !why.empty()) throw RunRequestError("hosts", why);
  return out;
}

}  // namespace

void check_instant(double at, double now) {
  if (std::fabs(at - now) > kMaxRunClockOffsetSeconds) {
    throw RunRequestError("at", std::to_string(std::lround(at - now)) +
                                    " s from this loadwatch's clock; at most " +
                                    std::to_string(std::lround(kMaxRunClockOffsetSeconds)));
  }
}

std::string name_problem(std::string_view name) {
  if (name.empty()) return "must not be empty";
  if (name.size() > kMaxRunNameBytes) {
    return "longer than " + std::to_string(kMaxRunNameBytes) + " bytes";
  }
  return text_problem(name);
}

std::string hosts_problem(const std::vector<std::string>& hosts) {
  if (hosts.size() > kMaxRunHosts) return "more than " + std::to_string(kMaxRunHosts) + " hosts";
  for (std::size_t i = 0; i < hosts.size(); ++i) {
    if (std::string why = name_problem(hosts[i]); !why.empty()) {
      return "host " + std::to_string(i + 1) + ": " + why;
    }
    for (std::size_t k = 0; k < i; ++k) {
      if (hosts[k] == hosts[i]) return "\"" + hosts[i] + "\" given twice";
    }
  }
  return "";
}

std::string label_problem(const std::string& key, const std::string& value) {
  if (!label_name_ok(key)) {
    return "label names match [a-zA-Z_][a-zA-Z0-9_]* (at most " +
           std::to_string(kMaxRunLabelNameBytes) + " bytes, no leading __)";
  }
  if (value.size() > kMaxRunLabelValueBytes) {
    return "longer than " + std::to_string(kMaxRunLabelValueBytes) + " bytes";
  }
  return text_problem(value);
}

std::string clean_name(std::string_view raw, std::string_view fallback) {
  std::string out;
  for (std::size_t i = 0; i < raw.size();) {
    std::size_t n = utf8_char_length(raw, i);
    // A byte that starts no character, or a whole character no name may hold: one '?'.
    bool bad = n == 0 || !text_problem(raw.substr(i, n)).empty();
    std::size_t take = n == 0 ? 1 : n;
    if (out.size() + (bad ? 1 : n) > kMaxRunNameBytes) break;
    if (bad) {
      out += '?';
    } else {
      out.append(raw.substr(i, n));
    }
    i += take;
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out.empty() ? std::string(fallback) : out;
}

StartRunRequest parse_start_request(std::string_view body) {
  nlohmann::json j = parse_object(body);
  check_fields(j, {"name", "labels", "id", "at", "hosts"});
  StartRunRequest req;
  req.name = name_field(j, "name");
  req.at = instant_field(j);
  auto id = j.find("id");
  if (id != j.end() && !id->is_null()) {
    if (!id->is_string() || !plausible_run_id(id->get<std::string>())) {
      throw RunRequestError("id", "want a run id (YYYYMMDDTHHMMSS-name)");
    }
    req.id = id->get<std::string>();
  }
  req.hosts = hosts_field(j);
  auto labels = j.find("labels");
  if (labels == j.end() || labels->is_null()) return req;
  if (!labels->is_object()) throw RunRequestError("labels", "want an object of strings");
  if (labels->size() > kMaxLabels) {
    throw RunRequestError("labels", "more than " + std::to_string(kMaxLabels) + " labels");
  }
  for (const auto& [key, value] : labels->items()) {
    std::string field = "labels." + key;
    if (!value.is_string()) throw RunRequestError(field, "want a string");
    std::string v = value.get<std::string>();
    if (std::string why = label_problem(key, v); !why.empty()) throw RunRequestError(field, why);
    req.labels[key] = std::move(v);
  }
  return req;
}

PhaseRequest parse_phase_request(std::string_view body) {
  nlohmann::json j = parse_object(body);
  check_fields(j, {"name", "users", "at"});
  PhaseRequest req;
  req.at = instant_field(j);
  auto users = j.find("users");
  if (users != j.end() && !users->is_null()) {
    // 100 and 100.0 are the same count; 1.5, -1, "100" and 1e30 are not counts.
    if (!users->is_number()) throw RunRequestError("users", "want a whole number");
    double v = users->get<double>();
    if (!(v >= 0 && v <= static_cast<double>(kMaxUsers))) {
      throw RunRequestError("users", "want 0 to " + std::to_string(kMaxUsers));
    }
    if (v != std::floor(v)) throw RunRequestError("users", "want a whole number");
    req.users = static_cast<std::int64_t>(v);
  }
  if (j.contains("name") || !req.users) {
    req.name = name_field(j, "name");
  } else {
    req.name = "users=" + std::to_string(*req.users);
  }
  return req;
}

HostsRequest parse_hosts_request(std::string_view body) {
  nlohmann::json j = parse_object(body);
  check_fields(j, {"hosts"});
  if (!j.contains("hosts")) throw RunRequestError("hosts", "required");
  return HostsRequest{hosts_field(j)};
}

StopRequest parse_stop_request(std::string_view body) {
  bool blank = true;
  for (char c : body) blank = blank && (c == ' ' || c == '\n' || c == '\r' || c == '\t');
  if (blank) return {};
  nlohmann::json j = parse_object(body);
  check_fields(j, {"at"});
  return StopRequest{instant_field(j)};
}

}  // namespace loadwatch
