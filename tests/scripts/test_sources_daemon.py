"""Pull sources through the real loadwatch binary: a hanging endpoint never delays /metrics
or SIGTERM, reload keeps unchanged sources' counters, libcurl is loaded only once a source
fetches. (With real Mountebank and Locust configured, the whole /metrics passes `promtool
check metrics`: tests/scripts/test_live_page.py, which runs those peers once for its charts.)

Peers: tests/scripts/bad_http_server.py. Loopback only; every process started here is stopped
by its PID; every wait is bounded.
"""
import os
import shutil
import signal
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from lwtest import Child, Loadwatch, promtool_check  # noqa: E402
import lwtest  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


class SourcesDaemon(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="lw-sources-")
        self.children = []
        self.bad = self.child([sys.executable, os.path.join(HERE, "bad_http_server.py")],
                              "bad.log", stdin_pipe=True, stdout_pipe=True)
        self.bad_url = "http://127.0.0.1:%s" % self.bad.proc.stdout.readline().decode().strip()

    def tearDown(self):
        for c in reversed(self.children):
            c.stop()
        shutil.rmtree(self.dir)

    def child(self, args, log, **kw):
        c = Child(args, os.path.join(self.dir, log), **kw)
        self.children.append(c)
        return c

    def write_config(self, sources):
        path = os.path.join(self.dir, "lw.yml")
        with open(path, "w") as f:
            # No sources (and no targets): host metrics only, said explicitly.
            f.write("sources:%s\n" % ("" if sources else " []\nallow_empty: true"))
            for s in sources:
                f.write("  - {%s}\n" % ", ".join("%s: '%s'" % kv for kv in s.items()))
        return path

    def test_hanging_source_never_delays_metrics_nor_sigterm(self):
        lw = Loadwatch(["--source=hang=prometheus,%s/hang" % self.bad_url,
                        "--source=good=prometheus,%s/prom" % self.bad_url])
        with lw:
            # Default timeout 2 s: the hanging source is down with reason timeout after it.
            samples = lw.wait_for(
                lambda s: lw.value("loadwatch_source_errors_total", s, source="hang",
                                   reason="timeout") >= 1, timeout=15, what="hang timeout")
            self.assertEqual(lw.value("loadwatch_source_up", samples, source="hang",
                                      kind="prometheus"), 0)
            self.assertEqual(lw.value("loadwatch_source_up", samples, source="good"), 1)
            self.assertEqual(lw.value("demo_requests_total", samples, source="good",
                                      exported_source="upstream"), 42)
            # /metrics answers fast while a scrape hangs (the next one starts every 5 s).
            worst = 0
            for _ in range(20):
                t0 = time.time()
                status, _, body = lw.get("/metrics")
                worst = max(worst, time.time() - t0)
                self.assertEqual(status, 200)
                time.sleep(0.1)
            self.assertLess(worst, 0.5)
            ok, out = promtool_check(body.decode())
            self.assertTrue(ok, out)
            # SIGTERM while a GET to /hang is in flight: out within 2 s.
            t0 = time.time()
            rc = lw.stop(signal.SIGTERM, timeout=10)
            self.assertLess(time.time() - t0, 2.0)
            self.assertEqual(rc, 0, lw.output()[-2000:])

    def test_reload_keeps_unchanged_sources(self):
        cfg = self.write_config([{"name": "nf", "kind": "prometheus", "url": self.bad_url + "/404",
                                  "interval": "200ms"}])
        with Loadwatch(["--config.file=" + cfg]) as lw:
            samples = lw.wait_for(
                lambda s: lw.value("loadwatch_source_errors_total", s, source="nf",
                                   reason="http_status") >= 3, timeout=15, what="404 errors")
            before = lw.value("loadwatch_source_errors_total", samples, source="nf",
                              reason="http_status")
            self.write_config([{"name": "nf", "kind": "prometheus", "url": self.bad_url + "/404",
                                "interval": "200ms"},
                               {"name": "good", "kind": "prometheus",
                                "url": self.bad_url + "/prom"}])
            lw.proc.send_signal(signal.SIGHUP)
            samples = lw.wait_for(
                lambda s: lw.value("loadwatch_source_up", s, source="good") == 1,
                timeout=15, what="new source up after SIGHUP")
            # The unchanged source kept its runner: its counter went on, not back to 0.
            self.assertGreaterEqual(lw.value("loadwatch_source_errors_total", samples,
                                             source="nf", reason="http_status"), before)

    def test_libcurl_is_loaded_only_once_a_source_fetches(self):
        def maps_libcurl(pid):
            with open("/proc/%d/maps" % pid) as f:
                return "libcurl" in f.read()
        cfg = self.write_config([])
        with Loadwatch(["--config.file=" + cfg]) as lw:
            lw.wait_for(lambda s: True, timeout=15, what="a first sample")
            self.assertFalse(maps_libcurl(lw.proc.pid), "libcurl mapped without any source")
            self.write_config([{"name": "good", "kind": "prometheus",
                                "url": self.bad_url + "/prom"}])
            lw.proc.send_signal(signal.SIGHUP)
            lw.wait_for(lambda s: lw.value("loadwatch_source_up", s, source="good") == 1,
                        timeout=15, what="source up after SIGHUP")
            self.assertTrue(maps_libcurl(lw.proc.pid))


if __name__ == "__main__":
    lwtest.main(verbosity=2)
