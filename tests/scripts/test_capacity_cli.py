"""`loadwatch capacity` and `loadwatch compare` run as a CI job runs them: the real binary on
files, checking the output, the exit codes (0 / 1 / 2) and the JUnit XML."""
import json
import os
import random
import subprocess
import sys
import tempfile
import unittest
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from lwtest import BINARY  # noqa: E402
import lwtest  # noqa: E402

K = 50          # requests the server holds in service at once
SERVICE = 0.020  # seconds each request takes
STEPS = list(range(10, 110, 10))


def wrk_sweep(slowdown=1.0, seed=1):
    """Lines as the wrk-and-awk script writes them (`print connections,qps,avg_latency,rate`)
    for a closed-loop server with K slots: throughput min(c, K)/service, latency c/throughput."""
    rng = random.Random(seed)
    lines = []
    for c in STEPS:
        qps = min(c, K) / (SERVICE * slowdown) * (1 + rng.gauss(0, 0.01))
        latency_ms = c / qps * 1000
        success = 100.0 if c <= 80 else 99.5
        lines.append("%d %.2f %.2f %.2f" % (c, qps, latency_ms, success))
    return "\n".join(lines) + "\n"


def run(*args, stdin=None):
    p = subprocess.run([BINARY] + list(args), input=stdin, capture_output=True, text=True,
                       timeout=60)
    return p.returncode, p.stdout, p.stderr


