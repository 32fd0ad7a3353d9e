#!/usr/bin/env bash
# Builds every tests/fuzz/fuzz_*.cpp as a libFuzzer binary (clang++, ASan + UBSan) and runs
# each for a bounded time over its committed seed corpus. Non-zero on a build failure, a
# crash, a sanitizer report or a harness assertion (__builtin_trap).
#
# Harness convention: a comment line `// FUZZ_SOURCES: a.cpp b.cpp` lists the repo-relative
# sources to compile with it, an optional `// FUZZ_LIBS: -lfoo` the libraries to link (a -D
# there is a compile flag for the harness and its sources, an -I or -isystem a search path for
# every compile); the seed corpus is tests/fuzz/corpus/<harness name>/ (read, never written:
# new inputs go to a scratch corpus in the build dir).
#
# Each source is compiled once into an object the harnesses share (47 distinct sources stand
# behind 93 listings), SANITIZE_JOBS at a time, through ccache when installed. -g1 (line tables)
# is enough for a report's file:line and compiles faster than -g.
#
# --build-only: build the harnesses, nothing else. In the suite, sanitizer_build does this first
# thing, at the lowest CPU priority beside the other tests (test_sanitizers.sh); test_fuzz then
# only fuzzes, inside the CPU lock it shares with the capacity runs (tests/CMakeLists.txt).
#
# Env: LOADWATCH_SOURCE_DIR, LOADWATCH_BUILD_DIR (set by ctest), FUZZ_SECONDS (default 10),
# FUZZ_ONLY (a harness name, to run one), CXX_FUZZ (default clang++), FUZZ_REPLAY=1 (run each
# seed input once instead of fuzzing: the sanitizer pass, test_sanitizers.sh), SANITIZE_JOBS
# (compiles and harness runs at once, default 2).
# Fuzzing runs at nice 10: it is bounded in time, not in work, so in the suite it yields the
# CPU to the tests beside it that measure throughput and latency.
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

jobs=${SANITIZE_JOBS:-2}
compile=("$cxx")
if command -v ccache >/dev/null 2>&1; then
  compile=(ccache "$cxx")
  export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$src}  # another checkout shares the cache (scripts/build)
fi
# -ffile-prefix-map: the objects name no checkout, as the trees' (CMakeLists.txt).
flags=(-std=c++20 -O1 -g1 "-fsanitize=fuzzer-no-link,address,undefined"
  -fno-sanitize-recover=undefined -ffile-prefix-map="$src"=. -I"$src/src" -I"$src")

# Which objects each harness links, and which of them are out of date: an object is rebuilt
# when its source is newer, or any header of src/, collectors/ or tests/lib/ (harnesses include
# those) is newer.
declare -A objects_of link_flags_of
todo=()
paths=()  # the -I and -isystem of every harness's FUZZ_LIBS
declare -A queued
for harness in "${harnesses[@]}"; do
  name=$(basename "$harness" .cpp)
  if [ -n "${FUZZ_ONLY:-}" ] && [ "$name" != "$FUZZ_ONLY" ]; then continue; fi
  sources=$(sed -n 's|^// FUZZ_SOURCES:||p' "$harness" | head -1)
  libs=$(sed -n 's|^// FUZZ_LIBS:||p' "$harness" | head -1)
  extra=() link=()
  for w in $libs; do
    case "$w" in
      -I* | -isystem*) paths+=("$w") ;;
      -D*) extra+=("$w") ;;
      *) link+=("$w") ;;
    esac
  done
  # Objects built with other -D flags go to a directory of their own. An -I or -isystem only
  # adds a search path, which every compile gets: a source two harnesses list compiles once.
  objdir="$build/obj/$(printf '%s ' "${extra[@]}" | md5sum | cut -c1-8)"
  files=("${harness#"$src"/}")
  for s in $sources; do files+=("$s"); done
  objs=()
  for f in "${files[@]}"; do
    obj="$objdir/${f//\//_}.o"
    objs+=("$obj")
    if [ -z "${queued[$obj]:-}" ]; then
      queued[$obj]=1
      if [ ! -e "$obj" ] || [ "$src/$f" -nt "$obj" ] ||
         [ -n "$(find "$src/src" "$src/collectors" "$src/tests/lib" -name '*.h' -newer "$obj" \
                 | head -1)" ]; then
        todo+=("$src/$f" "$obj" "${extra[*]:-}")
      fi
    fi
  done
  objects_of[$name]="${objs[*]}"
  link_flags_of[$name]="${link[*]:-}"
done

