#!/usr/bin/env python3
"""`report --baseline` judges with compare's rules (--max/--min, the default without) and the
HTML page shows the comparison as a table of the same rows `compare` prints."""
import html.parser
import json
import os
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from lwtest import BINARY  # noqa: E402

CSV = "users,throughput,p95\n1,100,10\n2,190,11\n4,350,13\n8,400,30\n"


class Tables(html.parser.HTMLParser):
    """The rows of every table inside <div id="comparison">."""

    def __init__(self):
        super().__init__()
        self.depth, self.rows, self.cell = 0, [], None

    def handle_starttag(self, tag, attrs):
        if tag == "div" and ("id", "comparison") in attrs:
            self.depth = 1
        elif self.depth and tag == "div":
            self.depth += 1
        elif self.depth and tag == "tr":
            self.rows.append([])
        elif self.depth and tag in ("td", "th"):
            self.cell = ""

    def handle_endtag(self, tag):
        if self.depth and tag == "div":
            self.depth -= 1
        elif self.depth and tag in ("td", "th") and self.cell is not None:
            self.rows[-1].append(self.cell)
            self.cell = None

    def handle_data(self, data):
        if self.cell is not None:
            self.cell += data


class ReportBaseline(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.addCleanup(self.dir.cleanup)
        csv = self.path("steps.csv")
        with open(csv, "w") as f:
            f.write(CSV)
        base = json.loads(self.lw("capacity", csv, "--format", "json").stdout)
        current = json.loads(json.dumps(base))
        for p in current["phases"]:  # this build: p95 10 % higher at every step
            p["p95_seconds"] *= 1.10
        for name, rep in (("base.json", base), ("cur.json", current)):
            with open(self.path(name), "w") as f:
                json.dump(rep, f)

    def path(self, name):
        return os.path.join(self.dir.name, name)

    def lw(self, *args):
        return subprocess.run([BINARY, *args], capture_output=True, text=True, timeout=30)

    def page_rows(self, *rules):
        p = self.lw("report", "--file", self.path("cur.json"), "--baseline", self.path("base.json"),
                    "--format", "html", *rules)
        t = Tables()
        t.feed(p.stdout)
        return p.returncode, t.rows

    def test_the_default_rule_passes_a_10_percent_rise(self):
        code, rows = self.page_rows()
        self.assertEqual(code, 0)
        self.assertTrue(any("p95 <= base +20%" in r for r in rows), rows)

    def test_the_cli_rules_judge_and_the_page_shows_them_as_a_table(self):
        code, rows = self.page_rows("--max", "p95=+5%")
        self.assertEqual(code, 1, "a 10 % rise against a 5 % limit is a regression")
        header = rows[0]
        self.assertIn("Verdict", header)
        judged = [dict(zip(header, r)) for r in rows[1:]]
        self.assertTrue(judged)
        self.assertTrue(all(r["Rule"] == "p95 <= base +5%" for r in judged), judged)
        self.assertIn("REGRESSION", [r["Verdict"] for r in judged])
        # The same verdict as compare's own exit code for the same rule.
        c = self.lw("compare", self.path("base.json"), self.path("cur.json"), "--max", "p95=+5%")
        self.assertEqual(c.returncode, 1, c.stdout + c.stderr)

    def test_a_bad_rule_is_bad_input(self):
        p = self.lw("report", "--file", self.path("cur.json"), "--baseline",
                    self.path("base.json"), "--max", "p95=lots")
        self.assertEqual(p.returncode, 2)
        self.assertIn("bad rule", p.stderr)


if __name__ == "__main__":
    unittest.main()
