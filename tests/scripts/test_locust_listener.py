"""The Locust listener plugin end to end: real Locust (headless, a LoadTestShape of three
4 s steps) drives tests/scripts/capacity_server.py with scripts/locust/loadwatch_listener.py
pushing to a real loadwatch. A second, test-only request hook in the locustfile logs every
request (time, duration, success) and the shape logs each step as it hands it to Locust: the
assertions are against that raw log, never against loadwatch's own figures.
Everything listens on 127.0.0.1; every wait is bounded. Exit 77 when Locust is not installed.
"""
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.error
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import locust_log  # noqa: E402
import lwtest  # noqa: E402
from lwtest import Loadwatch, free_port, http_get  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
LISTENER = os.path.join(ROOT, "scripts", "locust", "loadwatch_listener.py")
STEP = 4.0
USERS = [1, 3, 6]

LOCUSTFILE = locust_log.CODE + """
from locust import HttpUser, LoadTestShape, between, task


class Visitor(HttpUser):
    wait_time = between(0, 0.02)

    @task(9)
    def home(self):
        self.client.get("/")

    @task(1)
    def refused(self):
        with self.client.get("/", catch_response=True) as r:
            r.failure("counted as failed by the test")


class Steps(LoadTestShape):
    users = %(users)r
    last = None

    def tick(self):
        i = int(self.get_run_time() // %(step)r)
        want = self.users[i] if i < len(self.users) else None
        if want != self.last:
            log_step(want)
            self.last = want
        return None if want is None else (want, 1000)
"""


def histogram(samples, source):
    """(le, cumulative count) of the exported histogram, ascending, +Inf last."""
    out = []
    for (name, labels), v in samples.items():
        d = dict(labels)
        if name == "loadwatch_generator_request_duration_seconds_bucket" and d["source"] == source:
            out.append((float(d["le"]), v))
    return sorted(out)


def interpolated(buckets, q):
    """The quantile as Prometheus's histogram_quantile interpolates it."""
    total = buckets[-1][1]
    rank = q * total
    lower, below = 0.0, 0.0
    for le, count in buckets:
        if count >= rank:
            if math.isinf(le):
                return lower
            return lower + (le - lower) * (rank - below) / (count - below)
        lower, below = le, count
    return lower


