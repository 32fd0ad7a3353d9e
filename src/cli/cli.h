#pragma once
// The analysis subcommands of the loadwatch binary (listed in src/cli/subcommands.cpp).

namespace loadwatch::analysis {

/// loadwatch capacity FILE.csv [--format table|markdown|json]: exit 0, or 2 on bad input.
int run_capacity(int argc, char** argv);

/// loadwatch compare BASE CUR [--max M=V] [--min M=V] [--junit FILE]: exit 0 within the limits,
/// 1 on a regression, 2 on bad input.
int run_compare(int argc, char** argv);

}  // namespace loadwatch::analysis
