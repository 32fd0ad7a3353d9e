#!/usr/bin/env bash
# Monitoring mixin structure: the committed dashboards and rules are what dashboards/generate.py
# writes from config.yml and profiles/, dashboards/lint.py passes, and lint, the generator and
# its config loader catch seeded mistakes in a scratch copy.
set -euo pipefail
src=${LOADWATCH_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
# The system interpreter: a version-manager shim (pyenv) costs seconds per start.
py=${PYTHON:-$(command -v /usr/bin/python3 || command -v python3)}

"$py" "$src/dashboards/generate.py" --check
"$py" "$src/dashboards/lint.py" --root "$src"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# expect_lint_failure "what" "expected message (grep -F)" python-mutation
expect_lint_failure() {
  local what=$1 message=$2 mutation=$3
  rm -rf "$tmp/repo"; mkdir -p "$tmp/repo"
  cp -r "$src/dashboards" "$tmp/repo/"
  [ -f "$src/docs/metrics.md" ] && mkdir -p "$tmp/repo/docs" && cp "$src/docs/metrics.md" "$tmp/repo/docs/"
  (cd "$tmp/repo" && "$py" -c "$mutation")
  if "$py" "$tmp/repo/dashboards/lint.py" --root "$tmp/repo" >"$tmp/out" 2>&1; then
    echo "FAIL: lint passed with $what"; exit 1
  fi
  grep -qF -- "$message" "$tmp/out" || { echo "FAIL: $what: lint said"; cat "$tmp/out"; exit 1; }
  echo "ok: lint catches $what"
}

edit_json='
import json, sys
p = "dashboards/grafana/loadwatch-test-run.json"
d = json.load(open(p))
panels = [x for x in d["panels"] if x["type"] != "row"]
EDIT
json.dump(d, open(p, "w"), indent=2)
'
mutate() { echo "${edit_json/EDIT/$1}"; }

expect_lint_failure "a duplicate panel id" "panel id missing or not unique" \
  "$(mutate 'panels[1]["id"] = panels[0]["id"]')"
expect_lint_failure "a query on a fixed data source" "datasource must be" \
  "$(mutate 'panels[0]["targets"][0]["datasource"] = {"type": "prometheus", "uid": "P1809F7CD0C75ACF3"}')"
expect_lint_failure "an unknown metric" "unknown metric loadwatch_process_rss_bytes" \
  "$(mutate 'panels[0]["targets"][0]["expr"] = "loadwatch_process_rss_bytes{job=~\"\$job\", instance=~\"\$instance\", target=~\"\$target\"}"')"
expect_lint_failure "a target metric without \$target" 'lacks target=~"$target"' \
  "$(mutate 'panels[0]["targets"][0]["expr"] = "loadwatch_process_open_fds{job=~\"\$job\", instance=~\"\$instance\"}"')"
expect_lint_failure "a label the metric lacks" "has no label 'device'" \
  "$(mutate 'panels[0]["targets"][0]["expr"] = "loadwatch_process_open_fds{job=~\"\$job\", instance=~\"\$instance\", target=~\"\$target\", device=\"eth0\"}"')"
expect_lint_failure "rate() of a gauge" "rate() of gauge loadwatch_process_open_fds" \
  "$(mutate 'panels[0]["targets"][0]["expr"] = "rate(loadwatch_process_open_fds{job=~\"\$job\", instance=~\"\$instance\", target=~\"\$target\"}[1m])"')"
expect_lint_failure "rate() of a summary's quantiles" "rate() of gauge loadwatch_generator_latency_seconds" \
  "$(mutate 'panels[0]["targets"][0]["expr"] = "rate(loadwatch_generator_latency_seconds{job=~\"\$job\", instance=~\"\$instance\"}[1m])"')"
expect_lint_failure "a quantile label on a summary's _count" "has no label 'quantile'" \
  "$(mutate 'panels[0]["targets"][0]["expr"] = "rate(loadwatch_generator_latency_seconds_count{job=~\"\$job\", instance=~\"\$instance\", quantile=\"0.99\"}[1m])"')"
expect_lint_failure "overlapping panels" "overlaps" \
  "$(mutate 'panels[1]["gridPos"] = dict(panels[0]["gridPos"])')"
expect_lint_failure "a missing target variable" "needs a query variable 'target'" \
  "$(mutate 'd["templating"]["list"] = [v for v in d["templating"]["list"] if v["name"] != "target"]')"
expect_lint_failure "schemaVersion 27" "schemaVersion must be >= 36" \
  "$(mutate 'd["schemaVersion"] = 27')"
expect_lint_failure "an alert without description" "LoadwatchTargetDown: no description annotation" '
import re
p = "dashboards/rules/loadwatch.alerts.yml"
s = open(p).read()
s = s.replace("""          description: >-
            No process has matched""", """          runbook: >-
            No process has matched""", 1)
open(p, "w").write(s)'
expect_lint_failure "an example threshold that differs from the default" \
  "threshold fd_usage_ratio is 0.9, the alert default is 0.8" '
p = "dashboards/rules/thresholds.example.yml"
s = open(p).read().replace("""fd_usage_ratio
        expr: vector(0.8)""", """fd_usage_ratio
        expr: vector(0.9)""")
open(p, "w").write(s)'
expect_lint_failure "a threshold compared without scalar(max(...))" "used outside" '
p = "dashboards/rules/loadwatch.alerts.yml"
s = open(p).read().replace("> scalar(max(loadwatch:threshold:fd_usage_ratio) or vector(0.8))",
                           "> (loadwatch:threshold:fd_usage_ratio or on() vector(0.8))")
open(p, "w").write(s)'
expect_lint_failure "an alert without a not-firing test" "LoadwatchSourceDown: no test where it does not fire" '
p = "dashboards/tests/sources.test.yml"
s = open(p).read().replace("""      - eval_time: 1m  # pending
        alertname: LoadwatchSourceDown
        exp_alerts: []
""", "")
open(p, "w").write(s)'
expect_lint_failure "a metric reference that lacks a metric" \
  "Metric reference lacks loadwatch_tcp_listen_overflows_total" '
names = [l.split()[0] for l in open("dashboards/metrics.txt") if l.strip() and not l.startswith("#")]
names.remove("loadwatch_tcp_listen_overflows_total")
open("docs/metrics.md", "w").write("# x\n\n## Metric reference\n\n" + "\n".join("- `%s`" % n for n in names) + "\n\n## Next\n\nloadwatch_tcp_listen_overflows_total\n")'

# expect_generate_failure "what" "expected message (grep -F)" shell-mutation
expect_generate_failure() {
  local what=$1 message=$2 mutation=$3
  rm -rf "$tmp/repo"; mkdir -p "$tmp/repo"
  cp -r "$src/dashboards" "$tmp/repo/"
  (cd "$tmp/repo/dashboards" && eval "$mutation")
  if "$py" "$tmp/repo/dashboards/generate.py" --check >"$tmp/out" 2>&1; then
    echo "FAIL: generate.py --check passed with $what"; exit 1
  fi
  grep -qF -- "$message" "$tmp/out" || { echo "FAIL: $what: generate.py said"; cat "$tmp/out"; exit 1; }
  echo "ok: generate.py --check catches $what"
}
expect_generate_failure "a hand-edited generated alert file" "out of date" \
  "sed -i 's/^        for: 5m\$/        for: 7m/' rules/loadwatch.alerts.yml"
expect_generate_failure "a profile's rules not regenerated" "rules/short-soak/loadwatch.alerts.yml" \
  "sed -i 's/^    trend: 5m\$/    trend: 10m/' profiles/short-soak.yml"
expect_generate_failure "rules left behind by a removed profile" "rules/gone/loadwatch.rules.yml" \
  "mkdir rules/gone && cp rules/loadwatch.rules.yml rules/gone/"
expect_generate_failure "a misspelt profile key" "unknown key windows.trned" \
  "sed -i 's/^    trend: 5m\$/    trned: 5m/' profiles/short-soak.yml"
expect_generate_failure "a for: of an alert that does not exist" "unknown key for.LoadwatchNoSuchAlert" \
  "printf '    LoadwatchNoSuchAlert: 1m\n' >>profiles/short-soak.yml"
expect_generate_failure "a duration Prometheus does not take" "'5 min' is not a duration" \
  "sed -i 's/^    trend: 5m\$/    trend: 5 min/' profiles/short-soak.yml"
expect_generate_failure "a zero window" "windows.rate must be longer than 0s" \
  "sed -i 's/^    rate: 1m\$/    rate: 0s/' config.yml"
expect_generate_failure "an alert without a for: in config.yml" "for.LoadwatchSourceDown missing" \
  "sed -i '/^    LoadwatchSourceDown: 1m\$/d' config.yml"
expect_generate_failure "a for: in config.yml of an alert that does not exist" \
  "for: of alerts that do not exist: LoadwatchNoSuchAlert" \
  "sed -i 's/^  for:\$/  for:\n    LoadwatchNoSuchAlert: 1m/' config.yml"

# And a metric reference that uses compact brace forms passes.
rm -rf "$tmp/repo"; mkdir -p "$tmp/repo/docs"; cp -r "$src/dashboards" "$tmp/repo/"
(cd "$tmp/repo" && "$py" -c '
names = [l.split()[0] for l in open("dashboards/metrics.txt") if l.strip() and not l.startswith("#")]
net = [n for n in names if n.startswith("loadwatch_network_")]
rest = [n for n in names if n not in net]
open("docs/metrics.md", "w").write("# x\n\n## Metric reference\n\n| metric |\n| --- |\n"
    + "".join("| `%s` |\n" % n for n in rest)
    + "| `loadwatch_network_{receive,transmit}_{bytes,packets,drop,errors}_total{device}` |\n")')
"$py" "$tmp/repo/dashboards/lint.py" --root "$tmp/repo" >/dev/null \
  || { echo "FAIL: lint rejects a complete metric reference"; exit 1; }
echo "ok: lint accepts a complete metric reference (brace forms expanded)"
echo "PASS"
