#pragma once
// Wires flags, config, sampler, sources and the HTTP server together; the body of main().

namespace loadwatch {

/// Runs loadwatch with these command-line arguments; returns the process exit code.
int run_daemon(int argc, char** argv);

}  // namespace loadwatch
