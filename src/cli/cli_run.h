#pragma once
// `loadwatch run start|phase|stop|list|exec`: drive a loadwatch's run API from a shell or CI.

namespace loadwatch {

/// argv[0] is "run". Exit codes: 0 done; 1 the loadwatch refused (e.g. writes disabled, no
/// run open); 2 bad usage or the loadwatch unreachable. `exec` exits with its command's code
/// (128 + signal when it was killed), or 2 when the run could not be started.
int run_cli(int argc, char** argv);

}  // namespace loadwatch
