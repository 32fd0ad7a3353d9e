#include "procfs/tcp_socket.h"

namespace loadwatch {

std::string_view tcp_state_name(unsigned state) {
  // include/net/tcp_states.h order; lower case, as Prometheus label values usually are.
  static constexpr std::string_view kNames[kTcpStateCount] = {
      "",          "established", "syn_sent",   "syn_recv", "fin_wait1", "fin_wait2",
      "time_wait", "close",       "close_wait", "last_ack", "listen",    "closing"};
  return state < kTcpStateCount ? kNames[state] : std::string_view{};
}

}  // namespace loadwatch
