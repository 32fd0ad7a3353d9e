#include "subcommands.h"

namespace loadwatch {

const std::vector<Subcommand>& subcommands() {
  // One line per subcommand; each lives in the folder of its capability.
  static const std::vector<Subcommand> table = {};
  return table;
}

const Subcommand* find_subcommand(std::string_view name) {
  for (const Subcommand& s : subcommands()) {
    if (name == s.name) return &s;
  }
  return nullptr;
}

}  // namespace loadwatch
