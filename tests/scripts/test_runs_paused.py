"""A run inferred from a real Locust is not split when loadwatch is stopped for longer than the
Locust source's staleness rule (SIGSTOP, as a paused VM), nor when its wall clock is set 20 s
ahead (libfaketime, as NTP or a VM resumed and set again): a generator's silence is timed on
the monotonic clock, less loadwatch's own pauses. /metrics counts the gap and the step; the
gap's length is checked against the test's own monotonic clock, on /metrics and in the run's
report. Loopback only; about 45 s."""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from lwtest import Loadwatch, eventually, free_port, serve  # noqa: E402
import locustfiles  # noqa: E402
import lwtest  # noqa: E402

FAKETIME = "/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1"
STOPPED_SECONDS = 17   # over the source's 15 s staleness rule
CLOCK_STEP_SECONDS = 20
# Locust's one step: long enough for the pause, the step and the checks after each.
STEP_SECONDS = 40


class RunsPaused(unittest.TestCase):
    def setUp(self):
        self.assertTrue(shutil.which("locust"), "locust missing: scripts/install-deps test")
        self.assertTrue(os.path.exists(FAKETIME), "libfaketime missing: scripts/install-deps test")
        self.dir = tempfile.mkdtemp(prefix="lw_paused_")
        self.server = serve(lambda path: b"hello\n")
        self.locust = None

    def tearDown(self):
        if self.locust and self.locust.poll() is None:
            self.locust.kill()
            self.locust.wait()
        self.server.shutdown()
        self.server.server_close()
        shutil.rmtree(self.dir, ignore_errors=True)

    def runs(self, lw):
        return json.loads(lw.get("/api/v1/runs?phases=1")[2])["data"]

    def open_run_id(self, lw):
        """The id of the one Locust run, if it is open; else what there is, for the message."""
        runs = [r for r in self.runs(lw) if r["origin"] == "locust:lc"]
        return runs[0]["id"] if len(runs) == 1 and runs[0]["state"] == "running" else runs

    def test_a_pause_and_a_clock_step_do_not_split_a_run(self):
        locustfile = os.path.join(self.dir, "steady.py")
        locustfiles.write_shape(locustfile, "(2, 20) if t < %d else None" % STEP_SECONDS)
        web = free_port()
        config = os.path.join(self.dir, "lw.yml")
        # Scraped every 2 s and sampled every 0.5 s: after a pause or a step, a sample (which
        # judges staleness) nearly always comes before the next answer from Locust.
        with open(config, "w") as f:
            f.write("sources:\n  - {name: lc, kind: locust, url: 'http://127.0.0.1:%d', "
                    "interval: 2s, timeout: 1s}\n" % web)
        offset = os.path.join(self.dir, "clock_offset")
        with open(offset, "w") as f:
            f.write("+0\n")
        env = dict(os.environ, LD_PRELOAD=FAKETIME, FAKETIME_TIMESTAMP_FILE=offset,
                   FAKETIME_NO_CACHE="1", FAKETIME_DONT_FAKE_MONOTONIC="1")
        with Loadwatch(["--config.file=" + config, "--sample.interval=500ms"], env=env) as lw, \
                open(os.path.join(self.dir, "locust.log"), "w") as log:
            host = "http://127.0.0.1:%d" % self.server.server_address[1]
            self.locust = subprocess.Popen(
                ["locust", "-f", locustfile, "--host", host, "--autostart", "--autoquit", "30",
                 "--web-host", "127.0.0.1", "--web-port", str(web), "--loglevel", "WARNING"],
                stdout=subprocess.DEVNULL, stderr=log)
            run = eventually(lambda: [r for r in self.runs(lw) if r["state"] == "running"
                                      and r["phases"]], 20, what="the run to open at 2 users")[0]
            self.assertEqual(lw.value("loadwatch_sample_gaps_total"), 0)
            self.assertEqual(lw.value("loadwatch_clock_steps_total"), 0)

            # Stopped for longer than the staleness rule, as a paused VM.
            t0 = time.monotonic()
            lw.proc.send_signal(signal.SIGSTOP)
            try:
                time.sleep(STOPPED_SECONDS)  # the pause is the test's subject
            finally:
                lw.proc.send_signal(signal.SIGCONT)
            stopped = time.monotonic() - t0
            samples = lw.wait_for(lambda s: lw.value("loadwatch_sample_gaps_total", s) == 1, 10,
                                  what="the gap counted")
            # The gap runs from the last sample before the stop to the first after it.
            gap = lw.value("loadwatch_sample_gap_seconds_total", samples)
            self.assertGreaterEqual(gap, stopped - 0.2)
            self.assertLessEqual(gap, stopped + 1.5)
            lw.wait_samples(4)  # two seconds of samples: a scrape of Locust among them
            self.assertEqual(self.open_run_id(lw), run["id"], lw.output()[-2000:])

            # The wall clock set 20 s ahead, as NTP would.
            with open(offset, "w") as f:
                f.write("+%d\n" % CLOCK_STEP_SECONDS)
            lw.wait_for(lambda s: lw.value("loadwatch_clock_steps_total", s) == 1, 10,
                        what="the step counted")
            lw.wait_samples(4)
            self.assertEqual(self.open_run_id(lw), run["id"], lw.output()[-2000:])
            out = lw.output()
            self.assertNotIn("not seen for", out)
            logged = re.search(r"no sample for ([0-9.]+) s", out)
            self.assertTrue(logged, out[-2000:])
            self.assertAlmostEqual(float(logged.group(1)), gap, delta=0.1)
            logged = re.search(r"the wall clock moved ([-+][0-9.]+) s", out)
            self.assertTrue(logged, out[-2000:])
            self.assertAlmostEqual(float(logged.group(1)), CLOCK_STEP_SECONDS, delta=0.5)

            # The shape ends: Locust's "stopped" state ends the run, one run with its one phase.
            done = eventually(
                lambda: [r for r in self.runs(lw) if r["origin"] == "locust:lc"
                         and r["state"] == "finished"], STEP_SECONDS + 20,
                what="the run to finish")
            self.assertEqual(len(done), 1, json.dumps(self.runs(lw)))
            self.assertEqual(len(self.runs(lw)), 1, json.dumps(self.runs(lw)))
            self.assertEqual(done[0]["id"], run["id"])
            self.assertEqual([p["users"] for p in done[0]["phases"]], [2])
            # Its report says how long loadwatch saw nothing in the phase: the stop, as the
            # test's own clock measured it, less the part before the phase's start (it was
            # stopped as soon as the phase showed: at most a sample apart).
            status, _, body = lw.get("/api/v1/runs/%s/report?format=json" % run["id"])
            self.assertEqual(status, 200, body)
            in_phase = json.loads(body)["phases"][0]["host"]["sample_gap_seconds"]
            self.assertLessEqual(in_phase, gap + 0.01)
            self.assertGreaterEqual(in_phase, stopped - 0.8)
            status, _, body = lw.get("/api/v1/runs/%s/report?format=markdown" % run["id"])
            self.assertIn("loadwatch took no sample for %.1f s" % in_phase, body.decode())
            self.locust.terminate()
            self.locust.wait(timeout=20)


if __name__ == "__main__":
    lwtest.main()