compile_one() {  # SOURCE OBJECT EXTRA-FLAGS: one object, its errors in OBJECT.log
  mkdir -p "$(dirname "$2")"
  # shellcheck disable=SC2086 # $3 is a list of flags
  if nice -n 19 "${compile[@]}" "${flags[@]}" "${paths[@]}" $3 -c "$1" -o "$2.tmp" >"$2.log" 2>&1; then
    mv "$2.tmp" "$2"
  else
    echo "test_fuzz: FAILED to compile $1:" >&2
    tail -30 "$2.log" >&2
    return 1
  fi
}
failed=0
if [ ${#todo[@]} -gt 0 ]; then
  echo "test_fuzz: compiling $((${#todo[@]} / 3)) objects, $jobs at a time"
  started=$(date +%s)
  running=0
  for ((i = 0; i < ${#todo[@]}; i += 3)); do
    if [ $running -ge "$jobs" ]; then
      wait -n || failed=1
      running=$((running - 1))
    fi
    compile_one "${todo[i]}" "${todo[i + 1]}" "${todo[i + 2]}" &
    running=$((running + 1))
  done
  while [ $running -gt 0 ]; do
    wait -n || failed=1
    running=$((running - 1))
  done
  echo "test_fuzz: compiled in $(($(date +%s) - started)) s"
fi

for harness in "${harnesses[@]}"; do
  name=$(basename "$harness" .cpp)
  [ -n "${objects_of[$name]:-}" ] || continue
  bin="$build/$name"
  read -r -a objs <<<"${objects_of[$name]}"
  stale=0
  [ -x "$bin" ] || stale=1
  for o in "${objs[@]}"; do
    if [ ! -e "$o" ]; then stale=2; break; fi
    [ "$o" -nt "$bin" ] && stale=1
  done
  if [ $stale = 2 ]; then failed=1; continue; fi  # its compile failed, reported above
  if [ $stale = 1 ]; then
    # shellcheck disable=SC2086 # a list of flags
    if ! nice -n 19 "$cxx" -fsanitize=fuzzer,address,undefined "${objs[@]}" \
        ${link_flags_of[$name]} -o "$bin.tmp" >"$build/$name.build.log" 2>&1; then
      echo "test_fuzz: FAILED to link $name:" >&2
      tail -30 "$build/$name.build.log" >&2
      failed=1
      continue
    fi
    mv "$bin.tmp" "$bin"
  fi
done
if [ "${1:-}" = --build-only ]; then exit $failed; fi

# One harness: 0 when it ran clean, 1 on a failure (reported), 2 when it was not built.
run_one() {
  local name=$1 bin="$build/$1" seeds="$src/tests/fuzz/corpus/$1"
  [ -x "$bin" ] || return 2  # its build failed, reported above
  if [ "${FUZZ_REPLAY:-}" = 1 ]; then
    # Each committed seed once (libFuzzer runs the files it is given and exits).
    local inputs=()
    if [ -d "$seeds" ]; then mapfile -t inputs < <(find "$seeds" -type f | sort); fi
    if [ ${#inputs[@]} = 0 ]; then
      echo "test_fuzz: $name has no seed corpus to replay" >&2
      return 1
    fi
    if ! timeout 300 "$bin" -timeout=10 -rss_limit_mb=2048 "${inputs[@]}" \
        >"$build/$name.replay.log" 2>&1; then
      echo "test_fuzz: $name FAILED on its seed corpus:" >&2
      tail -40 "$build/$name.replay.log" >&2
      return 1
    fi
    echo "test_fuzz: $name: replayed ${#inputs[@]} seed inputs"
    return 0
  fi
  local scratch="$build/$name.corpus"
  mkdir -p "$scratch" "$build/$name.artifacts"
  local corpora=("$scratch")
  [ -d "$seeds" ] && corpora+=("$seeds")
  echo "test_fuzz: running $name for ${secs}s"
  if ! timeout $((secs + 120)) nice -n 10 "$bin" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
      -print_final_stats=1 -artifact_prefix="$build/$name.artifacts/" "${corpora[@]}" \
      >"$build/$name.log" 2>&1; then
    echo "test_fuzz: $name FAILED (crash inputs in $build/$name.artifacts/):" >&2
    grep -v '^#[0-9]' "$build/$name.log" | tail -40 >&2
    return 1
  fi
  grep -E '^stat::number_of_executed_units|^Done' "$build/$name.log" | sed "s|^|test_fuzz: $name: |"
}

# The harnesses run SANITIZE_JOBS at a time, each on a core of its own: in the suite test_fuzz
# holds the CPU lock, so the cores are there, and the chain of tests that take turns on it is
# shorter by half of the fuzzing time.
ran=0
running=0
reap() {
  local rc=0
  wait -n || rc=$?
  running=$((running - 1))
  case $rc in 0) ran=$((ran + 1)) ;; 2) ;; *) failed=1 ;; esac
}
for harness in "${harnesses[@]}"; do
  name=$(basename "$harness" .cpp)
  if [ -n "${FUZZ_ONLY:-}" ] && [ "$name" != "$FUZZ_ONLY" ]; then continue; fi
  if [ $running -ge "$jobs" ]; then reap; fi
  run_one "$name" &
  running=$((running + 1))
done
while [ $running -gt 0 ]; do reap; done

if [ $ran = 0 ] && [ $failed = 0 ]; then
  echo "test_fuzz: no harness ran" >&2
  exit 1
fi
exit $failed
