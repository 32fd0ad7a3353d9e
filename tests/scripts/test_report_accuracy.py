"""The run report's per-phase req/s and p95 against Locust's own raw per-request log, on a busy
host, with the README's capacity setup: loadwatch with --collector.locustpush and the default
sample interval, Locust headless with scripts/locust/loadwatch_listener.py, a LoadTestShape
stepping 1, 2, 4, 8 users. The test's own locustfile logs every request from Locust's request
hook (the event the listener counts on): its end time, response time and success. For every
loaded phase the report's req/s must be within 3 % of the log's request count over the window
the report states for it, and its p95 within 5 % of the log's nearest-rank p95 over that
window (and inside the bucket the report gives as its bound); or the figure must be unavailable
with a reason that holds (a stable window too short for two pushes). One CPU burner per core
runs throughout (bounded, ended by PID), so the host is saturated as in a shared CI.
Everything listens on 127.0.0.1; every wait is bounded. Exit 77 when Locust is not installed.
"""
import bisect
import json
import os
import re
import shutil
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import locust_log  # noqa: E402
import lwtest  # noqa: E402
from lwtest import BINARY, Loadwatch, eventually  # noqa: E402
from test_capacity_run import CapacityRunHelpers  # noqa: E402
from test_locust_listener import LISTENER  # noqa: E402

USERS = [1, 2, 4, 8]
# Seconds per step. The warm-up rule keeps the second half: 4 s, four 1 s pushes, of which the
# report's rate spans the first to the last it saw (docs/capacity.md, minimum phase length).
STEP = float(os.environ.get("LOADWATCH_STEP_SECONDS", "8"))
K, SERVICE_MS = 4, 20  # capacity 200 req/s: the 8-user step queues, the others do not
RPS_TOLERANCE, P95_TOLERANCE = 0.03, 0.05

LOCUSTFILE = locust_log.CODE + locust_log.VISITOR + """
from locust import LoadTestShape


class Steps(LoadTestShape):
    users = %(users)r

    def tick(self):
        i = int(self.get_run_time() // %(step)r)
        return (self.users[i], 100) if i < len(self.users) else None
"""

BURNER = ("import time\n"
          "end = time.monotonic() + %d\n"
          "while time.monotonic() < end:\n"
          "    pass\n")


