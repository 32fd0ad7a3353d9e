// One flat pass over the events of the body: a small stack says where the reader is (the
// root, the steps list, one step, the duration object, its counts), so memory and time grow
// with the body's length only, never with its nesting (capped at 3 levels).
#include "push/locust_push_parser.h"

#include <cmath>

#include "sources/generator_families.h"
#include "sources/json_events.h"

namespace loadwatch {

namespace {

constexpr double kMaxExact = 9007199254740992.0;  // 2^53: integers above lose precision
constexpr double kMaxUsers = 1e7;
// Unix seconds loadwatch takes as a generator's clock: 2001-09-09 to 5138.
constexpr double kMinTime = 1e9, kMaxTime = 1e11;

bool whole(double v, double max) { return v >= 0 && v <= max && std::floor(v) == v; }
bool time_like(double v) { return v >= kMinTime && v < kMaxTime; }

class PushHandler : public JsonHandler {
 public:
  explicit PushHandler(LocustPush& out) : out_(out) {}

  bool begin_object() override {
    if (stack_.empty()) return push(Where::Root);
    if (top() == Where::Root && key_ == "duration") return once(kDuration) && push(Where::Duration);
    if (top() == Where::Root && known_root_key()) return fail(wrong_type());
    if (top() == Where::Steps) return fail("steps: each entry is [unix seconds, users]");
    if (top() == Where::Duration && key_ == "counts") return fail("duration.counts: not a list");
    if (top() == Where::Duration && key_ == "sum") return fail("duration.sum: not a number");
    return ignore();
  }
  bool end_object() override { return pop(); }

  bool begin_array() override {
    if (stack_.empty()) return fail("the body is not a JSON object");
    if (top() == Where::Root && key_ == "steps") return once(kSteps) && push(Where::Steps);
    if (top() == Where::Steps) {
      if (out_.steps.size() >= kLocustPushMaxSteps) {
        return fail("steps: more than " + std::to_string(kLocustPushMaxSteps) + " entries");
      }
      step_fields_ = 0;
      return push(Where::Step);
    }
    if (top() == Where::Duration && key_ == "counts") {
      return once(kCounts) && push(Where::Counts);
    }
    if (top() == Where::Root && known_root_key()) return fail(wrong_type());
    if (top() == Where::Duration && key_ == "sum") return fail("duration.sum: not a number");
    return ignore();
  }
  bool end_array() override {
    if (top() == Where::Step) {
      if (step_fields_ != 2) return fail("steps: each entry is [unix seconds, users]");
      if (out_.steps.size() > 1 &&
          out_.steps.back().first < out_.steps[out_.steps.size() - 2].first) {
        return fail("steps: not in time order");
      }
    }
    return pop();
  }

  bool key(std::string_view name) override {
    key_.assign(name);
    return true;
  }

  bool string(std::string_view v) override {
    if (top() == Where::Root && key_ == "source") {
      if (!once(kSource)) return false;
      if (!valid_push_source_name(v)) {
        return fail("source: want 1 to " + std::to_string(kLocustPushMaxNameBytes) +
                    " characters of A-Z a-z 0-9 _ . : -");
      }
      out_.source.assign(v);
      return true;
    }
    return other_scalar();
  }

  bool number(double v) override {
    switch (top()) {
      case Where::Root:
        return root_number(v);
      case Where::Steps:
        return fail("steps: each entry is [unix seconds, users]");
      case Where::Step:
        if (step_fields_ == 0) {
          if (!time_like(v)) return fail("steps: a time is not unix seconds");
          out_.steps.emplace_back(v, 0);
        } else if (step_fields_ == 1) {
          if (!whole(v, kMaxUsers)) return fail("steps: users not an integer in [0, 1e7]");
          out_.steps.back().second = v;
        }
        ++step_fields_;
        return step_fields_ <= 2 || fail("steps: each entry is [unix seconds, users]");
      case Where::Duration:
        if (key_ != "sum") return true;  // an unknown member
        if (!once(kSum)) return false;
        if (!(v >= 0 && v <= 1e15)) return fail("duration.sum: not seconds in [0, 1e15]");
        out_.duration_sum = v;
        return true;
      case Where::Counts:
        if (out_.duration_counts.size() >= request_duration_bounds().size() + 1) {
          return fail(counts_size_error());
        }
        if (!whole(v, kMaxExact)) return fail("duration.counts: not an integer in [0, 2^53]");
        out_.duration_counts.push_back(v);
        return true;
      case Where::Ignored:
        return true;
    }
    return true;
  }

  bool boolean(bool) override { return other_scalar(); }
  bool null() override { return other_scalar(); }

