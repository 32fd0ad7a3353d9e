#include "procfs/proc_pid_stat.h"

#include <charconv>

namespace loadwatch {

namespace {

// The whole of `s` as a T; false when anything is left over or the value does not fit.
template <class T>
bool to_number(std::string_view s, T& out) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size();
}

}  // namespace

std::optional<PidStat> parse_pid_stat(std::string_view text) {
  // "PID (COMM) S PPID ...": the kernel prints comm raw between "(" and ")" (fs/proc/array.c
  // do_task_stat), so the only safe delimiter is the last ')' of the text.
  const auto open = text.find('(');
  const auto close = text.rfind(')');
  if (open == std::string_view::npos || close == std::string_view::npos || close < open) {
    return std::nullopt;
  }
  PidStat st;
  std::string_view pid_text = text.substr(0, open);
  while (!pid_text.empty() && pid_text.back() == ' ') pid_text.remove_suffix(1);
  if (!to_number(pid_text, st.pid)) return std::nullopt;
  st.comm.assign(text.substr(open + 1, close - open - 1));

  // The blank-separated fields after comm, numbered as in proc(5) (state is field 3).
  std::string_view rest = text.substr(close + 1);
  int field = 3;  // proc(5) numbering of the next field
  while (!rest.empty() && field <= 52) {
    size_t b = 0;
    while (b < rest.size() && (rest[b] == ' ' || rest[b] == '\n')) ++b;
    if (b == rest.size()) break;
    size_t e = b;
    while (e < rest.size() && rest[e] != ' ' && rest[e] != '\n') ++e;
    const std::string_view f = rest.substr(b, e - b);
    rest = rest.substr(e);
    bool ok = true;
    switch (field) {
      case 3:
        if (f.size() != 1) return std::nullopt;
        st.state = f[0];
        break;
      case 4:
        ok = to_number(f, st.ppid);
        break;
      case 10:
        ok = to_number(f, st.minflt);
        break;
      case 12:
        ok = to_number(f, st.majflt);
        break;
      case 14:
        ok = to_number(f, st.utime);
        break;
      case 15:
        ok = to_number(f, st.stime);
        break;
      case 19:
        ok = to_number(f, st.nice);
        break;
      case 20:
        ok = to_number(f, st.num_threads);
        break;
      case 22:
        ok = to_number(f, st.starttime);
        break;
      case 23:
        ok = to_number(f, st.vsize);
        break;
      case 24:
        ok = to_number(f, st.rss);
        break;
      case 28:
        ok = to_number(f, st.startstack);
        break;
      case 48:
        ok = to_number(f, st.arg_start);
        break;
      default:
        break;
    }
    if (!ok) return std::nullopt;
    ++field;
  }
  // Everything up to rss (24) has been printed by every kernel since 2.6; fewer is garbage.
  if (field <= 24) return std::nullopt;
  return st;
}

}  // namespace loadwatch
