"""Hostile input through the real loadwatch binary never invalidates /metrics.

Invalid UTF-8 pushed over Influx and Graphite, textfiles that repeat series, re-define
loadwatch_load1 or carry escapes in HELP, and a Prometheus source (a small http.server on
127.0.0.1) that sends invalid UTF-8, repeated series, an oversized label and a family of
loadwatch's own: the whole page passes `promtool check metrics`, the counters of what was
dropped or replaced move, and the rest of the page (a good source, a good textfile family,
loadwatch's own loadwatch_load1) is untouched. The 65th Influx database gets 429 naming
its reason. Loopback only; the HTTP server runs in this process; bounded waits.
"""
import os
import shutil
import socket
import sys
import tempfile
import time
import unittest
import urllib.error
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from lwtest import Loadwatch, free_port, parse_metrics, promtool_check, serve  # noqa: E402
import lwtest  # noqa: E402

BAD_SOURCE = (
    b"# HELP loadwatch_load1 A family loadwatch exports itself.\n"
    b"# TYPE loadwatch_load1 gauge\n"
    b"loadwatch_load1 99\n"
    b"# HELP app_requests_total Requests, path C:\\\\app and a\\nsecond line.\n"
    b"# TYPE app_requests_total counter\n"
    b'app_requests_total{path="/caf\xe9"} 1\n'
    b'app_requests_total{path="/ok"} 2\n'
    b'app_requests_total{path="/ok"} 3\n'
    b'app_big{v="' + b"x" * 5000 + b'"} 1\n'
    b"# TYPE app_latency_seconds summary\n"
    b'app_latency_seconds{quantile="0.5"} 0.1\n'
    b"app_latency_seconds_sum 1\n"
    b"app_latency_seconds_count 10\n")
GOOD_SOURCE = b"# HELP good_up Fine.\n# TYPE good_up gauge\ngood_up 1\n"


