"""Runs and phases with the real daemon: the run API (off by default, bad bodies name the
field, unknown runs 404, behind TLS and basic auth), /metrics linted by promtool during a run,
`loadwatch run exec` around real wrk at rising -c, exit codes, kill -9 mid-run (the run comes
back interrupted), a truncated state file (set aside, the others kept), a run inferred from a
real Locust step load (LoadTestShape) and one from wrk's textfile summary. Loopback only;
every load is bounded (a few seconds each)."""
import json
import os
import shutil
import signal
import ssl
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.error
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from lwtest import (BINARY, SOURCE_DIR, Loadwatch, bcrypt, free_port, parse_metrics,  # noqa: E402
                    promtool_check, serve)
import locustfiles  # noqa: E402
import lwtest  # noqa: E402

WRK_LUA = os.path.join(SOURCE_DIR, "scripts", "wrk", "loadwatch.lua")



def api(lw, method, path, doc=None, headers=None):
    """(status, parsed JSON body) of one request to the run API."""
    data = None if doc is None else (doc if isinstance(doc, bytes) else json.dumps(doc).encode())
    req = urllib.request.Request(lw.url + path, data=data, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        body = e.read()
        return e.code, (json.loads(body) if body.startswith(b"{") else body)


def cli(*args, env=None, timeout=60):
    return subprocess.run([BINARY, "run"] + list(args), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, timeout=timeout, env=env, text=True)


class Runs(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = serve(lambda path: b"hello\n")
        cls.target = "http://127.0.0.1:%d/" % cls.server.server_address[1]

    @classmethod
    def tearDownClass(cls):
        cls.server.shutdown()
        cls.server.server_close()

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="lw_runs_")
        self.children = []

    def tearDown(self):
        for p in self.children:
            if p.poll() is None:
                p.kill()
                p.wait()
        shutil.rmtree(self.dir, ignore_errors=True)

    def wait_run(self, lw, pred, timeout, what):
        deadline = time.time() + timeout
        last = None
        while time.time() < deadline:
            status, doc = api(lw, "GET", "/api/v1/runs?phases=1")
            self.assertEqual(status, 200)
            last = doc["data"]
            for run in last:
                if pred(run):
                    return run
            time.sleep(0.2)
        self.fail("timed out waiting for %s; runs: %s\n%s" % (what, json.dumps(last)[:2000],
                                                              lw.output()[-2000:]))

    def test_writes_are_off_unless_enabled(self):
        with Loadwatch(["--no-collector.sources"]) as lw:
            status, doc = api(lw, "POST", "/api/v1/runs", {"name": "x"})
            self.assertEqual(status, 403)
            self.assertIn("--web.enable-run-api", doc["error"])
            status, doc = api(lw, "GET", "/api/v1/runs")
            self.assertEqual((status, doc["status"], doc["data"]), (200, "success", []))
            # Its clock, for a client that drives several loadwatches: within this request.
            self.assertLess(abs(doc["time"] - time.time()), 2)
            r = cli("start", "--url", lw.url, "--name", "x")
            self.assertEqual(r.returncode, 1)
            self.assertIn("--web.enable-run-api", r.stderr)

    def test_api_refusals_and_run_metrics(self):
        with Loadwatch(["--web.enable-run-api", "--sample.interval=100ms",
                        "--no-collector.sources"]) as lw:
            for doc, field in ((b"{", "body"), ({}, "name"), ({"name": ""}, "name"),
                               ({"name": "x", "labels": {"a-b": "1"}}, "labels.a-b"),
                               ({"name": "x", "colour": "red"}, "colour")):
                status, body = api(lw, "POST", "/api/v1/runs", doc)
                self.assertEqual((status, body["field"]), (400, field), body)
            self.assertEqual(api(lw, "GET", "/api/v1/runs/20200101T000000-nope")[0], 404)
            self.assertEqual(api(lw, "POST", "/api/v1/runs/current/stop")[0], 409)
            status, started = api(lw, "POST", "/api/v1/runs",
                                  {"name": "checkout", "labels": {"build": "42"}})
            self.assertEqual(status, 201)
            run_id = started["data"]["id"]
            status, doc = api(lw, "POST", "/api/v1/runs/current/phases", {"users": "many"})
            self.assertEqual((status, doc["field"]), (400, "users"))
            self.assertEqual(api(lw, "POST", "/api/v1/runs/current/phases", {"users": 50})[0], 201)
            samples = lw.wait_for(
                lambda s: lw.value("loadwatch_run_phase_users", s, run=run_id) == 50, timeout=10,
                what="the phase's users in /metrics")
            info = {dict(ls)["name"]: (dict(ls), v) for (n, ls), v in samples.items()
                    if n == "loadwatch_run_info"}
            self.assertEqual(info, {"checkout": ({"run": run_id, "name": "checkout", "origin": "api",
                                                  "phase": "users=50"}, 1)})
            self.assertAlmostEqual(lw.value("loadwatch_run_start_timestamp_seconds", samples,
                                            run=run_id), started["data"]["start"], delta=0.01)
            ok, out = promtool_check(lw.metrics_text())
            self.assertTrue(ok, out)
            self.assertEqual(api(lw, "POST", "/api/v1/runs/current/stop")[0], 200)
            samples = lw.wait_for(lambda s: not any(n == "loadwatch_run_info" for n, _ in s),
                                  timeout=10, what="no run in progress")
            self.assertGreater(lw.value("loadwatch_run_end_timestamp_seconds", samples, run=run_id), 0)
            ok, out = promtool_check(lw.metrics_text())
            self.assertTrue(ok, out)

    def test_cli_over_tls_with_basic_auth(self):
        d = self.dir
        subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                        "ec_paramgen_curve:P-256", "-nodes", "-days", "2", "-subj", "/CN=lw",
                        "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", d + "/tls.key",
                        "-out", d + "/tls.crt"], check=True, capture_output=True, timeout=30)
        with open(d + "/web.yml", "w") as f:
            f.write("tls_server_config:\n  cert_file: %s/tls.crt\n  key_file: %s/tls.key\n"
                    "basic_auth_users:\n  ci: '%s'\n" % (d, d, bcrypt("s3cret", 4)))
        with open(d + "/pw", "w") as f:
            f.write("s3cret\n")
        lw = Loadwatch(["--web.enable-run-api", "--web.config.file=" + d + "/web.yml",
                        "--no-collector.sources"], wait_ready=False)
        with lw:
            url = "https://127.0.0.1:%d" % lw.port
            ctx = ssl.create_default_context(cafile=d + "/tls.crt")
            deadline = time.time() + 15
            while True:
                try:
                    urllib.request.urlopen(url + "/-/healthy", context=ctx, timeout=1)
                except urllib.error.HTTPError as e:
                    self.assertEqual(e.code, 401)  # up, and asking for credentials
                    break
                except OSError:
                    self.assertLess(time.time(), deadline, lw.output())
                    time.sleep(0.1)
            auth = ["--url", url, "--ca-file", d + "/tls.crt", "--user", "ci"]
            r = cli("start", "--name", "secure", *auth, "--password-file", d + "/pw")
            self.assertEqual(r.returncode, 0, r.stderr)
            run_id = r.stdout.strip()
            r = cli("stop", *auth)  # no password: the server's 401
            self.assertEqual(r.returncode, 1)
            self.assertIn("401", r.stderr)
            r = cli("stop", "--url", url, "--name-does-not-exist")
            self.assertEqual(r.returncode, 2)
            r = cli("stop", "--url", url)  # no CA: the certificate is not trusted
            self.assertEqual(r.returncode, 2)
            env = dict(os.environ, LOADWATCH_URL=url, LOADWATCH_USER="ci",
                       LOADWATCH_PASSWORD_FILE=d + "/pw")
            r = cli("stop", "--ca-file", d + "/tls.crt", env=env)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(r.stdout.strip(), run_id)

    def test_exec_around_wrk_at_rising_concurrency(self):
        self.assertTrue(shutil.which("wrk"), "wrk missing: scripts/install-deps test")
        with Loadwatch(["--web.enable-run-api", "--sample.interval=200ms",
                        "--storage.path=" + self.dir + "/state", "--no-collector.sources"]) as lw:
            # The command steps its own load and opens each phase as it does (LOADWATCH_URL and
            # LOADWATCH_RUN_ID come from run exec).
            steps = ("for c in 2 4 8; do %s run phase --users $c >/dev/null && "
                     "wrk -t1 -c$c -d2s %s >/dev/null || exit 9; done" % (BINARY, self.target))
            p = subprocess.Popen([BINARY, "run", "exec", "--url", lw.url, "--name", "wrk-steps",
                                  "--label", "tool=wrk", "--", "sh", "-c", steps],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            self.children.append(p)
            # Mid-run: /metrics shows the step and passes promtool.
            samples = lw.wait_for(lambda s: any(n == "loadwatch_run_phase_users" and v == 4
                                                for (n, _), v in s.items()),
                                  timeout=15, what="the second step in /metrics")
            ok, out = promtool_check(lw.metrics_text())
            self.assertTrue(ok, out)
            out, err = p.communicate(timeout=30)
            self.assertEqual(p.returncode, 0, err)
            run = self.wait_run(lw, lambda r: r["name"] == "wrk-steps", 5, "the wrk run")
            self.assertEqual(run["state"], "finished")
            self.assertEqual(run["labels"], {"tool": "wrk"})
            self.assertEqual([ph["users"] for ph in run["phases"]], [2, 4, 8])
            for ph in run["phases"]:
                self.assertGreater(ph["end"] - ph["start"], 1.9)  # wrk -d2s each
            self.assertLessEqual(run["phases"][-1]["end"], run["end"])
            self.assertTrue(os.path.exists("%s/state/runs/%s.json" % (self.dir, run["id"])))
            # A failing command: its code, and the run still ends.
            r = cli("exec", "--url", lw.url, "--name", "fails", "--", "sh", "-c", "exit 3")
            self.assertEqual(r.returncode, 3, r.stderr)
            self.assertEqual(api(lw, "GET", "/api/v1/runs/current")[0], 404)

    def test_kill_9_mid_run_and_a_truncated_state_file(self):
        state = self.dir + "/state"
        args = ["--web.enable-run-api", "--storage.path=" + state, "--no-collector.sources"]
        with Loadwatch(args) as lw:
            for name in ("first", "second"):
                self.assertEqual(cli("start", "--url", lw.url, "--name", name).returncode, 0)
                self.assertEqual(cli("stop", "--url", lw.url).returncode, 0)
            r = cli("start", "--url", lw.url, "--name", "soak")
            self.assertEqual(r.returncode, 0, r.stderr)
            soak = r.stdout.strip()
            self.assertEqual(cli("phase", "--url", lw.url, "--users", "100").returncode, 0)
            phase_start = api(lw, "GET", "/api/v1/runs/current")[1]["data"]["phases"][0]["start"]
            killed_at = time.time()
            lw.stop(signal.SIGKILL)
        with Loadwatch(args, port=free_port()) as lw:
            status, doc = api(lw, "GET", "/api/v1/runs/" + soak)
            self.assertEqual(status, 200)
            run = doc["data"]
            self.assertEqual(run["state"], "interrupted")
            self.assertGreaterEqual(run["end"], phase_start)
            self.assertLessEqual(run["end"], killed_at)
            self.assertEqual(run["phases"][0]["users"], 100)
            self.assertEqual(api(lw, "GET", "/api/v1/runs/current")[0], 404)
            ids = [r["id"] for r in api(lw, "GET", "/api/v1/runs")[1]["data"]]
            self.assertEqual(len(ids), 3)
        # Truncate one file, as a disk that lost the tail of it would.
        victim = "%s/runs/%s.json" % (state, ids[1])
        with open(victim, "r+") as f:
            f.truncate(40)
        with Loadwatch(args, port=free_port()) as lw:
            log = lw.output()
            self.assertIn(victim + ": not valid JSON (truncated or corrupt)", log)
            self.assertIn("set aside as " + victim + ".corrupt", log)
            self.assertIn("level=error", log)
            left = [r["id"] for r in api(lw, "GET", "/api/v1/runs")[1]["data"]]
            self.assertEqual(left, [ids[0], ids[2]])
            self.assertTrue(os.path.exists(victim + ".corrupt"))
            # New runs are still saved.
            self.assertEqual(cli("start", "--url", lw.url, "--name", "after").returncode, 0)
            self.assertEqual(len(os.listdir(state + "/runs")), 4)

    def test_unusable_storage_path_is_fatal(self):
        blocker = self.dir + "/file"
        open(blocker, "w").close()
        p = subprocess.run([BINARY, "--web.listen-address=127.0.0.1:%d" % free_port(),
                            "--storage.path=" + blocker], capture_output=True, text=True, timeout=20)
        self.assertEqual(p.returncode, 1)
        self.assertIn("--storage.path", p.stderr + p.stdout)

    def test_run_inferred_from_a_locust_step_load(self):
        self.assertTrue(shutil.which("locust"), "locust missing: scripts/install-deps test")
        locustfile = self.dir + "/steps.py"
        locustfiles.write_shape(locustfile, "(2, 20) if t < 3 else (4, 20) if t < 6 else None")
        web = free_port()
        with open(self.dir + "/lw.yml", "w") as f:
            f.write("sources:\n  - {name: lc, kind: locust, url: 'http://127.0.0.1:%d', "
                    "interval: 500ms, timeout: 1s}\n" % web)
        with Loadwatch(["--config.file=" + self.dir + "/lw.yml"]) as lw, \
                open(self.dir + "/locust.log", "w") as log:
            p = subprocess.Popen(["locust", "-f", locustfile, "--host", self.target.rstrip("/"),
                                  "--autostart", "--autoquit", "2", "--web-host", "127.0.0.1",
                                  "--web-port", str(web), "--loglevel", "WARNING"],
                                 stdout=subprocess.DEVNULL, stderr=log)
            self.children.append(p)
            run = self.wait_run(lw, lambda r: r["origin"] == "locust:lc" and r["state"] == "finished",
                                40, "the inferred Locust run to finish")
            p.wait(timeout=20)
            self.assertEqual(run["name"], "lc")
            self.assertEqual([ph["users"] for ph in run["phases"]], [2, 4])
            self.assertEqual([ph["name"] for ph in run["phases"]], ["users=2", "users=4"])
            step = run["phases"][1]["end"] - run["phases"][1]["start"]
            self.assertGreater(step, 1.5)
            self.assertLess(step, 5.5)
            self.assertLess(run["end"] - run["start"], 10)

    def test_run_from_a_wrk_textfile_summary(self):
        self.assertTrue(shutil.which("wrk"), "wrk missing: scripts/install-deps test")
        textdir = self.dir + "/textfile"
        os.mkdir(textdir)
        with Loadwatch(["--collector.textfile.directory=" + textdir, "--sample.interval=200ms",
                        "--no-collector.sources"]) as lw:
            env = dict(os.environ, LOADWATCH_TEXTFILE_DIR=textdir, LOADWATCH_WRK_RUN="smoke")
            before = time.time()
            subprocess.run(["wrk", "-t1", "-c2", "-d1s", "-s", WRK_LUA, self.target], env=env,
                           check=True, capture_output=True, timeout=30)
            run = self.wait_run(lw, lambda r: r["origin"] == "wrk:smoke", 10, "the wrk run")
            self.assertEqual(run["name"], "smoke")
            self.assertEqual(run["state"], "finished")
            self.assertAlmostEqual(run["end"] - run["start"], 1.0, delta=0.3)
            self.assertGreaterEqual(run["end"], int(before))
            # Read every sample, listed once.
            lw.wait_samples(3)
            runs = api(lw, "GET", "/api/v1/runs")[1]["data"]
            self.assertEqual(len([r for r in runs if r["origin"] == "wrk:smoke"]), 1)


if __name__ == "__main__":
    lwtest.main(verbosity=2)
