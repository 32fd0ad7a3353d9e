#include "cli/subcommands.h"
#include "daemon.h"

int main(int argc, char** argv) {
  if (argc > 1) {
    if (const loadwatch::Subcommand* cmd = loadwatch::find_subcommand(argv[1])) {
      return cmd->run(argc - 1, argv + 1);
    }
  }
  return loadwatch::run_daemon(argc, argv);
}
