#!/usr/bin/env bash
# The sanitizer pass: builds the unit and integration tests (and the daemon they drive) with
# AddressSanitizer and UndefinedBehaviorSanitizer in their own build tree, runs them, then
# replays every fuzzer's seed corpus (test_fuzz.sh builds the fuzzers with the same sanitizers).
# Non-zero on a build failure, a failing test or any sanitizer report.
#
# In the suite this is where the C++ tests are built, once: the main tree only registers them
# and runs them from this tree (tests/CMakeLists.txt, LOADWATCH_CPP_TESTS), so it runs in parts:
# --build-only: configure and build, nothing else. The compile runs at the lowest CPU priority:
#   in the suite it is a test of its own (sanitizer_build) that starts first and overlaps the
#   other tests (mostly waiting on peers and sockets), taking only the CPU they leave.
# --replay-only: the seed corpora alone, on a tree already built (the suite's test_sanitizers).
#
# Env: LOADWATCH_SOURCE_DIR, LOADWATCH_BUILD_DIR (set by ctest; the tree goes to
# $LOADWATCH_BUILD_DIR/sanitize), CXX_SANITIZE (default: the C++ compiler CMake finds),
# SANITIZE_JOBS (default 2). ccache is used when installed.
set -euo pipefail

src=${LOADWATCH_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
parent=${LOADWATCH_BUILD_DIR:-$src/build}
build=$parent/sanitize
jobs=${SANITIZE_JOBS:-2}
started=$(date +%s)

# ASan and UBSan settings for the replay. The C++ tests carry the same in their ctest
# entries (LOADWATCH_SANITIZER_ENV in tests/CMakeLists.txt). Any report fails the run: ASan
# aborts by default, UBSan through -fno-sanitize-recover; leaks are reported at exit.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

# Every fuzzer over its seed corpus (each input once), built by test_fuzz.sh.
replay() {
  FUZZ_REPLAY=1 bash "$src/tests/scripts/test_fuzz.sh"
}
if [ "${1:-}" = --replay-only ]; then
  replay
  exit
fi

flags="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
launcher=()
if command -v ccache >/dev/null 2>&1; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
  export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$src}  # another checkout shares the cache (scripts/build)
fi
compiler=()
if [ -n "${CXX_SANITIZE:-}" ]; then compiler=(-DCMAKE_CXX_COMPILER="$CXX_SANITIZE"); fi

# -Og: sanitized code at -O0 makes the timing-sensitive tests several times slower; -O1's
# inlining multiplies the instrumented code, and compiling it takes about 1.5 times the CPU
# (docs/development.md, "How long the suite takes"). -g1 (line tables) is enough for a
# report's file:line, and compiles faster than -g. The test files themselves are at -O0
# (tests/CMakeLists.txt). LOADWATCH_CPP_TESTS=here: this tree builds the C++ tests.
if ! cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-Og -g1" \
    -DLOADWATCH_CPP_TESTS=here \
    -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_C_FLAGS="$flags" \
    -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" \
    "${launcher[@]}" "${compiler[@]}" >"$build.configure.log" 2>&1; then
  echo "test_sanitizers: configure failed:" >&2
  tail -30 "$build.configure.log" >&2
  exit 1
fi

# The C++ test executables (tests/CMakeLists.txt names them after their files); no benches.
targets=()
for f in "$src"/tests/unit/*/test_*.cpp "$src"/tests/integration/test_*.cpp; do
  targets+=("$(basename "$f" .cpp)")
done
# The fuzzers build beside the tree, at the same priority (test_fuzz.sh; the replay below and
# test_fuzz then find them built).
LOADWATCH_SOURCE_DIR=$src LOADWATCH_BUILD_DIR=$parent bash "$src/tests/scripts/test_fuzz.sh" \
  --build-only >"$parent/fuzz.build.log" 2>&1 &
fuzz_build=$!
if ! nice -n 19 cmake --build "$build" -j"$jobs" --target loadwatch "${targets[@]}" \
    >"$build.build.log" 2>&1; then
  echo "test_sanitizers: build failed:" >&2
  grep -E "error|Error" "$build.build.log" | head -30 >&2
  wait $fuzz_build || true
  exit 1
fi
if ! wait $fuzz_build; then
  echo "test_sanitizers: the fuzzers' build failed:" >&2
  tail -40 "$parent/fuzz.build.log" >&2
  exit 1
fi
built=$(date +%s)
echo "test_sanitizers: built ${#targets[@]} test executables in $((built - started)) s"
if [ "${1:-}" = --build-only ]; then exit 0; fi

# NAME.CASE: a [may-skip] test case's own entry (tests/CMakeLists.txt).
regex="^($(IFS='|'; echo "${targets[*]}"))(\\..*)?\$"
failed=0
if ! ctest --test-dir "$build" -R "$regex" -j"$jobs" --timeout 600 --output-on-failure \
    >"$build.ctest.log" 2>&1; then
  echo "test_sanitizers: sanitized tests FAILED:" >&2
  grep -E "Failed|\*\*\*" "$build.ctest.log" | head -20 >&2
  # Each failed assertion (Catch2 prints "file:line: FAILED:", the expression and its
  # expansion) and each sanitizer report with its first frames, so the log shows the cause.
  grep -E -A8 "FAILED:|ERROR: AddressSanitizer|runtime error|LeakSanitizer" \
    "$build.ctest.log" | head -120 >&2
  echo "(whole log: $build.ctest.log)" >&2
  failed=1
fi
tail -3 "$build.ctest.log" | sed 's/^/test_sanitizers: /'
tested=$(date +%s)

if ! replay; then
  failed=1
fi
echo "test_sanitizers: build $((built - started)) s, tests $((tested - built)) s," \
     "corpora $(($(date +%s) - tested)) s"
exit $failed
