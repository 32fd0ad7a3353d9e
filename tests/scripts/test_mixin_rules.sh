#!/usr/bin/env bash
# Monitoring mixin rules: `promtool check rules` on every rule file (every profile's too),
# `promtool test rules` on every dashboards/tests/*.test.yml, then mutation checks: with any one
# alert renamed away the unit tests must fail (each alert really has a test that sees it
# fire), and so must the restart tests with either half of the current-processes condition
# removed.
set -euo pipefail
src=${LOADWATCH_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
mixin="$src/dashboards"
command -v promtool >/dev/null || { echo "FAIL: promtool not found (scripts/install-deps test)"; exit 1; }

cd "$mixin"
alert_files=(rules/loadwatch.alerts.yml rules/*/loadwatch.alerts.yml)
test_rule_files=()
for f in tests/*.yml; do [[ $f == *.test.yml ]] || test_rule_files+=("$f"); done
promtool check rules rules/*.yml rules/*/*.yml "${test_rule_files[@]}"
promtool test rules tests/*.test.yml

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# restore: a fresh copy of the rules and tests in $tmp
restore() { rm -rf "$tmp/rules" "$tmp/tests"; cp -r rules tests "$tmp/"; }
alerts=$(sed -n 's/^ *- alert: \(Loadwatch[A-Za-z]*\)$/\1/p' rules/loadwatch.alerts.yml)
[ "$(echo "$alerts" | wc -l)" -ge 14 ] || { echo "FAIL: expected at least 14 alerts"; exit 1; }
for a in $alerts; do
  restore
  for f in "${alert_files[@]}"; do
    sed "s/^\( *- alert: \)$a\$/\1${a}Renamed/" "$f" >"$tmp/$f"
  done
  mapfile -t files < <(grep -l "alertname: $a\$" tests/*.test.yml)
  [ ${#files[@]} -gt 0 ] || { echo "FAIL: no test file mentions $a"; exit 1; }
  if (cd "$tmp" && promtool test rules "${files[@]}" >/dev/null 2>&1); then
    echo "FAIL: the unit tests still pass with $a renamed away: it has no firing test"
    exit 1
  fi
done
echo "mutation check: every one of $(echo "$alerts" | wc -l) alerts is seen firing by a test"

# The trend rules consider only the target's current processes; each half of that condition
# (the start time old enough, and unchanged in the window) must be needed by some test.
for half in 'and (time() - loadwatch_process_start_time_seconds' \
            'and (changes(loadwatch_process_start_time_seconds'; do
  restore
  for f in rules/loadwatch.rules.yml rules/loadwatch.alerts.yml; do
    grep -qF -- "$half" "$f" || { echo "FAIL: $f lacks '$half'"; exit 1; }
    grep -vF -- "$half" "$f" >"$tmp/$f"
  done
  if (cd "$tmp" && promtool test rules tests/targets.test.yml tests/recording.test.yml \
        >/dev/null 2>&1); then
    echo "FAIL: the restart tests still pass without '$half ...'"
    exit 1
  fi
done
echo "mutation check: both halves of the current-processes condition are needed"
echo "PASS"