class LocustListener(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="lw-listener-")
        self.children = []
        port = free_port()
        # 4 requests in service at once, 8 ms each: latencies from 8 ms to tens of ms as the
        # steps queue up, so the quantiles spread over many buckets.
        self.server = subprocess.Popen([sys.executable, os.path.join(HERE, "capacity_server.py"),
                                        str(port), "4", "8", "sleep"])
        self.children.append(self.server)
        self.app = "http://127.0.0.1:%d" % port
        deadline = time.time() + 10
        while time.time() < deadline:
            try:
                if http_get(self.app + "/", timeout=2)[0] == 200:
                    break
            except OSError:
                time.sleep(0.05)
        else:
            self.fail("test server did not start")

    def tearDown(self):
        for p in self.children:
            if p.poll() is None:
                p.kill()
                p.wait()
        shutil.rmtree(self.dir, ignore_errors=True)

    def locust(self, lw, source, users, watch=None):
        """Runs Locust through `users` and returns the raw log; `watch` is called about every
        0.3 s while it runs."""
        log = os.path.join(self.dir, source + ".log")
        lf = os.path.join(self.dir, source + "_steps.py")
        with open(lf, "w") as f:
            f.write(LOCUSTFILE % {"log": log, "users": users, "step": STEP})
        with open(os.path.join(self.dir, "locust.out"), "a") as out:
            p = subprocess.Popen(
                ["locust", "-f", lf + "," + LISTENER, "--headless", "--host", self.app,
                 "--loadwatch-url", lw.url, "--loadwatch-source", source,
                 "--loglevel", "WARNING", "--only-summary"],
                stdout=out, stderr=subprocess.STDOUT, cwd=self.dir)
        self.children.append(p)
        deadline = time.time() + STEP * len(users) + 40
        while p.poll() is None and time.time() < deadline:
            if watch:
                watch()
            time.sleep(0.3)
        if p.poll() is None:
            p.kill()
            self.fail("Locust did not finish")
        with open(os.path.join(self.dir, "locust.out")) as f:
            output = f.read()
        self.assertNotIn("loadwatch push", output)  # no push failed
        return locust_log.read(log)

    def test_exact_counts_histogram_age_and_steps(self):
        ages = []

        with Loadwatch(["--collector.locustpush", "--push.run-annotations",
                        "--sample.interval=250ms"]) as lw:
            def watch():
                try:
                    ages.append(lw.value("loadwatch_generator_data_age_seconds", source="steps"))
                except KeyError:
                    pass

            requests, steps = self.locust(lw, "steps", USERS, watch)
            self.assertGreater(len(requests), 100)
            failures = sum(1 for r in requests if not r[2])
            self.assertGreater(failures, 0)

            # The final push (at test stop) carries every request Locust counted, and no users.
            # The push before it may already hold every request (with the last step's users):
            # a sample of that one is not yet the final state.
            def settled(s):
                return lw.value("loadwatch_generator_requests_total", s, source="steps") == \
                    len(requests) and \
                    lw.value("loadwatch_generator_users", s, source="steps") == 0
            samples = lw.wait_for(settled, timeout=10, what="the final counts and 0 users")
            self.assertEqual(lw.value("loadwatch_generator_failures_total", samples,
                                      source="steps"), failures)
            self.assertEqual(lw.value("loadwatch_generator_users", samples, source="steps"), 0)
            buckets = histogram(samples, "steps")
            self.assertEqual(len(buckets), 256)
            self.assertEqual(buckets[-1][1], len(requests))
            # The listener's bucket list is the one loadwatch exports.
            # (Read from the file: importing it would import Locust, which patches sockets.)
            with open(LISTENER) as f:
                line = [l for l in f if l.startswith("BOUNDS = ")][0]
            scope = {}
            exec(line, scope)
            self.assertEqual([le for le, _ in buckets[:-1]], scope["BOUNDS"])

            durations = [r[1] for r in requests]
            for q in (0.5, 0.95, 0.99):
                raw, est = locust_log.nearest_rank(durations, q), interpolated(buckets, q)
                print("p%g: raw %.2f ms, histogram %.2f ms (%+.1f %%)"
                      % (q * 100, raw * 1000, est * 1000, (est / raw - 1) * 100), file=sys.stderr)
                # p99 of a few thousand requests rests on a few dozen: the raw figure itself
                # jumps by more than a bucket's width there.
                self.assertAlmostEqual(est / raw, 1, delta=0.05 if q < 0.99 else 0.10,
                                       msg="p%g" % (q * 100))
            sum_s = lw.value("loadwatch_generator_request_duration_seconds_sum", samples,
                             source="steps")
            self.assertAlmostEqual(sum_s, sum(durations), delta=1e-6 * len(durations))

            # The age: pushes every second, so little more than that (a busy Locust may send
            # late); never negative: a sample shows no push that arrived after its moment (on a
            # busy host one often arrives while the sample is being taken: -0.12 s once).
            self.assertGreater(len(ages), 10)
            self.assertLess(max(ages), 2.5, ages)
            self.assertGreaterEqual(min(ages), 0, ages)
            self.assertEqual(lw.value("loadwatch_generator_data_age_uncertainty_seconds",
                                      samples, source="steps"), 1e-6)

            # The run and its phases at the generator's own step times.
            changes = [(at, u) for at, u in steps if u]
            stop = [at for at, u in steps if u is None][0]
            runs = json.loads(lw.get("/api/v1/runs?phases=1")[2])["data"]
            mine = [r for r in runs if r["origin"] == "locust:steps"]
            self.assertEqual(len(mine), 1, runs)
            run = mine[0]
            deadline = time.time() + 10
            while run["state"] != "finished" and time.time() < deadline:
                time.sleep(0.2)
                run = [r for r in json.loads(lw.get("/api/v1/runs?phases=1")[2])["data"]
                       if r["origin"] == "locust:steps"][0]
            self.assertEqual(run["state"], "finished", run)
            self.assertEqual([p["users"] for p in run["phases"]], USERS)
            self.assertAlmostEqual(run["start"], changes[0][0], delta=0.1)
            for phase, (at, users) in zip(run["phases"], changes):
                self.assertAlmostEqual(phase["start"], at, delta=0.1, msg=phase)
            # Locust stops its users before test_stop: the end may trail the shape's None.
            self.assertAlmostEqual(run["end"], stop, delta=0.5)
            print("steps at", [round(at - changes[0][0], 3) for at, _ in changes],
                  "phases at", [round(p["start"] - changes[0][0], 3) for p in run["phases"]],
                  file=sys.stderr)

    def test_no_runs_without_the_operators_flag(self):
        with Loadwatch(["--collector.locustpush", "--sample.interval=250ms"]) as lw:
            requests, _ = self.locust(lw, "quiet", [2])
            lw.wait_for(lambda s: lw.value("loadwatch_generator_requests_total", s,
                                           source="quiet") == len(requests),
                        timeout=10, what="the final counts")
            runs = json.loads(lw.get("/api/v1/runs")[2])["data"]
            self.assertEqual(runs, [])

    def test_route_refuses_bad_pushes_naming_the_field(self):
        with Loadwatch(["--collector.locustpush"]) as lw:
            def post(body, headers=None):
                req = urllib.request.Request(lw.url + "/api/v1/push/locust", data=body,
                                             headers=headers or {}, method="POST")
                try:
                    with urllib.request.urlopen(req, timeout=5) as r:
                        return r.status, r.read()
                except urllib.error.HTTPError as e:
                    return e.code, e.read()
            status, body = post(b'{"source":"x","time":1700000000,"requests":1.5}')
            self.assertEqual(status, 400)
            self.assertIn(b"requests: not an integer", body)
            status, _ = post(b"x" * (64 * 1024 + 1))
            self.assertEqual(status, 413)
            status, _ = post(b"{}", {"Content-Encoding": "br"})
            self.assertEqual(status, 415)
            lw.wait_for(lambda s: lw.value("loadwatch_push_rejected_lines_total", s,
                                           protocol="locust", reason="parse") == 2,
                        timeout=10, what="two pushes counted as refused")
        with Loadwatch([]) as lw:  # off by default: no route
            self.assertEqual(lw.get("/api/v1/push/locust")[0], 404)


if __name__ == "__main__":
    if not shutil.which("locust"):
        print("SKIP: locust not installed (scripts/install-deps test: python3-locust)")
        sys.exit(77)
    try:
        import gevent  # noqa: F401  (the listener's import, with python3-locust)
        import locust  # noqa: F401
    except ImportError as e:
        print("SKIP: %s is not importable by %s" % (e.name, sys.executable))
        sys.exit(77)
    lwtest.main()
