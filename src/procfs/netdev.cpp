#include "procfs/netdev.h"

#include "procfs/tokenizer.h"

namespace loadwatch {

using namespace host_parse;

std::vector<NetDevStats> parse_netdev(std::string_view text) {
  std::vector<NetDevStats> out;
  while (!text.empty()) {
    std::string_view line = next_line(text);
    // Interface names cannot contain ':' (dev_valid_name()), so the first one ends the name;
    // the two header lines have '|' before any ':'.
    const auto colon = line.find(':');
    if (colon == std::string_view::npos || line.find('|') != std::string_view::npos) continue;
    NetDevStats s;
    s.device = std::string(trim(line.substr(0, colon)));
    if (s.device.empty()) throw std::runtime_error("interface without a name");
    std::string_view rest = line.substr(colon + 1);
    std::uint64_t v[16];
    for (auto& x : v) x = to_u64(next_field(rest), s.device);
    // Receive: bytes packets errs drop fifo frame compressed multicast;
    // transmit: bytes packets errs drop fifo colls carrier compressed.
    s.rx_bytes = v[0];
    s.rx_packets = v[1];
    s.rx_errors = v[2];
    s.rx_drop = v[3];
    s.tx_bytes = v[8];
    s.tx_packets = v[9];
    s.tx_errors = v[10];
    s.tx_drop = v[11];
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace loadwatch
