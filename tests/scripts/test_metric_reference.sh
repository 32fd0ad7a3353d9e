#!/usr/bin/env bash
# docs/metrics.md is what the built binary exports: scripts/metric-reference.py --check runs it
# (loopback, about 8 s) with every source, push and textfile kind, a bad textfile and a full
# listener, and fails on any family, type, label or HELP the committed table lacks or has in
# excess. Then the check itself is shown to fail on a reference with one family taken out.
set -euo pipefail
src=${LOADWATCH_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
export LOADWATCH_BINARY=${LOADWATCH_BINARY:-${LOADWATCH_BUILD_DIR:-$src/build}/loadwatch}
py=${PYTHON:-$(command -v /usr/bin/python3 || command -v python3)}
[ -x "$LOADWATCH_BINARY" ] || { echo "FAIL: loadwatch binary $LOADWATCH_BINARY not built"; exit 1; }

"$py" "$src/scripts/metric-reference.py" --check

# A scratch copy of the script, the fixtures and the reference, without the rows of the drop
# counters (families that appear only when something is dropped).
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/scripts" "$tmp/tests" "$tmp/docs"
cp "$src/scripts/metric-reference.py" "$tmp/scripts/"
cp -r "$src/tests/lib" "$src/tests/fixtures" "$tmp/tests/"
grep -v '^| `loadwatch_dropped_series_total`' "$src/docs/metrics.md" >"$tmp/docs/metrics.md"
if "$py" "$tmp/scripts/metric-reference.py" --check >"$tmp/out" 2>&1; then
  echo "FAIL: --check passed with loadwatch_dropped_series_total missing"; exit 1
fi
grep -q '^+| `loadwatch_dropped_series_total`' "$tmp/out" ||
  { echo "FAIL: the diff does not name the missing family"; cat "$tmp/out"; exit 1; }
echo "ok: --check fails on a reference that lacks loadwatch_dropped_series_total"
echo PASS
