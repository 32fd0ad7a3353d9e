#!/usr/bin/env bash
# Monitoring mixin rules: `promtool check rules` on every rule file, `promtool test rules` on
# every dashboards/tests/*.test.yml, then a mutation check: with any one alert renamed away,
# the unit tests must fail (each alert really has a test that sees it fire).
set -euo pipefail
src=${LOADWATCH_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
mixin="$src/dashboards"
command -v promtool >/dev/null || { echo "FAIL: promtool not found (scripts/install-deps test)"; exit 1; }

cd "$mixin"
test_rule_files=()
for f in tests/*.yml; do [[ $f == *.test.yml ]] || test_rule_files+=("$f"); done
promtool check rules rules/*.yml "${test_rule_files[@]}"
promtool test rules tests/*.test.yml

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp -r rules tests "$tmp/"
alerts=$(sed -n 's/^ *- alert: \(Loadwatch[A-Za-z]*\)$/\1/p' rules/loadwatch.alerts.yml)
[ "$(echo "$alerts" | wc -l)" -ge 14 ] || { echo "FAIL: expected at least 14 alerts"; exit 1; }
for a in $alerts; do
  sed "s/^\( *- alert: \)$a\$/\1${a}Renamed/" rules/loadwatch.alerts.yml >"$tmp/rules/loadwatch.alerts.yml"
  mapfile -t files < <(grep -l "alertname: $a\$" tests/*.test.yml)
  [ ${#files[@]} -gt 0 ] || { echo "FAIL: no test file mentions $a"; exit 1; }
  if (cd "$tmp" && promtool test rules "${files[@]}" >/dev/null 2>&1); then
    echo "FAIL: the unit tests still pass with $a renamed away: it has no firing test"
    exit 1
  fi
done
echo "mutation check: every one of $(echo "$alerts" | wc -l) alerts is seen firing by a test"
echo "PASS"