class CapacityCli(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.addCleanup(self.dir.cleanup)

    def write(self, name, text):
        path = os.path.join(self.dir.name, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    def report(self, name, csv_text):
        """A saved report, as a CI job keeps the baseline: capacity --format json."""
        code, out, err = run("capacity", self.write(name + ".dat", csv_text), "--format", "json")
        self.assertEqual(code, 0, err)
        return self.write(name + ".json", out)

    def test_capacity_on_a_wrk_sweep_finds_the_knee_and_fits_the_usl(self):
        path = self.write("echo.dat", wrk_sweep())
        code, out, err = run("capacity", path)
        self.assertEqual(code, 0, err)
        self.assertEqual(err, "")
        for text in ("Capacity report", "Phases", "Knee", "Universal Scalability Law",
                     "Bottleneck", "Kneedle on throughput against users, sensitivity S = 1"):
            self.assertIn(text, out)
        # One table row per step, in the order of the file.
        rows = [l.split()[0] for l in out.splitlines() if l.split() and l.split()[0].isdigit()]
        self.assertEqual(rows, [str(c) for c in STEPS])

        code, out, err = run("capacity", path, "--format", "json")
        self.assertEqual(code, 0, err)
        report = json.loads(out)
        self.assertEqual(report["format"], "loadwatch-capacity-report")
        self.assertEqual(len(report["phases"]), len(STEPS))
        self.assertLessEqual(abs(report["knee"]["users"] - K), 10)
        self.assertEqual(report["knee"]["sensitivity"], 1.0)
        self.assertAlmostEqual(report["phases"][0]["p95_seconds"], 0.020, delta=0.001)
        self.assertEqual(report["phases"][-1]["error_ratio"], 0.005)
        usl = report["usl"]
        self.assertIn("fitted", usl)
        if usl["fitted"]:
            self.assertGreaterEqual(usl["r_squared"], 0.9)
            self.assertTrue(0 <= usl["alpha"] <= 1 and 0 <= usl["beta"] <= 1)
        else:
            self.assertIn("reason", usl)
        # A CSV has no process or host figures: the bottleneck is not guessed.
        self.assertFalse(report["bottleneck"]["assessed"])
        self.assertIn("latency_knee", report)

        code, md, err = run("capacity", path, "--format", "markdown")
        self.assertEqual(code, 0, err)
        self.assertTrue(md.startswith("# Capacity report"))
        self.assertIn("| Users | RPS |", md)

        # stdin works as a file, so the awk output can be piped in.
        code, out2, err = run("capacity", "-", "--format", "json", stdin=wrk_sweep())
        self.assertEqual(code, 0, err)
        self.assertEqual(json.loads(out2)["knee"], report["knee"])

    def test_capacity_reads_the_sdm91_benchmark_with_a_header(self):
        path = self.write("sdm91.csv", "load,throughput\n1,64.9\n18,995.9\n36,1652.4\n"
                          "72,1853.2\n108,1828.9\n144,1775.0\n216,1702.2\n")
        code, out, err = run("capacity", path, "--format", "json")
        self.assertEqual(code, 2, "load is not a concurrency column name")
        path = self.write("sdm91.csv", "users,throughput\n1,64.9\n18,995.9\n36,1652.4\n"
                          "72,1853.2\n108,1828.9\n144,1775.0\n216,1702.2\n")
        code, out, err = run("capacity", path, "--format", "json")
        self.assertEqual(code, 0, err)
        usl = json.loads(out)["usl"]
        self.assertTrue(usl["fitted"])
        self.assertAlmostEqual(usl["alpha"], 0.0277, delta=0.0001)
        self.assertAlmostEqual(usl["beta"], 0.000104, delta=0.000001)
        self.assertAlmostEqual(usl["peak_users"], 96.5, delta=0.1)

    def test_capacity_bad_input_exits_2_with_the_reason(self):
        code, out, err = run("capacity", os.path.join(self.dir.name, "missing.dat"))
        self.assertEqual(code, 2)
        self.assertIn("missing.dat", err)
        code, out, err = run("capacity", self.write("bad.dat", "10 100\n20 lots\n"))
        self.assertEqual(code, 2)
        self.assertIn("line 2", err)
        self.assertEqual(out, "")
        code, out, err = run("capacity", self.write("ok.dat", wrk_sweep()), "--format", "xml")
        self.assertEqual(code, 2)
        code, out, err = run("capacity")
        self.assertEqual(code, 2)
        code, out, err = run("capacity", "--help")
        self.assertEqual(code, 0)
        self.assertIn("--format", out)

    def test_compare_gates_a_slower_run(self):
        base = self.report("base", wrk_sweep(seed=1))
        rerun = self.report("rerun", wrk_sweep(seed=2))      # same server, other noise
        slower = self.report("slower", wrk_sweep(slowdown=1.3, seed=3))  # service time +30 %

        code, out, err = run("compare", base, rerun)
        self.assertEqual(code, 0, out + err)
        self.assertIn("PASS", out)

        junit = os.path.join(self.dir.name, "junit.xml")
        code, out, err = run("compare", base, slower, "--junit", junit)
        self.assertEqual(code, 1, out + err)
        self.assertIn("REGRESSION", out)
        self.assertIn("p95 <= base +20%", out)
        root = ET.parse(junit).getroot()  # well-formed, or this raises
        self.assertEqual(root.tag, "testsuites")
        cases = root.findall("./testsuite/testcase")
        self.assertEqual(len(cases), len(STEPS))  # one per phase x rule (the default rule)
        failed = [c for c in cases if c.find("failure") is not None]
        # Past the knee the latency is users/throughput, so every step is ~30 % slower.
        self.assertGreaterEqual(len(failed), len(STEPS) - 1)
        self.assertEqual(int(root.get("failures")), len(failed))
        self.assertIn("above the limit", failed[0].find("failure").get("message"))

        # Looser limits pass; more rules mean more testcases.
        code, out, err = run("compare", base, slower, "--max", "p95=+40%", "--min", "rps=-30%",
                             "--max", "error_ratio=+0.5pp", "--junit", junit)
        self.assertEqual(code, 0, out + err)
        root = ET.parse(junit).getroot()
        self.assertEqual(len(root.findall("./testsuite/testcase")), 3 * len(STEPS))
        self.assertEqual(root.get("failures"), "0")
        # Throughput 23 % lower fails a -10 % floor.
        code, out, err = run("compare", base, slower, "--max", "p95=+40%", "--min", "rps=-10%")
        self.assertEqual(code, 1, out + err)

        # The CSVs themselves are accepted as reports too.
        code, out, err = run("compare", base[:-5] + ".dat", slower[:-5] + ".dat",
                             "--format", "json")
        self.assertEqual(code, 1, err)
        verdict = json.loads(out)
        self.assertTrue(verdict["regressed"])
        self.assertEqual(verdict["exit_code"], 1)

    def test_report_with_a_baseline_follows_with_the_comparison_and_its_exit_code(self):
        base = self.report("base", wrk_sweep(seed=1))
        rerun = self.report("rerun", wrk_sweep(seed=2))
        slower = self.report("slower", wrk_sweep(slowdown=1.3, seed=3))
        code, out, err = run("report", "--file", rerun, "--baseline", base)
        self.assertEqual(code, 0, out + err)
        self.assertIn("PASS", out)
        code, out, err = run("report", "--file", slower, "--baseline", base)
        self.assertEqual(code, 1, out + err)
        self.assertIn("REGRESSION", out)
        self.assertIn("p95 <= base +20%", out)
        code, out, err = run("report", "--file", slower, "--format", "html", "--baseline", base)
        self.assertEqual(code, 1, err)
        self.assertIn("REGRESSION", out)
        code, out, err = run("report", "--file", rerun,
                             "--baseline", os.path.join(self.dir.name, "nope.json"))
        self.assertEqual(code, 2, out + err)
        self.assertIn("--baseline:", err)

    def test_compare_bad_input_exits_2(self):
        base = self.report("base", wrk_sweep())
        broken = self.write("broken.json", '{"format": "loadwatch-capacity-report", "version": 1, '
                            '"phases": [{"name": "10", "rps": "fast"}]}')
        code, out, err = run("compare", base, broken)
        self.assertEqual(code, 2)
        self.assertIn("phases[0].rps", err)
        code, out, err = run("compare", base, os.path.join(self.dir.name, "nope.json"))
        self.assertEqual(code, 2)
        code, out, err = run("compare", base, base, "--max", "p95=+20")
        self.assertEqual(code, 0, "+20 on p95 is 20 s, absolute: a valid rule")
        # One value per --max: the files after it stay positional.
        code, out, err = run("compare", "--max", "p95=+20%", base, base)
        self.assertEqual(code, 0, err)
        code, out, err = run("compare", base, base, "--max", "p90=+20%")
        self.assertEqual(code, 2)
        self.assertIn("unknown metric", err)
        code, out, err = run("compare", base)
        self.assertEqual(code, 2)
        # A phase of the baseline that the current run lacks: the gate cannot pass.
        fewer = self.report("fewer", "\n".join(wrk_sweep().splitlines()[:-1]) + "\n")
        junit = os.path.join(self.dir.name, "junit.xml")
        code, out, err = run("compare", base, fewer, "--junit", junit)
        self.assertEqual(code, 2, out + err)
        self.assertIn("MISSING", out)
        root = ET.parse(junit).getroot()
        self.assertEqual(root.get("errors"), "1")


if __name__ == "__main__":
    lwtest.main()
