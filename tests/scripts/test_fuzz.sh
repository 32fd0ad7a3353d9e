#!/usr/bin/env bash
# Builds every tests/fuzz/fuzz_*.cpp as a libFuzzer binary (clang++, ASan + UBSan) and runs
# each for a bounded time over its committed seed corpus. Non-zero on a build failure, a
# crash, a sanitizer report or a harness assertion (__builtin_trap).
#
# Harness convention: a comment line `// FUZZ_SOURCES: a.cpp b.cpp` lists the repo-relative
# sources to compile with it, an optional `// FUZZ_LIBS: -lfoo` the libraries to link; the
# seed corpus is tests/fuzz/corpus/<harness name>/ (read, never written: new inputs go to a
# scratch corpus in the build dir).
#
# Env: LOADWATCH_SOURCE_DIR, LOADWATCH_BUILD_DIR (set by ctest), FUZZ_SECONDS (default 10),
# FUZZ_ONLY (a harness name, to run one), CXX_FUZZ (default clang++), FUZZ_REPLAY=1 (run each
# seed input once instead of fuzzing: the sanitizer pass, test_sanitizers.sh).
# Builds and fuzzing run at nice 10: fuzzing is bounded in time, not in work, so in the suite it
# yields the CPU to the tests beside it that measure throughput and latency.
set -euo pipefail

src=${LOADWATCH_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
build=${LOADWATCH_BUILD_DIR:-$src/build}/fuzz
secs=${FUZZ_SECONDS:-10}
cxx=${CXX_FUZZ:-clang++}

if ! command -v "$cxx" >/dev/null 2>&1; then
  echo "test_fuzz: $cxx not found (scripts/install-deps test installs clang and libclang-rt-14-dev)" >&2
  exit 1
fi
mkdir -p "$build"
# test_fuzz and test_sanitizers may run at once (ctest -j): one builds, the other waits.
exec 9>"$build/.lock"
flock 9

harnesses=("$src"/tests/fuzz/fuzz_*.cpp)
if [ ! -e "${harnesses[0]}" ]; then
  echo "test_fuzz: no harness in $src/tests/fuzz" >&2
  exit 1
fi

failed=0
ran=0
for harness in "${harnesses[@]}"; do
  name=$(basename "$harness" .cpp)
  if [ -n "${FUZZ_ONLY:-}" ] && [ "$name" != "$FUZZ_ONLY" ]; then continue; fi
  sources=$(sed -n 's|^// FUZZ_SOURCES:||p' "$harness" | head -1)
  libs=$(sed -n 's|^// FUZZ_LIBS:||p' "$harness" | head -1)
  files=("$harness")
  for s in $sources; do files+=("$src/$s"); done
  bin="$build/$name"

  # Rebuild only when the harness, a listed source or any header is newer than the binary.
  stale=1
  if [ -x "$bin" ]; then
    stale=0
    for f in "${files[@]}"; do [ "$f" -nt "$bin" ] && stale=1; done
    # Harnesses include headers of src/, collectors/ and the shared test helpers in tests/lib/.
    newer_header=$(find "$src/src" "$src/collectors" "$src/tests/lib" -name '*.h' -newer "$bin" | head -1)
    if [ $stale = 0 ] && [ -n "$newer_header" ]; then
      stale=1
    fi
  fi
  if [ $stale = 1 ]; then
    echo "test_fuzz: building $name"
    # shellcheck disable=SC2086 # $libs is a list of flags
    if ! nice -n 10 "$cxx" -std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined \
        -fno-sanitize-recover=undefined -I"$src/src" -I"$src" "${files[@]}" $libs -o "$bin.tmp" \
        >"$build/$name.build.log" 2>&1; then
      echo "test_fuzz: FAILED to build $name:" >&2
      tail -30 "$build/$name.build.log" >&2
      failed=1
      continue
    fi
    mv "$bin.tmp" "$bin"
  fi

  seeds="$src/tests/fuzz/corpus/$name"
  if [ "${FUZZ_REPLAY:-}" = 1 ]; then
    # Each committed seed once (libFuzzer runs the files it is given and exits).
    inputs=()
    if [ -d "$seeds" ]; then mapfile -t inputs < <(find "$seeds" -type f | sort); fi
    if [ ${#inputs[@]} = 0 ]; then
      echo "test_fuzz: $name has no seed corpus to replay" >&2
      failed=1
      continue
    fi
    if ! timeout 300 "$bin" -timeout=10 -rss_limit_mb=2048 "${inputs[@]}" \
        >"$build/$name.replay.log" 2>&1; then
      echo "test_fuzz: $name FAILED on its seed corpus:" >&2
      tail -40 "$build/$name.replay.log" >&2
      failed=1
      continue
    fi
    echo "test_fuzz: $name: replayed ${#inputs[@]} seed inputs"
    ran=$((ran + 1))
    continue
  fi
  scratch="$build/$name.corpus"
  mkdir -p "$scratch" "$build/$name.artifacts"
  corpora=("$scratch")
  [ -d "$seeds" ] && corpora+=("$seeds")
  echo "test_fuzz: running $name for ${secs}s"
  if ! timeout $((secs + 120)) nice -n 10 "$bin" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
      -print_final_stats=1 -artifact_prefix="$build/$name.artifacts/" "${corpora[@]}" \
      >"$build/$name.log" 2>&1; then
    echo "test_fuzz: $name FAILED (crash inputs in $build/$name.artifacts/):" >&2
    grep -v '^#[0-9]' "$build/$name.log" | tail -40 >&2
    failed=1
    continue
  fi
  grep -E '^stat::number_of_executed_units|^Done' "$build/$name.log" | sed "s|^|test_fuzz: $name: |"
  ran=$((ran + 1))
done

if [ $ran = 0 ] && [ $failed = 0 ]; then
  echo "test_fuzz: no harness ran" >&2
  exit 1
fi
exit $failed
