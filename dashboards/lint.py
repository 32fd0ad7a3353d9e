#!/usr/bin/env python3
"""Structural lint of the loadwatch mixin (dashboards/). Python stdlib and python3-yaml.

    python3 dashboards/lint.py [--root REPO_ROOT]

Checks, printing one "path: problem" line each and exiting 1 if there is any:
  dashboards  schemaVersion >= 36, uid = file name, unique uids and panel ids, no overlapping
              panels, the datasource / job / instance / target variables, every panel, query,
              annotation and variable on the ${datasource} variable, every selector scoped by
              job=~"$job", instance=~"$instance" (and target=~"$target" for target metrics).
  metrics     every metric a panel, rule or alert reads is in metrics.txt (loadwatch's metric
              table) or is a recording rule of rules/; label matchers name labels the metric
              has; rate()/increase() only on counters, deriv()/predict_linear() only on gauges;
              every name in metrics.txt appears in the "Metric reference" of docs/metrics.md once
              there is one.
  rules       in rules/ and every profile's rules/<profile>/: level:metric:operations record
              names; alerts with a severity label (warning or critical), a summary and a
              description; every threshold written as
              scalar(max(loadwatch:threshold:NAME) or vector(DEFAULT)), listed with the same
              default in rules/thresholds.example.yml, overridden in
              tests/thresholds.override.yml and documented in dashboards/README.md.
  tests       every alert has a promtool test where it fires and one where it does not; every
              alert of a profile has a test on that profile's rules where it fires.
"""

import argparse
import json
import pathlib
import re
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import promql  # noqa: E402
import yaml  # noqa: E402

SEVERITIES = {"warning", "critical"}
COUNTER_FUNCS = {"rate", "irate", "increase", "resets"}
GAUGE_FUNCS = {"deriv", "predict_linear", "delta", "idelta"}
SCRAPE_LABELS = {"job", "instance"}
THRESHOLD_RE = re.compile(
    r"scalar\(max\(loadwatch:threshold:([a-z0-9_]+)\) or vector\(([-+0-9.e]+)\)\)")
RECORD_RE = re.compile(r"^([a-z]+(?:_[a-z]+)*):(loadwatch_[a-z0-9_]+):([a-z0-9_]+)$")