def post(url, body):
    req = urllib.request.Request(url, data=body, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


class HardeningMetrics(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="lw-hardening-")
        self.textfiles = os.path.join(self.dir, "textfiles")
        os.mkdir(self.textfiles)
        self.server = serve(lambda path: BAD_SOURCE if path == "/bad" else GOOD_SOURCE,
                            "text/plain; version=0.0.4")
        port = self.server.server_address[1]
        self.config = os.path.join(self.dir, "lw.yml")
        with open(self.config, "w") as f:
            f.write("sources:\n"
                    "  - {name: bad, kind: prometheus, url: 'http://127.0.0.1:%d/bad', "
                    "interval: 1s}\n"
                    "  - {name: good, kind: prometheus, url: 'http://127.0.0.1:%d/good', "
                    "interval: 1s}\n" % (port, port))

    def tearDown(self):
        self.server.shutdown()
        self.server.server_close()
        shutil.rmtree(self.dir)

    def write_textfile(self, name, data):
        tmp = os.path.join(self.textfiles, "." + name)
        with open(tmp, "wb") as f:
            f.write(data)
        os.rename(tmp, os.path.join(self.textfiles, name))

    def test_hostile_input_keeps_the_page_valid(self):
        gport = free_port()
        self.write_textfile("a.prom", (
            b"# HELP loadwatch_load1 Shadow.\n# TYPE loadwatch_load1 gauge\nloadwatch_load1 42\n"
            b"# HELP job_runs_total Runs of C:\\\\jobs\\nper night.\n"
            b"# TYPE job_runs_total counter\n"
            b'job_runs_total{job="n\xff"} 1\njob_runs_total{job="ok"} 2\n'
            b'job_runs_total{job="ok"} 3\n'))
        self.write_textfile("b.prom", b'# TYPE job_runs_total counter\njob_runs_total{job="ok"} 4\n'
                            b"# TYPE job_good gauge\njob_good 7\n")
        args = ["--config.file=" + self.config, "--collector.textfile.directory=" + self.textfiles,
                "--graphite.listen-address=127.0.0.1:%d" % gport]
        with Loadwatch(args) as lw:
            # Influx: a Latin-1 transaction name, and a 64 KiB one (refused: label_limit).
            status, body = post(lw.url + "/write?db=jm",
                                b"jmeter,application=a,transaction=caf\xe9,statut=all count=3,"
                                b"avg=2,pct90.0=3\n"
                                b"jmeter,application=a,transaction=" + b"t" * 65536 +
                                b",statut=all count=1\n"
                                b"jmeter,application=a,transaction=all,statut=all count=4,"
                                b"countError=0,avg=2\n")
            self.assertEqual(status, 204, body)
            # Graphite: an invalid byte in the sampler label.
            with socket.create_connection(("127.0.0.1", gport), timeout=5) as s:
                s.sendall(b"jmeter.caf\xe9.a.count 5 %d\njmeter.all.a.count 5 %d\n"
                          % (time.time(), time.time()))

            def settled(m):
                return (lw.value("loadwatch_source_up", m, source="bad") == 1
                        and lw.value("loadwatch_source_up", m, source="good") == 1
                        and lw.value("loadwatch_invalid_utf8_total", m, collector="graphite") > 0
                        and lw.value("loadwatch_invalid_utf8_total", m, collector="influx") > 0
                        and lw.value("loadwatch_invalid_utf8_total", m, collector="sources") > 0
                        and lw.value("loadwatch_invalid_utf8_total", m, collector="textfile") > 0
                        and lw.value("loadwatch_dropped_series_total", m, collector="textfile",
                                     reason="reserved") > 0
                        and lw.value("loadwatch_dropped_series_total", m, collector="sources",
                                     reason="reserved") > 0)
            lw.wait_for(settled, timeout=20, what="every hostile input counted")
            text = lw.metrics_text()
            ok, out = promtool_check(text)
            self.assertTrue(ok, out + "\n" + text[:3000])
            m = parse_metrics(text)

            # What was dropped, by whom and why.
            self.assertGreater(lw.value("loadwatch_dropped_series_total", m,
                                        collector="textfile", reason="duplicate"), 0)
            self.assertGreater(lw.value("loadwatch_source_dropped_series_total", m, source="bad",
                                        reason="duplicate"), 0)
            self.assertGreater(lw.value("loadwatch_source_dropped_series_total", m, source="bad",
                                        reason="label_limit"), 0)
            self.assertEqual(lw.value("loadwatch_push_rejected_lines_total", m,
                                      protocol="influx", reason="label_limit"), 1)

            # The rest is untouched: loadwatch's own load1 once and unlabelled, the good
            # source, the good textfile family, the valid series of the bad ones.
            load1 = [v for (n, ls), v in m.items() if n == "loadwatch_load1"]
            self.assertEqual(len(load1), 1)
            self.assertNotIn(load1[0], (42.0, 99.0))
            self.assertEqual(lw.value("good_up", m, source="good"), 1)
            self.assertEqual(lw.value("job_good", m), 7)
            self.assertEqual(lw.value("job_runs_total", m, job="ok"), 2)  # first copy
            self.assertEqual(lw.value("app_requests_total", m, source="bad", path="/ok"), 2)
            self.assertEqual(lw.value("app_requests_total", m, source="bad",
                                      path="/caf\ufffd"), 1)
            self.assertEqual(lw.value("loadwatch_generator_requests_total", m, source="jm"), 4)
            self.assertIn('job_runs_total{job="n\ufffd"} 1', text)
            # HELP escaped once: a backslash and a line break survive as \\ and \n.
            self.assertIn("# HELP job_runs_total Runs of C:\\\\jobs\\nper night.\n", text)
            self.assertIn("# HELP app_requests_total Requests, path C:\\\\app and a\\nsecond "
                          "line.\n", text)
            # Each reason is logged once, not at every sample.
            lw.wait_samples(2)
            log = lw.output()
            self.assertEqual(log.count("family loadwatch_load1"), 2, log[-3000:])  # textfile, source
            self.assertTrue(promtool_check(lw.metrics_text())[0])

    def test_the_65th_influx_database_is_refused_with_429(self):
        with Loadwatch([]) as lw:
            line = b"jmeter,transaction=all,statut=all count=1\n"
            for i in range(64):
                status, body = post(lw.url + "/write?db=db%d" % i, line)
                self.assertEqual(status, 204, body)
            status, body = post(lw.url + "/write?db=db64", line)
            self.assertEqual(status, 429)
            self.assertIn(b"max_sources", body)
            self.assertIn(b"db64", body)
            m = lw.wait_for(lambda m: lw.value("loadwatch_push_rejected_lines_total", m,
                                               protocol="influx", reason="max_sources") == 1,
                            timeout=5, what="max_sources counted")
            self.assertEqual(lw.value("loadwatch_generator_requests_total", m, source="db0"), 1)
            ok, out = promtool_check(lw.metrics_text())
            self.assertTrue(ok, out)


if __name__ == "__main__":
    lwtest.main()
