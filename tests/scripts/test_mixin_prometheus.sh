#!/usr/bin/env bash
# Monitoring mixin against a real Prometheus 2.42 and a real loadwatch on loopback: alerts go
# pending/firing under real conditions, every dashboard query returns data, the run and phase
# annotations show an open run, and `report --prometheus` matches `report --url` for it.
# See dashboards/tests/prometheus_integration.py. Bounded: the script stops itself after 170s.
set -euo pipefail
src=${LOADWATCH_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
bin=${LOADWATCH_BINARY:-${LOADWATCH_BUILD_DIR:-$src/build}/loadwatch}
for tool in prometheus promtool; do
  command -v "$tool" >/dev/null || { echo "FAIL: $tool not found (scripts/install-deps test)"; exit 1; }
done
[ -x "$bin" ] || { echo "FAIL: loadwatch binary $bin not built"; exit 1; }
py=${PYTHON:-$(command -v /usr/bin/python3 || command -v python3)}
exec timeout -k 5 170 "$py" "$src/dashboards/tests/prometheus_integration.py" \
  --binary "$bin" --source-dir "$src"