class Lint:
    def __init__(self, root):
        self.root = root
        self.mixin = root / "dashboards"
        self.problems = []
        self.metrics = {}  # name -> (type, labels)
        self.summary_parts = {}  # NAME_sum / NAME_count of a summary -> (type, labels)
        self.records = {}  # record name -> level labels
        self.thresholds = {}  # NAME -> default (float)

    def problem(self, path, msg):
        try:
            path = path.relative_to(self.root)
        except ValueError:
            pass
        self.problems.append(f"{path}: {msg}")

    # -- inputs -------------------------------------------------------------------------------
    def load_metrics(self):
        path = self.mixin / "metrics.txt"
        for n, line in enumerate(path.read_text().splitlines(), 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            parts = line.split()
            if len(parts) != 3 or parts[1] not in ("counter", "gauge", "summary") \
                    or not re.fullmatch(r"loadwatch_[a-z0-9_]+", parts[0]):
                self.problem(path, f"line {n}: expected 'NAME counter|gauge|summary LABELS'")
                continue
            if parts[0] in self.metrics:
                self.problem(path, f"line {n}: {parts[0]} listed twice")
            if (parts[1] == "counter") != parts[0].endswith("_total"):
                self.problem(path, f"line {n}: {parts[0]}: counters and only counters end in _total")
            labels = set() if parts[2] == "-" else set(parts[2].split(","))
            if parts[1] == "summary":
                # The quantile series are gauges; _sum and _count are counters without quantile.
                if "quantile" not in labels:
                    self.problem(path, f"line {n}: {parts[0]}: a summary has a quantile label")
                self.metrics[parts[0]] = ("gauge", labels)
                self.summary_parts[parts[0] + "_sum"] = ("counter", labels - {"quantile"})
                self.summary_parts[parts[0] + "_count"] = ("counter", labels - {"quantile"})
                continue
            self.metrics[parts[0]] = (parts[1], labels)

    def load_yaml(self, path):
        try:
            return yaml.safe_load(path.read_text())
        except (OSError, yaml.YAMLError) as e:
            self.problem(path, f"cannot read: {e}")
            return None

    def rule_groups(self, path):
        doc = self.load_yaml(path)
        if not isinstance(doc, dict) or not isinstance(doc.get("groups"), list):
            self.problem(path, "expected a 'groups:' list")
            return []
        return doc["groups"]

    # -- expressions --------------------------------------------------------------------------
    def check_expr(self, path, where, expr, scoped=False):
        """Metric names, label matchers and counter/gauge functions of one expression; with
        scoped=True also the dashboard variables on every selector."""
        try:
            sels = promql.selectors(expr)
        except promql.PromQLError as e:
            self.problem(path, f"{where}: {e}")
            return
        for s in sels:
            if s.name is None:
                if not any(m[0] == "__name__" for m in s.matchers):
                    self.problem(path, f"{where}: selector without a metric name")
                continue
            if s.name in self.metrics or s.name in self.summary_parts:
                mtype, labels = self.metrics.get(s.name) or self.summary_parts[s.name]
                allowed = labels | SCRAPE_LABELS
                target_scoped = "target" in labels
                if s.function in COUNTER_FUNCS and mtype != "counter":
                    self.problem(path, f"{where}: {s.function}() of gauge {s.name}")
                if s.function in GAUGE_FUNCS and mtype != "gauge":
                    self.problem(path, f"{where}: {s.function}() of counter {s.name}")
            elif s.name in self.records:
                allowed = self.records[s.name] | SCRAPE_LABELS
                target_scoped = "target" in self.records[s.name]
            elif s.name.startswith("loadwatch:threshold:") and not scoped:
                allowed, target_scoped = set(), False
            else:
                self.problem(path, f"{where}: unknown metric {s.name} (not in metrics.txt, not a "
                                   f"recording rule)")
                continue
            for label, _, _ in s.matchers:
                if label not in allowed:
                    self.problem(path, f"{where}: {s.name} has no label {label!r}")
            if scoped:
                need = [("job", "$job"), ("instance", "$instance")]
                if target_scoped:
                    need.append(("target", "$target"))
                for label, var in need:
                    if (label, "=~", var) not in s.matchers:
                        self.problem(path, f'{where}: {s.name} lacks {label}=~"{var}"')

    # -- rules --------------------------------------------------------------------------------
    def rule_dirs(self):
        """rules/ (the default config) and rules/<profile>/ of each profile."""
        rules = self.mixin / "rules"
        return [rules] + sorted(p for p in rules.iterdir() if p.is_dir())

    def load_records(self, rules_dir):
        path = rules_dir / "loadwatch.rules.yml"
        self.records = {}
        bases = {n[:-len("_total")] if n.endswith("_total") else n for n in self.metrics}
        for group in self.rule_groups(path):
            for rule in group.get("rules") or []:
                name = rule.get("record")
                if not name:
                    self.problem(path, f"group {group.get('name')}: rule without 'record'")
                    continue
                m = RECORD_RE.match(name)
                if not m:
                    self.problem(path, f"{name}: not level:metric:operations")
                    continue
                if not any(m.group(2) == b or m.group(2).startswith(b + "_") for b in bases):
                    self.problem(path, f"{name}: metric part {m.group(2)} is no loadwatch metric")
                if name in self.records:
                    self.problem(path, f"{name}: recorded twice")
                self.records[name] = set(m.group(1).split("_"))
        # Check expressions once every record name is known (rules may read earlier rules).
        for group in self.rule_groups(path):
            for rule in group.get("rules") or []:
                if rule.get("record"):
                    self.check_expr(path, rule["record"], rule.get("expr") or "")

    def check_alerts(self, rules_dir):
        path = rules_dir / "loadwatch.alerts.yml"
        alerts = []
        for group in self.rule_groups(path):
            for rule in group.get("rules") or []:
                name = rule.get("alert")
                if not name:
                    self.problem(path, f"group {group.get('name')}: rule without 'alert'")
                    continue
                if name in alerts:
                    self.problem(path, f"{name}: defined twice")
                alerts.append(name)
                expr = rule.get("expr") or ""
                self.check_expr(path, name, expr)
                sev = (rule.get("labels") or {}).get("severity")
                if sev not in SEVERITIES:
                    self.problem(path, f"{name}: severity label must be one of {sorted(SEVERITIES)}")
                ann = rule.get("annotations") or {}
                for key in ("summary", "description"):
                    if not (ann.get(key) or "").strip():
                        self.problem(path, f"{name}: no {key} annotation")
                flat = re.sub(r"\s+", " ", expr)
                flat = re.sub(r"\( ", "(", re.sub(r" \)", ")", flat))
                found = THRESHOLD_RE.findall(flat)
                uses = len(re.findall(r"\bloadwatch:threshold:[a-z0-9_]+\b", flat))
                if uses != len(found):
                    self.problem(path, f"{name}: loadwatch:threshold: used outside "
                                       f"scalar(max(loadwatch:threshold:NAME) or vector(DEFAULT))")
                for tname, default in found:
                    value = float(default)
                    if tname in self.thresholds and self.thresholds[tname] != value:
                        self.problem(path, f"{name}: threshold {tname} has two defaults")
                    self.thresholds[tname] = value
        return alerts

    def check_thresholds(self):
        example = self.mixin / "rules" / "thresholds.example.yml"
        defined = {}
        for group in self.rule_groups(example):
            for rule in group.get("rules") or []:
                rec = rule.get("record") or ""
                m = re.fullmatch(r"loadwatch:threshold:([a-z0-9_]+)", rec)
                v = re.fullmatch(r"\s*vector\(([-+0-9.e]+)\)\s*", rule.get("expr") or "")
                if not m or not v:
                    self.problem(example, f"{rec or '?'}: expected record loadwatch:threshold:NAME "
                                          f"with expr vector(NUMBER)")
                    continue
                defined[m.group(1)] = float(v.group(1))
        for name, default in sorted(self.thresholds.items()):
            if name not in defined:
                self.problem(example, f"threshold {name} missing")
            elif defined[name] != default:
                self.problem(example, f"threshold {name} is {defined[name]:g}, the alert default "
                                      f"is {default:g}")
        for name in sorted(set(defined) - set(self.thresholds)):
            self.problem(example, f"threshold {name} is used by no alert")
        override = self.mixin / "tests" / "thresholds.override.yml"
        overridden = set()
        for group in self.rule_groups(override):
            for rule in group.get("rules") or []:
                overridden.add((rule.get("record") or "").replace("loadwatch:threshold:", ""))
        for name in sorted(set(self.thresholds) - overridden):
            self.problem(override, f"threshold {name} is not overridden in the override test")
        readme = self.mixin / "README.md"
        text = readme.read_text() if readme.exists() else ""
        for name in sorted(self.thresholds):
            if f"loadwatch:threshold:{name}" not in text:
                self.problem(readme, f"threshold loadwatch:threshold:{name} is not documented")

    def check_tests(self, alerts_by_dir):
        """alerts_by_dir: {rules dir: [alert names]}. The default rules need a firing and a
        quiet test per alert, a profile's rules a firing test per alert."""
        firing, quiet = {}, {}  # rules dir -> alert names
        tests = sorted((self.mixin / "tests").glob("*.test.yml"))
        if not tests:
            self.problem(self.mixin / "tests", "no *.test.yml files")
        for path in tests:
            doc = self.load_yaml(path)
            if not isinstance(doc, dict):
                continue
            dirs = set()
            for f in doc.get("rule_files") or []:
                rule_file = (path.parent / f).resolve()
                if not rule_file.exists():
                    self.problem(path, f"rule file {f} does not exist")
                elif rule_file.name == "loadwatch.alerts.yml":
                    dirs.add(rule_file.parent)
            known = set().union(*(alerts_by_dir.get(d, []) for d in dirs))
            for test in doc.get("tests") or []:
                for case in test.get("alert_rule_test") or []:
                    name = case.get("alertname")
                    if name not in known:
                        self.problem(path, f"test of unknown alert {name}")
                    for d in dirs:
                        (firing if case.get("exp_alerts") else quiet).setdefault(d, set()).add(name)
        default = self.mixin / "rules"
        for rules_dir, alerts in alerts_by_dir.items():
            where = rules_dir.relative_to(self.mixin)
            for name in alerts:
                if name not in firing.get(rules_dir, set()):
                    self.problem(self.mixin / "tests", f"{name}: no test where it fires "
                                                       f"(with {where}/loadwatch.alerts.yml)")
                if rules_dir == default and name not in quiet.get(rules_dir, set()):
                    self.problem(self.mixin / "tests", f"{name}: no test where it does not fire")

    # -- dashboards ---------------------------------------------------------------------------
    def check_datasource(self, path, where, ds):
        if not isinstance(ds, dict) or ds.get("uid") != "${datasource}" \
                or ds.get("type") != "prometheus":
            self.problem(path, f'{where}: datasource must be {{"type": "prometheus", '
                               f'"uid": "${{datasource}}"}}, got {json.dumps(ds)}')

    def check_dashboard(self, path, uids):
        try:
            d = json.loads(path.read_text())
        except (OSError, ValueError) as e:
            self.problem(path, f"cannot read: {e}")
            return
        if not isinstance(d.get("schemaVersion"), int) or d["schemaVersion"] < 36:
            self.problem(path, "schemaVersion must be >= 36")
        if d.get("uid") != path.stem:
            self.problem(path, f"uid {d.get('uid')!r} must equal the file name {path.stem!r}")
        if d.get("uid") in uids:
            self.problem(path, f"uid {d.get('uid')} used twice")
        uids.add(d.get("uid"))
        if not str(d.get("title", "")).startswith("loadwatch / "):
            self.problem(path, "title must start with 'loadwatch / '")

        variables = {v.get("name"): v for v in d.get("templating", {}).get("list", [])}
        dsvar = variables.get("datasource")
        if not dsvar or dsvar.get("type") != "datasource" or dsvar.get("query") != "prometheus":
            self.problem(path, "needs a 'datasource' variable of type datasource, query prometheus")
        for name in ("job", "instance", "target"):
            v = variables.get(name)
            if not v or v.get("type") != "query":
                self.problem(path, f"needs a query variable {name!r}")
                continue
            self.check_datasource(path, f"variable {name}", v.get("datasource"))
            m = re.fullmatch(r"label_values\((.+),\s*(\w+)\)", v.get("query") or "")
            if not m or m.group(2) != name:
                self.problem(path, f"variable {name}: query must be label_values(SELECTOR, {name})")
            else:
                self.check_expr(path, f"variable {name}", m.group(1))

        for ann in d.get("annotations", {}).get("list", []):
            where = f"annotation {ann.get('name')!r}"
            self.check_datasource(path, where, ann.get("datasource"))
            self.check_expr(path, where, ann.get("expr") or "", scoped=True)

        ids, boxes = set(), []
        panels = list(d.get("panels", []))
        for p in list(panels):
            panels.extend(p.get("panels", []))  # panels of collapsed rows
        for p in panels:
            where = f"panel {p.get('id')} {p.get('title')!r}"
            pid = p.get("id")
            if not isinstance(pid, int) or pid in ids:
                self.problem(path, f"{where}: panel id missing or not unique")
            ids.add(pid)
            g = p.get("gridPos") or {}
            if not all(isinstance(g.get(k), int) for k in "hwxy") or g["x"] + g["w"] > 24:
                self.problem(path, f"{where}: gridPos must fit 24 columns")
            else:
                for other, og in boxes:
                    if g["x"] < og["x"] + og["w"] and og["x"] < g["x"] + g["w"] \
                            and g["y"] < og["y"] + og["h"] and og["y"] < g["y"] + g["h"]:
                        self.problem(path, f"{where}: overlaps {other}")
                boxes.append((where, g))
            if p.get("type") == "row":
                continue
            if not (p.get("title") and p.get("description")):
                self.problem(path, f"{where}: needs a title and a description")
            self.check_datasource(path, where, p.get("datasource"))
            targets = p.get("targets") or []
            if not targets:
                self.problem(path, f"{where}: no queries")
            refs = set()
            for t in targets:
                self.check_datasource(path, f"{where} query {t.get('refId')}", t.get("datasource"))
                if t.get("refId") in refs:
                    self.problem(path, f"{where}: refId {t.get('refId')} used twice")
                refs.add(t.get("refId"))
                self.check_expr(path, f"{where} query {t.get('refId')}", t.get("expr") or "",
                                scoped=True)

    # -- metric reference (docs/metrics.md) ----------------------------------------------------
    def check_metric_reference(self):
        reference = self.root / "docs" / "metrics.md"
        if not reference.exists():
            return
        lines = reference.read_text().splitlines()
        start = next((n for n, l in enumerate(lines)
                      if re.match(r"#+\s.*metric reference", l, re.I)), None)
        if start is None:
            return
        level = len(lines[start]) - len(lines[start].lstrip("#"))
        end = next((n for n in range(start + 1, len(lines))
                    if re.match(r"#{1,%d}\s" % level, lines[n])), len(lines))
        section = "\n".join(lines[start:end])
        names = set()
        for tok in re.findall(r"loadwatch_[A-Za-z0-9_{},]*", section):
            tok = tok.rstrip(",")
            names.update(_expand_braces(tok))
            # "name{label,label}": a trailing brace group may be labels, not name parts.
            names.update(_expand_braces(re.sub(r"\{[^{}]*\}$", "", tok)))
        for name in self.metrics:
            if name not in names and name not in section:
                self.problem(reference, f"Metric reference lacks {name} (listed in dashboards/metrics.txt)")

    def run(self):
        self.load_metrics()
        alerts_by_dir, default_records = {}, {}
        for rules_dir in self.rule_dirs():
            self.load_records(rules_dir)
            alerts_by_dir[rules_dir.resolve()] = self.check_alerts(rules_dir)
            default_records = default_records or self.records
        self.records = default_records  # the dashboards read the default records
        self.check_thresholds()
        self.check_tests(alerts_by_dir)
        uids = set()
        dashboards = sorted((self.mixin / "grafana").glob("*.json"))
        if not dashboards:
            self.problem(self.mixin / "grafana", "no dashboards")
        for path in dashboards:
            self.check_dashboard(path, uids)
        self.check_metric_reference()
        return self.problems


def _expand_braces(s):
    m = re.search(r"\{([^{}]*)\}", s)
    if not m:
        return {s}
    out = set()
    for alt in m.group(1).split(","):
        out |= _expand_braces(s[:m.start()] + alt + s[m.end():])
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", type=pathlib.Path,
                    default=pathlib.Path(__file__).resolve().parent.parent,
                    help="repository root (holds dashboards/ and docs/metrics.md)")
    args = ap.parse_args()
    problems = Lint(args.root.resolve()).run()
    for p in problems:
        print(p)
    if problems:
        print(f"lint: {len(problems)} problem(s)", file=sys.stderr)
        return 1
    print("lint: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