  /// After the reader's success: every required field there, and consistent.
  bool finish(std::string& error) {
    const std::pair<unsigned, const char*> required[] = {{kSource, "source"},
                                                         {kTime, "time"},
                                                         {kRequests, "requests"},
                                                         {kFailures, "failures"},
                                                         {kUsers, "users"}};
    for (const auto& [bit, name] : required) {
      if (!(seen_ & bit)) {
        error = std::string(name) + ": missing";
        return false;
      }
    }
    if (out_.failures > out_.requests) {
      error = "failures: more than requests";
      return false;
    }
    if (seen_ & kDuration) {
      if (!(seen_ & kCounts) || !(seen_ & kSum)) {
        error = "duration: wants counts and sum";
        return false;
      }
      if (out_.duration_counts.size() != request_duration_bounds().size() + 1) {
        error = counts_size_error();
        return false;
      }
      double total = 0;
      for (double n : out_.duration_counts) total += n;
      if (total != out_.requests) {
        error = "duration.counts: add up to " + std::to_string(static_cast<long long>(total)) +
                ", requests says " + std::to_string(static_cast<long long>(out_.requests));
        return false;
      }
    }
    return true;
  }

  const std::string& why() const { return why_; }

 private:
  enum class Where { Root, Steps, Step, Duration, Counts, Ignored };
  enum : unsigned {
    kSource = 1,
    kTime = 2,
    kRequests = 4,
    kFailures = 8,
    kUsers = 16,
    kSteps = 32,
    kDuration = 64,
    kCounts = 128,
    kSum = 256,
  };

  Where top() const { return stack_.empty() ? Where::Ignored : stack_.back(); }
  bool push(Where w) {
    stack_.push_back(w);
    return true;
  }
  bool pop() {
    stack_.pop_back();
    return true;
  }
  bool ignore() { return push(Where::Ignored); }
  bool fail(std::string message) {
    why_ = std::move(message);
    return false;
  }
  bool once(unsigned bit) {
    if (seen_ & bit) return fail(field_name(bit) + ": given twice");
    seen_ |= bit;
    return true;
  }
  std::string field_name(unsigned bit) const {
    if (bit == kCounts || bit == kSum) return "duration." + key_;
    return key_;
  }
  bool known_root_key() const {
    return key_ == "source" || key_ == "time" || key_ == "requests" || key_ == "failures" ||
           key_ == "users" || key_ == "steps" || key_ == "duration";
  }
  // What a known root member should have been.
  std::string wrong_type() const {
    if (key_ == "steps") return "steps: not a list";
    if (key_ == "duration") return "duration: not an object";
    if (key_ == "source") return "source: not a string";
    return key_ + ": not a number";
  }
  static std::string counts_size_error() {
    return "duration.counts: want " + std::to_string(request_duration_bounds().size() + 1) +
           " buckets (the listener's fixed layout)";
  }

  bool root_number(double v) {
    if (key_ == "time") {
      if (!once(kTime)) return false;
      if (!time_like(v)) return fail("time: not unix seconds");
      out_.time = v;
    } else if (key_ == "requests" || key_ == "failures") {
      if (!once(key_ == "requests" ? kRequests : kFailures)) return false;
      if (!whole(v, kMaxExact)) return fail(key_ + ": not an integer in [0, 2^53]");
      (key_ == "requests" ? out_.requests : out_.failures) = v;
    } else if (key_ == "users") {
      if (!once(kUsers)) return false;
      if (!whole(v, kMaxUsers)) return fail("users: not an integer in [0, 1e7]");
      out_.users = v;
    } else if (key_ == "source") {
      return fail("source: not a string");
    }
    return true;
  }

  // A string, boolean or null where a known field wants something else.
  bool other_scalar() {
    switch (top()) {
      case Where::Root:
        if (key_ == "source") return fail("source: not a string");
        if (known_root_key()) return fail(wrong_type());
        return true;
      case Where::Steps:
      case Where::Step:
        return fail("steps: each entry is [unix seconds, users]");
      case Where::Duration:
        return key_ == "sum" ? fail("duration.sum: not a number") : true;
      case Where::Counts:
        return fail("duration.counts: not an integer in [0, 2^53]");
      case Where::Ignored:
        return true;
    }
    return true;
  }

  LocustPush& out_;
  std::vector<Where> stack_;
  std::string key_;
  std::string why_;
  unsigned seen_ = 0;
  int step_fields_ = 0;
};

}  // namespace

bool valid_push_source_name(std::string_view name) {
  if (name.empty() || name.size() > kLocustPushMaxNameBytes) return false;
  for (char c : name) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '.' || c == ':' || c == '-';
    if (!ok) return false;
  }
  return true;
}

bool parse_locust_push(std::string_view body, LocustPush& out, std::string& error) {
  out = LocustPush{};
  PushHandler handler(out);
  std::string why;
  if (!read_json_events(body, handler, why, 3)) {
    error = handler.why().empty() ? "not a JSON object of the listener's shape (" + why + ")"
                                  : handler.why();
    out = LocustPush{};
    return false;
  }
  if (!handler.finish(error)) {
    out = LocustPush{};
    return false;
  }
  return true;
}

}  // namespace loadwatch
