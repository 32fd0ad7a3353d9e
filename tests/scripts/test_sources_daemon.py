"""Pull sources through the real loadwatch binary: a hanging endpoint never delays /metrics
or SIGTERM, reload keeps unchanged sources' counters, and with real Mountebank 2.9.1 and
Locust 2.12.1 configured the whole /metrics passes `promtool check metrics`.

Peers: tests/scripts/bad_http_server.py, Mountebank from build/peers/mountebank (npm, see
scripts/install-deps test), Debian's locust, python3 -m http.server. Loopback only; every
process started here is stopped by its PID; every wait is bounded.
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from lwtest import SOURCE_DIR, Loadwatch, free_port, http_get, promtool_check  # noqa: E402
import lwtest  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def wait_until(pred, timeout, what):
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            if pred():
                return
        except OSError:
            pass
        time.sleep(0.1)
    raise AssertionError("timed out waiting for " + what)


class Child:
    """A peer process; stop() ends it by PID (SIGTERM, then SIGKILL) and reaps it."""

    def __init__(self, args, log_path, stdin_pipe=False, stdout_pipe=False):
        self.log = open(log_path, "wb")
        self.proc = subprocess.Popen(
            args, stdin=subprocess.PIPE if stdin_pipe else subprocess.DEVNULL,
            stdout=subprocess.PIPE if stdout_pipe else self.log, stderr=self.log)

    def stop(self, timeout=10):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        for f in (self.proc.stdin, self.proc.stdout):
            if f:
                f.close()
        self.log.close()


def find_mb():
    for path in (os.environ.get("LOADWATCH_MB", ""),
                 os.path.join(SOURCE_DIR, "build/peers/mountebank/node_modules/.bin/mb")):
        if path and os.access(path, os.X_OK):
            return path
    return None


def post_json(url, doc):
    req = urllib.request.Request(url, data=json.dumps(doc).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as r:
        return r.status


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

    def test_mountebank_and_locust_metrics_pass_promtool(self):
        mb = find_mb()
        if mb is None:
            self.fail("Mountebank not found: run scripts/install-deps test (or set LOADWATCH_MB)")
        if shutil.which("locust") is None:
            self.fail("locust not found: run scripts/install-deps test (python3-locust)")
        if shutil.which("promtool") is None:
            self.fail("promtool not found: run scripts/install-deps test (prometheus)")
        admin_port, imposter_port = free_port(), free_port()
        admin = "http://127.0.0.1:%d" % admin_port
        self.child([mb, "--port", str(admin_port), "--host", "127.0.0.1", "--pidfile",
                    os.path.join(self.dir, "mb.pid"), "--logfile", os.path.join(self.dir, "mb.log"),
                    "--loglevel", "warn"], "mb.out")
        wait_until(lambda: http_get(admin + "/", timeout=1)[0] == 200, 60, "mountebank")
        self.assertEqual(post_json(admin + "/imposters", {
            "protocol": "http", "port": imposter_port, "name": "orders api",
            "stubs": [{"predicates": [{"equals": {"path": "/ok"}}],
                       "responses": [{"is": {"statusCode": 200, "body": "ok"}}]}]}), 201)
        imposter = "http://127.0.0.1:%d" % imposter_port

        web_port = free_port()
        locustfile = os.path.join(self.dir, "locustfile.py")
        with open(locustfile, "w") as f:
            f.write("from locust import HttpUser, task, constant\n"
                    "class U(HttpUser):\n"
                    "    wait_time = constant(0.1)\n"
                    "    @task\n"
                    "    def ok(self):\n"
                    "        self.client.get('/ok')\n"
                    "    @task\n"
                    "    def nomatch(self):\n"
                    "        self.client.get('/nomatch')\n")
        # Locust drives the mock: both sources see the same traffic.
        self.child(["locust", "-f", locustfile, "--host", imposter, "--autostart", "-u", "2",
                    "-r", "2", "-t", "60s", "--web-host", "127.0.0.1", "--web-port",
                    str(web_port), "--loglevel", "WARNING"], "locust.log")

        cfg = self.write_config([
            {"name": "mb", "kind": "mountebank", "url": admin, "interval": "500ms"},
            {"name": "locust", "kind": "locust", "url": "http://127.0.0.1:%d" % web_port,
             "interval": "500ms"}])
        with Loadwatch(["--config.file=" + cfg]) as lw:
            label = "http:%d" % imposter_port
            samples = lw.wait_for(
                lambda s: lw.value("loadwatch_generator_requests_total", s, source="locust") > 0
                and lw.value("loadwatch_mock_requests_total", s, source="mb", imposter=label) > 0
                and lw.value("loadwatch_mock_unmatched_requests_total", s, source="mb",
                             imposter=label) > 0
                and lw.value("mb_request_total", s, source="mb", imposter=label) > 0,
                timeout=90, what="mountebank and locust metrics")
            self.assertEqual(lw.value("loadwatch_generator_running", samples, source="locust"), 1)
            names = {n for (n, _) in samples}
            self.assertFalse([n for n in names if n.startswith(("mb_process_", "mb_nodejs_"))])
            text = lw.metrics_text()
            ok, out = promtool_check(text)
            self.assertTrue(ok, out)
            self.assertIn('loadwatch_generator_latency_seconds{source="locust",quantile="0.5"}',
                          text)


if __name__ == "__main__":
    lwtest.main(verbosity=2)
