"""Capacity runs end to end with real peers: Locust drives a step load (a LoadTestShape)
against a server whose capacity is known by construction; loadwatch infers the run from its
Locust source, and its report finds the knee and what saturated; compare gates a slower run.
Everything listens on 127.0.0.1; every run is bounded in time.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from lwtest import BINARY, Loadwatch, free_port, http_get  # noqa: E402
import lwtest  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
# 10 s steps, 5 s stable windows: the source's counts are exact to their request's round trip
# (docs/capacity.md), so a window holds the server's own variation, not the source's.
STEP_SECONDS = float(os.environ.get("LOADWATCH_STEP_SECONDS", "10"))
K = 2              # requests in service at once
# Each request takes 300 ms in service: capacity K / 0.3 s = 6.7 req/s. Long, so that the
# generator's own time per request (tens of ms, more on a busy host) moves the knee by at
# most one step.
SERVICE_MS = 300
USERS = [1, 2, 3, 4, 6, 8]  # knee at 2 users, later when the generator is slow


def locustfile(path, users, step, wait=0, extra=""):
    with open(path, "w") as f:
        f.write("from locust import HttpUser, LoadTestShape, constant, task\n\n"
                "class Visitor(HttpUser):\n"
                "    wait_time = constant(%r)\n\n" % wait +
                "    @task\n"
                "    def home(self):\n"
                "        self.client.get('/')\n\n"
                "class Steps(LoadTestShape):\n"
                "    users = %r\n"
                "    def tick(self):\n"
                "        t = self.get_run_time()\n"
                "        i = int(t // %r)\n"
                "        if i < len(self.users):\n"
                "            return (self.users[i], 100)\n"
                # A short last step at 0 users: stopping the users cuts their requests short,
                # which Locust counts; this step (left out of the knee and the fit) takes that.
                "        return (0, 100) if t < %r else None\n"
                % (users, step, step * len(users) + 4) + extra)


class CapacityRunHelpers:
    """Servers, Locust step runs and reports for capacity tests (mixed into a TestCase)."""

    def setUp(self):
        self.assertTrue(shutil.which("locust"), "locust missing: scripts/install-deps test")
        self.dir = tempfile.mkdtemp(prefix="lw-capacity-")
        self.children = []

    def tearDown(self):
        for p in self.children:
            if p.poll() is None:
                p.kill()
                p.wait()
        shutil.rmtree(self.dir, ignore_errors=True)

    def server(self, k, service_ms, mode="sleep", prefix=()):
        port = free_port()
        p = subprocess.Popen(list(prefix) + [sys.executable, os.path.join(HERE, "capacity_server.py"), str(port),
                              str(k), str(service_ms), mode])
        self.children.append(p)
        deadline = time.time() + 10
        while time.time() < deadline:
            try:
                if http_get("http://127.0.0.1:%d/" % port, timeout=2)[0] == 200:
                    return port, p
            except OSError:
                time.sleep(0.05)
        self.fail("test server did not start")

    def loadwatch_args(self, app_port, locust_port, storage, targets=()):
        cfg = os.path.join(self.dir, "lw-%d.yml" % locust_port)
        with open(cfg, "w") as f:
            f.write("sources:\n  - {name: lc, kind: locust, url: 'http://127.0.0.1:%d', "
                    "interval: 500ms, timeout: 1s}\n" % locust_port)
        return ["--config.file=" + cfg, "--target=app=port:%d" % app_port,
                "--sample.interval=500ms", "--storage.path=" + storage] + list(targets)

    def step_run(self, lw, app_port, locust_port, users, prefix=(), seen=(), step=STEP_SECONDS,
                 wait=0, extra="", where=None, linger=False):
        """Runs Locust through `users` (one step each) and returns the finished run. `extra` is
        more code for the locustfile (e.g. a request hook); `where` its directory (this test's
        by default). Locust quits as its test ends, and loadwatch ends the run once it has not
        seen Locust for 15 s (its source's staleness rule); with `linger` Locust stays up,
        showing its "stopped" state, which ends the run at once, and is stopped by PID when
        the run has finished."""
        lf = os.path.join(where or self.dir, "steps-%d.py" % locust_port)
        locustfile(lf, users, step, wait, extra)
        with open(os.path.join(self.dir, "locust.log"), "a") as log:
            p = subprocess.Popen(list(prefix) + [
                "locust", "-f", lf, "--host", "http://127.0.0.1:%d" % app_port, "--autostart",
                "--autoquit", "60" if linger else "0", "--web-host", "127.0.0.1",
                "--web-port", str(locust_port), "--loglevel", "WARNING"],
                stdout=subprocess.DEVNULL, stderr=log)
        self.children.append(p)
        if not linger:
            p.wait(timeout=step * len(users) + 45)
        deadline = time.time() + (step * len(users) + 45 if linger else 0) + 20
        while time.time() < deadline:
            runs = json.loads(lw.get("/api/v1/runs?phases=1")[2])["data"]
            done = [r for r in runs if r["origin"] == "locust:lc" and r["state"] == "finished"
                    and len(r["phases"]) >= len(users) and r["id"] not in seen]
            if done:
                if p.poll() is None:  # lingering: the next run takes its port
                    p.terminate()
                    p.wait(timeout=20)
                return done[0]
            time.sleep(0.3)
        self.fail("no finished Locust run: %s\n%s" % (json.dumps(runs)[:1500], lw.output()[-1500:]))

    def beside(self, work):
        """Starts work() in a thread; returns a function that waits for it (bounded) and raises
        what it raised, so its assertions fail the test as in the main thread."""
        raised = []

        def run():
            try:
                work()
            except BaseException as e:  # noqa: B902 - handed to the test's thread
                raised.append(e)
        t = threading.Thread(target=run, daemon=True)
        t.start()

        def join(timeout=300):
            t.join(timeout)
            if t.is_alive():
                self.fail("%s still running after %d s" % (work.__name__, timeout))
            if raised:
                raise raised[0]
        return join

    def report(self, lw, run_id, fmt="json"):
        status, _, body = lw.get("/api/v1/runs/%s/report?format=%s" % (run_id, fmt))
        self.assertEqual(status, 200, body)
        return json.loads(body) if fmt == "json" else body.decode()

    def cli(self, *args):
        return subprocess.run([BINARY] + list(args), capture_output=True, text=True, timeout=60)


class CapacityRun(CapacityRunHelpers, unittest.TestCase):
    def test_knee_at_capacity_and_compare(self):
        # The compare gate's runs take a server, a Locust and a loadwatch of their own, beside
        # the step run: both load their servers at under 10 req/s, a small share of a core, and
        # each server's capacity is set by its slots and sleeps, not by the CPU.
        compared = self.beside(self.compare_gate)
        try:
            self.knee_at_capacity()
        finally:  # its loadwatch stops when it ends, whatever happened here
            compared()

    def knee_at_capacity(self):
        """A step run through USERS: the knee where the server saturates, the report as a
        table and as HTML, and the report saved when the run ended."""
        app, server = self.server(K, SERVICE_MS)
        locust_port = free_port()
        storage = os.path.join(self.dir, "state")
        with Loadwatch(self.loadwatch_args(app, locust_port, storage)) as lw:
            run = self.step_run(lw, app, locust_port, USERS)
            rep = self.report(lw, run["id"])
            phases = rep["phases"]
            self.assertEqual([p["users"] for p in phases][:len(USERS)], USERS)
            rps = {p["users"]: p["rps"] for p in phases if "rps" in p}
            print("\nphases:", [(p["users"], round(p["start"] - run["start"], 1),
                                 round(p["end"] - run["start"], 1), p.get("stable_seconds"))
                                for p in phases], file=sys.stderr)
            print("unavailable:", {p["users"]: p["rps_unavailable"] for p in phases
                                   if "rps_unavailable" in p}, file=sys.stderr)
            print("rps by users:", {u: round(v, 1) for u, v in rps.items()},
                  "knee:", rep["knee"], "usl:", rep["usl"], file=sys.stderr)
            capacity = K * 1000.0 / SERVICE_MS
            # Below K each user adds at most one service time's worth; from K on it flattens
            # at the capacity.
            self.assertLess(rps[1], capacity / K * 1.15)
            self.assertGreater(rps[1], capacity / K * 0.5)
            # (The tolerance is the generator's: a busy Locust keeps fewer requests in service.)
            for u in (4, 6, 8):
                self.assertLess(rps[u], capacity * 1.2)
                self.assertGreater(rps[u], capacity * 0.75)
            # The knee: the step where the server saturates, give or take one step. By Little's
            # law that is K * (S + Z) / S users, Z being the generator's own time per request
            # (1 / rps - S at one user): tens of ms on an idle host (K users), more on a busy
            # one, where each user keeps fewer requests in the server.
            self.assertIn("users", rep["knee"], rep["knee"])
            saturated_at = K * (1.0 / rps[1]) / (SERVICE_MS / 1000.0)
            i = USERS.index(min(USERS, key=lambda u: abs(u - saturated_at)))
            print("saturates at %.2f users" % saturated_at, file=sys.stderr)
            self.assertIn(rep["knee"]["users"], USERS[max(i - 1, 0):i + 2])

            # The same report as a table, from the CLI through the endpoint.
            p = self.cli("report", "--url", lw.url, "--run", run["id"])
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertIn("knee", p.stdout.lower())
            # And as one HTML file, kept for the browser test.
            html = os.path.join(self.dir, "report.html")
            p = self.cli("report", "--url", lw.url, "--run", run["id"], "--format", "html", "-o", html)
            self.assertEqual(p.returncode, 0, p.stderr)
            with open(html) as f:
                page = f.read()
            self.assertIn("uPlot", page)
            self.assertNotIn("src=\"http", page)
            keep = os.environ.get("LOADWATCH_BUILD_DIR")
            if keep:
                shutil.copy(html, os.path.join(keep, "capacity_report.html"))

            # The report was saved when the run ended: it outlives the history.
            deadline = time.time() + 5
            saved = os.path.join(storage, "reports", run["id"] + ".json")
            while not os.path.exists(saved) and time.time() < deadline:
                time.sleep(0.2)
            self.assertTrue(os.path.exists(saved))
            with open(saved) as f:
                self.assertEqual(json.load(f)["knee"], rep["knee"])

    def compare_gate(self):
        """compare: a run made 30 % slower fails the gate, a rerun passes it. Short runs well
        past the capacity, where latency is queueing, so it scales with the service time and
        hardly with the generator's own time (its users are nearly all queued)."""
        short = [6, 8]
        app, server = self.server(K, SERVICE_MS)
        locust_port = free_port()
        storage = os.path.join(self.dir, "compare")
        with Loadwatch(self.loadwatch_args(app, locust_port, storage)) as lw:
            seen = set()
            base = self.step_run(lw, app, locust_port, short, seen=seen, step=10,
                                 linger=True)["id"]
            seen.add(base)
            for service_ms, want in ((SERVICE_MS * 1.3, 1), (SERVICE_MS, 0)):
                server.kill()
                server.wait()
                # compare reads the generator's figures: the server's new port does not matter.
                app2, server = self.server(K, service_ms)
                run2 = self.step_run(lw, app2, locust_port, short, seen=seen, step=10,
                                     linger=True)
                seen.add(run2["id"])
                p = self.cli("compare", "--url", lw.url, base, run2["id"])
                print(p.stdout, file=sys.stderr)
                self.assertEqual(p.returncode, want, p.stdout + p.stderr)
                # Locust's drain at 0 users is listed, never judged.
                j = json.loads(self.cli("compare", "--url", lw.url, base, run2["id"],
                                        "--format", "json").stdout)
                self.assertIn("users=0", j["idle_phases"], j)
                self.assertEqual([ph.get("users") for ph in j["phases"]], short, j)
                self.assertNotIn("users=0", j["unmatched_current_phases"])


if __name__ == "__main__":
    lwtest.main()
