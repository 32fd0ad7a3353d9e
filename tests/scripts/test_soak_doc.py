"""docs/soak.md, the worked soak run, is checked as written: its loadwatch config passes
`loadwatch --config.check`; its prometheus.yml with its thresholds file and the short-soak rules
it copies passes `promtool check config`; and with those files a slow leak the default
thresholds let pass fires within the 20-minute run, and the query the guide's CI step runs
lists it afterwards."""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from lwtest import BINARY, SOURCE_DIR  # noqa: E402
import lwtest  # noqa: E402

DOC = os.path.join(SOURCE_DIR, "docs", "soak.md")
RULES = os.path.join(SOURCE_DIR, "dashboards", "rules", "short-soak")

# 23 GiB available and 3 MiB/min of RSS growth (90 MiB per 30 minutes, under the default
# 100 MiB; 720 MiB in 4 hours, far from the available memory): quiet with the defaults.
# Sampled every 15s; the app starts with the run.
UNIT_TEST = """
rule_files: [%(rules)s]
evaluation_interval: 15s
tests:
  - interval: 15s
    input_series:
      - series: 'loadwatch_process_start_time_seconds{job="loadwatch",instance="127.0.0.1:9797",target="app"}'
        values: '0x80'
      - series: 'loadwatch_process_resident_memory_bytes{job="loadwatch",instance="127.0.0.1:9797",target="app"}'
        values: '104857600+786432x80'
      - series: 'loadwatch_memory_available_bytes{job="loadwatch",instance="127.0.0.1:9797"}'
        values: '24696061952x80'
    promql_expr_test:
      - expr: ALERTS{alertname="LoadwatchMemoryLeakSuspected", alertstate="firing"}
        eval_time: 10m
        exp_samples: %(firing)s
      - expr: %(ci_query)s
        eval_time: 20m
        exp_samples: %(fired)s
"""


def blocks(text):
    """{path: content} of the fenced blocks whose first line is "# /etc/..."."""
    return {m.group(2): m.group(1) for m in
            re.finditer(r"```(?:yaml|sh)\n(# (/etc/\S+)\n.*?)```", text, re.S)}


class SoakDoc(unittest.TestCase):
    def setUp(self):
        with open(DOC) as f:
            self.doc = f.read()
        self.files = blocks(self.doc)
        self.tmp = tempfile.mkdtemp()

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def write(self, path):
        self.assertIn(path, self.files, "docs/soak.md no longer shows " + path)
        out = os.path.join(self.tmp, os.path.basename(path))
        with open(out, "w") as f:
            f.write(self.files[path])
        return out

    def test_loadwatch_config_checks(self):
        cfg = self.write("/etc/loadwatch/loadwatch.yml")
        p = subprocess.run([BINARY, "--config.file=" + cfg, "--config.check"],
                           capture_output=True, text=True, timeout=30)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("--collector.textfile.directory=", self.files["/etc/default/loadwatch"])

    def prometheus_dir(self):
        self.assertIn("/usr/share/loadwatch/rules/short-soak/loadwatch.rules.yml", self.doc)
        for name in ("loadwatch.rules.yml", "loadwatch.alerts.yml"):
            shutil.copy(os.path.join(RULES, name), self.tmp)
        self.write("/etc/prometheus/thresholds.yml")
        return self.write("/etc/prometheus/prometheus.yml")

    def test_prometheus_config_and_rules_check(self):
        config = self.prometheus_dir()
        p = subprocess.run(["promtool", "check", "config", config], capture_output=True,
                           text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("3 rule files found", p.stdout)

    def run_unit_test(self, thresholds):
        self.prometheus_dir()
        rules = ["loadwatch.rules.yml", "loadwatch.alerts.yml"] + thresholds
        m = re.search(r"promtool query instant \S+ \\\n\s*'([^']+)'", self.doc)
        self.assertTrue(m, "docs/soak.md: the CI query is not where the test looks for it")
        firing = ('[{labels: \'ALERTS{alertname="LoadwatchMemoryLeakSuspected",'
                  'alertstate="firing",severity="warning",job="loadwatch",'
                  'instance="127.0.0.1:9797",target="app"}\', value: 1}]')
        fired = ('[{labels: \'{alertname="LoadwatchMemoryLeakSuspected",severity="warning"}\','
                 ' value: 1}]')
        fires = bool(thresholds)
        test = UNIT_TEST % {"rules": ", ".join(rules), "ci_query": "'%s'" % m.group(1),
                            "firing": firing if fires else "[]",
                            "fired": fired if fires else "[]"}
        path = os.path.join(self.tmp, "soak.test.yml")
        with open(path, "w") as f:
            f.write(test)
        return subprocess.run(["promtool", "test", "rules", path], capture_output=True,
                              text=True, timeout=60)

    def test_thresholds_make_a_slow_leak_fire_and_the_ci_query_list_it(self):
        p = self.run_unit_test(["thresholds.yml"])
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)

    def test_without_the_thresholds_file_the_slow_leak_stays_quiet(self):
        p = self.run_unit_test([])
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)


if __name__ == "__main__":
    lwtest.main()
