"""Per-phase req/s against Locust's own raw data: Locust's /stats/requests scraped every 5 s (the
default interval) moves loadwatch's counter in 5 s steps, which once made a phase read 0 req/s.
A Locust request hook logs every request's end; each phase's reported req/s bound must hold the
rate that log gives over the report's stated window, and a phase without a rate must say why,
never read 0. Everything listens on 127.0.0.1; every run is bounded in time.
"""
import bisect
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from lwtest import Loadwatch, free_port  # noqa: E402
from test_capacity_run import CapacityRunHelpers  # noqa: E402

USERS = [1, 2, 4, 8]
STEP = 25.0        # a 12.5 s stable window: two or three 5 s scrapes
K, SERVICE_MS = 4, 50  # capacity 80 req/s

HOOK = '''
import time as _time
from locust import events

_log = open(%r, "a", buffering=1)


@events.request.add_listener
def _log_request(**_kw):
    # Locust's own counter moves on this same event: this is its ground truth.
    _log.write("%%.6f\\n" %% _time.time())
'''


class CapacityAccuracy(CapacityRunHelpers, unittest.TestCase):
    def test_phase_rps_bound_holds_locusts_raw_rate(self):
        app, _ = self.server(K, SERVICE_MS)
        locust_port = free_port()
        cfg = os.path.join(self.dir, "lw.yml")
        with open(cfg, "w") as f:
            f.write("sources:\n  - {name: lc, kind: locust, url: 'http://127.0.0.1:%d', "
                    "interval: 5s, timeout: 2s}\n" % locust_port)
        raw = os.path.join(self.dir, "requests.log")
        args = ["--config.file=" + cfg, "--target=app=port:%d" % app, "--sample.interval=1s",
                "--storage.path=" + os.path.join(self.dir, "state")]
        with Loadwatch(args) as lw:
            run = self.step_run(lw, app, locust_port, USERS, step=STEP, extra=HOOK % raw)
            rep = self.report(lw, run["id"])
        with open(raw) as f:
            ends = sorted(float(line) for line in f if line.strip())
        self.assertGreater(len(ends), 100)
        measured = 0
        for p in rep["phases"]:
            if not p.get("users"):
                continue
            self.assertNotEqual(p.get("rps"), 0, p)
            if "rps" not in p:
                self.assertTrue(p.get("rps_unavailable"), p)
                print("phase %s: unavailable: %s" % (p["name"], p["rps_unavailable"]),
                      file=sys.stderr)
                continue
            start, end = p["rps_window_start"], p["rps_window_end"]
            self.assertGreaterEqual(start, p["stable_start"] - 0.01, p)
            self.assertLessEqual(end, p["end"] + 0.01, p)
            n = bisect.bisect_right(ends, end) - bisect.bisect_right(ends, start)
            truth = n / (end - start)
            one = 1.0 / (end - start)  # whole requests: the count is known within one
            print("phase %s: truth %.2f req/s over %.1f s, reported %.2f [%.2f, %.2f]"
                  % (p["name"], truth, end - start, p["rps"], p["rps_low"], p["rps_high"]),
                  file=sys.stderr)
            self.assertLessEqual(p["rps_low"] - one, truth, p)
            self.assertLessEqual(truth, p["rps_high"] + one, p)
            measured += 1
        # 12.5 s stable windows hold two 5 s scrapes at least in most phases.
        self.assertGreaterEqual(measured, len(USERS) // 2, rep["phases"])


if __name__ == "__main__":
    unittest.main()
