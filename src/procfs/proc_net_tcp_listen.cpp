#include "procfs/proc_net_tcp_listen.h"

#include <charconv>

#include "procfs/tokenizer.h"

namespace loadwatch {

using host_parse::next_field;
using host_parse::next_line;

bool parse_tcp_listen_inodes(std::string_view text, std::uint16_t port,
                             std::vector<std::uint64_t>& inodes) {
  bool other_state = false;
  bool header = true;
  while (!text.empty()) {
    std::string_view line = next_line(text);
    if (header) {  // "  sl  local_address rem_address   st tx_queue ..."
      header = false;
      if (line.find("local_address") != std::string_view::npos) continue;
    }
    // "   0: 0100007F:0CEA 00000000:0000 0A 00000000:00000000 00:00000000 00000000  uid
    //  timeout inode ..." — addresses are hex in network order, the port is plain hex.
    const std::string_view sl = next_field(line);
    if (sl.empty() || sl.back() != ':') continue;
    const std::string_view local = next_field(line);
    next_field(line);  // rem_address
    const std::string_view st = next_field(line);
    if (st.empty()) continue;
    if (st != "0A") {
      other_state = true;
      continue;
    }
    const auto colon = local.rfind(':');
    if (colon == std::string_view::npos) continue;
    unsigned local_port = 0;
    const std::string_view hex = local.substr(colon + 1);
    auto [pp, pec] = std::from_chars(hex.data(), hex.data() + hex.size(), local_port, 16);
    if (pec != std::errc() || pp != hex.data() + hex.size() || local_port != port) continue;
    next_field(line);  // tx_queue:rx_queue
    next_field(line);  // tr:tm->when
    next_field(line);  // retrnsmt
    next_field(line);  // uid
    next_field(line);  // timeout
    const std::string_view inode_text = next_field(line);
    std::uint64_t inode = 0;
    auto [ip, iec] =
        std::from_chars(inode_text.data(), inode_text.data() + inode_text.size(), inode);
    if (iec != std::errc() || ip != inode_text.data() + inode_text.size() || inode == 0) {
      continue;
    }
    inodes.push_back(inode);
  }
  return other_state;
}

}  // namespace loadwatch