class ReportAccuracy(CapacityRunHelpers, unittest.TestCase):
    def spawn(self, args, **kw):
        p = subprocess.Popen(args, **kw)
        self.children.append(p)
        return p

    def test_every_phase_within_bounds_of_locusts_raw_log_on_a_busy_host(self):
        started = time.monotonic()
        port, _ = self.server(K, SERVICE_MS)
        app = "http://127.0.0.1:%d" % port
        budget = int(STEP * len(USERS) + 40)  # the burners end by themselves after this
        burners = [self.spawn([sys.executable, "-c", BURNER % budget])
                   for _ in range(os.cpu_count() or 1)]

        log = os.path.join(self.dir, "requests.log")
        lf = os.path.join(self.dir, "steps.py")
        with open(lf, "w") as f:
            f.write(LOCUSTFILE % {"log": log, "users": USERS, "step": STEP})
        # The README's capacity setup: the listener path, default intervals.
        args = ["--target=app=port:%d" % port, "--storage.path=" + os.path.join(self.dir, "state"),
                "--collector.locustpush", "--push.run-annotations"]
        with Loadwatch(args) as lw:
            with open(os.path.join(self.dir, "locust.out"), "w") as out:
                locust = self.spawn(
                    ["locust", "-f", lf + "," + LISTENER, "--loadwatch-url", lw.url, "--host", app,
                     "--headless", "--loglevel", "WARNING", "--only-summary"],
                    stdout=out, stderr=subprocess.STDOUT, cwd=self.dir)
                locust.wait(timeout=STEP * len(USERS) + 30)
            with open(os.path.join(self.dir, "locust.out")) as f:
                self.assertNotIn("loadwatch push", f.read())  # no push failed

            def finished():
                runs = json.loads(lw.get("/api/v1/runs")[2])["data"]
                return [r for r in runs if r["state"] == "finished"]
            eventually(finished, timeout=15, what="the run to finish")
            p = subprocess.run([BINARY, "report", "--url", lw.url, "--format", "json"],
                               capture_output=True, text=True, timeout=60)
            self.assertEqual(p.returncode, 0, p.stderr)
            rep = json.loads(p.stdout)
        for b in burners:
            self.assertIsNone(b.poll(), "a burner ended early: the host was not busy throughout")
            b.kill()
            b.wait()

        requests, _ = locust_log.read(log)
        ends = [r[0] for r in requests]
        self.assertGreater(len(requests), 200)
        loaded = [ph for ph in rep["phases"] if ph.get("users")]
        self.assertEqual([ph["users"] for ph in loaded], USERS, rep["phases"])
        measured = {"rps": 0, "p95": 0}
        for ph in loaded:
            name = ph["name"]
            self.assertNotEqual(ph.get("rps"), 0, ph)
            self.assertNotEqual(ph.get("p95_seconds"), 0, ph)
            if "rps" not in ph:
                # Unavailable: honest only when the stable window was too short to hold two
                # pushes loadwatch saw apart (1 s pushes, 1 s samples: one push may be merged
                # with the next, and the last phase's final push carries the stop).
                reason = ph.get("rps_unavailable", "")
                print("%s: req/s unavailable: %s" % (name, reason), file=sys.stderr)
                m = re.match(r"(\d+) counter updates? in (\d+) s: a rate needs two", reason)
                self.assertTrue(m, ph)
                self.assertLess(int(m.group(1)), 2, ph)
                self.assertAlmostEqual(int(m.group(2)), ph["stable_seconds"], delta=0.5)
                self.assertLess(ph["stable_seconds"], 3.5, "a window of 4 pushes has no rate")
                self.assertNotIn("p95_seconds", ph)
                # Locust did serve requests then, by its own log: the p95 is missing for the
                # window, not for want of requests, and the report says so.
                served = bisect.bisect_right(ends, ph["end"]) - bisect.bisect_right(
                    ends, ph["stable_start"])
                self.assertGreater(served, 0, ph)
                self.assertIn(reason, ph.get("latency_unavailable", ""), ph)
                continue
            start, end = ph["rps_window_start"], ph["rps_window_end"]
            self.assertGreaterEqual(start, ph["start"] - 0.01, ph)
            self.assertLessEqual(end, ph["end"] + 0.01, ph)
            lo, hi = bisect.bisect_right(ends, start), bisect.bisect_right(ends, end)
            window = requests[lo:hi]
            truth = len(window) / (end - start)
            rps_err = ph["rps"] / truth - 1
            line = "%s: req/s %.2f, log %.2f (%d requests in %.3f s): %+.2f %%" % (
                name, ph["rps"], truth, len(window), end - start, rps_err * 100)
            self.assertLessEqual(abs(rps_err), RPS_TOLERANCE, line)
            measured["rps"] += 1

            self.assertEqual(ph.get("latency_method"), "histogram", ph)
            if "p95_seconds" not in ph:
                self.fail("%s: p95 missing without a reason: %s" % (name, ph))
            raw = locust_log.nearest_rank([r[1] for r in window], 0.95)
            p95_err = ph["p95_seconds"] / raw - 1
            line += "; p95 %.2f ms [%.2f, %.2f], log %.2f ms: %+.2f %%" % (
                ph["p95_seconds"] * 1000, ph["p95_low_seconds"] * 1000,
                ph["p95_high_seconds"] * 1000, raw * 1000, p95_err * 100)
            print(line, file=sys.stderr)
            self.assertLessEqual(ph["p95_low_seconds"], raw, line)
            self.assertLessEqual(raw, ph["p95_high_seconds"], line)
            self.assertLessEqual(abs(p95_err), P95_TOLERANCE, line)
            measured["p95"] += 1
        if STEP >= 8:  # 4 s stable windows: every phase must have its figures
            self.assertEqual(measured, {"rps": len(USERS), "p95": len(USERS)})
        print("runtime %.1f s" % (time.monotonic() - started), file=sys.stderr)


if __name__ == "__main__":
    if not shutil.which("locust"):
        print("SKIP: locust not installed (scripts/install-deps test: python3-locust)")
        sys.exit(77)
    lwtest.main()
