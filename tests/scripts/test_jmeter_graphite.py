"""Real JMeter 2.13 (Debian jmeter + jmeter-http) pushes through its Graphite Backend Listener
to the real loadwatch binary; /metrics totals must equal JMeter's own result file (JTL).

JMeter runs non-GUI through tests/fixtures/jmeter/LoadwatchJMeter.java, which calls JMeter's own
entry point after working around Debian's XStream 1.4.20 refusing JMeter 2.13's classes (see
the comment in that file). One short run (~5-10 s including the JVM start)."""
import csv
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from lwtest import SOURCE_DIR, Loadwatch, free_port, serve  # noqa: E402
import lwtest  # noqa: E402

FIXTURES = os.path.join(SOURCE_DIR, "tests", "fixtures", "jmeter")
JMETER_HOME = "/usr/share/jmeter"
CLASSPATH = ":".join([JMETER_HOME + "/bin/ApacheJMeter.jar", JMETER_HOME + "/lib/*",
                      JMETER_HOME + "/lib/ext/*"])


def series(samples, metric, **labels):
    """Value of the one series of `metric` whose labels include `labels` (None when absent).
    (Loadwatch.value() cannot take a label called "name".)"""
    want = set(labels.items())
    found = [v for (n, ls), v in samples.items() if n == metric and want <= set(ls)]
    assert len(found) <= 1, (metric, labels, found)
    return found[0] if found else None


class JMeterGraphite(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()
        # The system under test: keep-alive, like a real one; "/" answers, anything else is 404.
        self.server = serve(lambda path: b"ok\n" if path == "/" else None)

    def tearDown(self):
        self.server.shutdown()
        self.server.server_close()
        shutil.rmtree(self.dir)

    def run_jmeter(self, graphite_port, loops, delay_ms):
        for tool in ("java", "javac"):
            self.assertTrue(shutil.which(tool), tool + " missing: scripts/install-deps test")
        self.assertTrue(os.path.exists(JMETER_HOME + "/lib/ext/ApacheJMeter_http.jar"),
                        "jmeter-http missing: scripts/install-deps test")
        shim = os.path.join(self.dir, "shim")
        subprocess.run(["javac", "-d", shim, os.path.join(FIXTURES, "LoadwatchJMeter.java")],
                       check=True, timeout=120)
        jtl = os.path.join(self.dir, "results.jtl")
        p = subprocess.run(
            ["java", "-Djmeter.home=" + JMETER_HOME, "-cp", CLASSPATH + ":" + shim,
             "LoadwatchJMeter", "-n", "-t", os.path.join(FIXTURES, "graphite_plan.jmx"),
             "-l", jtl, "-j", os.path.join(self.dir, "jmeter.log"),
             "-Jjmeter.save.saveservice.output_format=csv",
             "-Jhttp_port=%d" % self.server.server_address[1],
             "-Jgraphite_port=%d" % graphite_port, "-Jloops=%d" % loops,
             "-Jdelay_ms=%d" % delay_ms, "-Jthreads=2", "-Jprefix=loadwatch.it."],
            cwd=self.dir, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=180)
        self.assertEqual(p.returncode, 0, p.stdout)
        self.assertIn("end of run", p.stdout)
        return jtl

    def test_totals_agree_with_the_result_file(self):
        gport = free_port()
        with Loadwatch(["--graphite.listen-address=127.0.0.1:%d" % gport,
                        "--sample.interval=200ms"]) as lw:
            jtl = self.run_jmeter(gport, loops=60, delay_ms=20)
            # JTL (CSV, no header): timeStamp,elapsed,label,responseCode,responseMessage,
            # threadName,dataType,success,bytes,...
            requests, failures = {}, {}
            with open(jtl, newline="") as f:
                for row in csv.reader(f):
                    requests[row[2]] = requests.get(row[2], 0) + 1
                    if row[7] == "false":
                        failures[row[2]] = failures.get(row[2], 0) + 1
            total, failed = sum(requests.values()), sum(failures.values())
            self.assertEqual(total, 240)                 # 2 threads x 60 loops x 2 samplers
            self.assertEqual(failures.get("missing"), 120)  # every GET /missing is a 404
            src = "loadwatch.it"

            def done(s):
                # JMeter sends its last interval at teardown, before it exits; the sampler
                # publishes it within one interval.
                return lw.value("loadwatch_generator_requests_total", s, source=src) == total
            samples = lw.wait_for(done, timeout=10, what="requests_total == %d" % total)
            self.assertEqual(lw.value("loadwatch_generator_failures_total", samples, source=src),
                             failed)
            for name, n in requests.items():
                self.assertEqual(series(samples, "loadwatch_generator_endpoint_requests_total",
                                        source=src, name=name, method=""), n, name)
                self.assertEqual(series(samples, "loadwatch_generator_endpoint_failures_total",
                                        source=src, name=name, method=""),
                                 failures.get(name, 0), name)
            # Percentiles 50;90;99;99.9 in the plan; all threads ended.
            for q in ("0.5", "0.9", "0.99", "0.999"):
                v = lw.value("loadwatch_generator_latency_seconds", samples, source=src, quantile=q)
                self.assertTrue(0 <= v < 5, (q, v))
            self.assertEqual(lw.value("loadwatch_generator_users", samples, source=src), 0)
            # Every line JMeter sent was understood.
            self.assertIsNone(series(samples, "loadwatch_push_rejected_lines_total",
                                     protocol="graphite"))
            self.assertGreater(series(samples, "loadwatch_push_lines_total", protocol="graphite"),
                               100)


if __name__ == "__main__":
    lwtest.main()
