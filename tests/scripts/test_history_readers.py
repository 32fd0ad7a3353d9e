#!/usr/bin/env python3
"""Twenty concurrent history readers leave /metrics fast and the sampler on time.

The daemon samples every 10 ms into a history of 1,000 points (filled in ~15 s) of 12 targets,
all the daemon itself so their values move: one answer of the ~97 series asked for is ~500 KB,
as heavy per request as a browser reading a 2-hour window. Then, in turns, for a few seconds
each: nobody reads (the baseline), and 20 readers from 4 loopback addresses (5 each, under the
per-address share) ask for that answer back to back, honouring a 503's Retry-After. Meanwhile
one client from a fifth address scrapes /metrics every 20 ms, and the sample timestamps the
daemon served (the history's own time column) give the gaps between samples.

It used to go wrong: each read waited for one of the two answer builders on a handler thread,
20 readers held all four, and /metrics queued behind the builds (median 0.8 -> 8 ms, p99
10 -> 80 ms; the issue's figures were 15.6 -> 85 ms); the builders also took the sampler's CPU
(the longest gap between samples 0.1 -> 0.26 s, samples per second halved; the issue: 150 ->
735 ms). The readers run in a child process, so the test's own client does not compete for
the interpreter lock with the scraper it times. RSS must also come back after the readers.
"""
import http.client
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import lwtest  # noqa: E402
from lwtest import Loadwatch, eventually, rss_kib  # noqa: E402

POINTS = 1000
READERS = 20
WINDOW = 5.0  # seconds per turn
SERIES = ("loadwatch_process_cpu_seconds_total,loadwatch_process_resident_memory_bytes,"
          "loadwatch_process_open_fds,loadwatch_process_max_fds,loadwatch_process_threads,"
          "loadwatch_process_cpu_limit_cores,loadwatch_target_processes,loadwatch_procs_running")

# The readers, in a child process: argv = port, readers, seconds; prints their answers as JSON.
READER_PROGRAM = r"""
import http.client, json, sys, threading, time
port, n, seconds, series = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
end = time.monotonic() + seconds
got = []
def reader(i):
    conn = None
    while time.monotonic() < end:
        try:
            conn = conn or http.client.HTTPConnection(
                "127.0.0.1", port, timeout=30, source_address=("127.0.0.%d" % (10 + i % 4), 0))
            conn.request("GET", "/api/v1/history?series=" + series)
            r = conn.getresponse()
            body = r.read()
        except OSError as e:
            got.append(["error", str(e), 0])
            conn = None
            continue
        got.append([r.status, len(body), r.getheader("Retry-After")])
        if r.status == 503:
            time.sleep(float(r.getheader("Retry-After") or 1))
threads = [threading.Thread(target=reader, args=(i,)) for i in range(n)]
for t in threads: t.start()
for t in threads: t.join(seconds + 60)
json.dump(got, sys.stdout)
"""


def quantile(values, q):
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


class HistoryReaders(unittest.TestCase):
    def test_readers_leave_metrics_and_sampling_alone(self):
        with tempfile.TemporaryDirectory(prefix="lw-histreaders-") as tmp:
            pidfile = os.path.join(tmp, "self.pid")
            targets = ["--target=self%d=pidfile:%s" % (i, pidfile) for i in range(12)]
            with Loadwatch(["--sample.interval=10ms", "--history.points=%d" % POINTS]
                           + targets) as lw:
                with open(pidfile, "w") as f:
                    f.write(str(lw.proc.pid))
                self.run_turns(lw)

    def history(self, lw, query):
        conn = http.client.HTTPConnection("127.0.0.1", lw.port, timeout=30,
                                          source_address=("127.0.0.201", 0))
        try:
            conn.request("GET", "/api/v1/history?" + query)
            r = conn.getresponse()
            return r.status, r.read()
        finally:
            conn.close()

    def times(self, lw, since, until):
        """The timestamps of the samples the daemon took in [since, until]."""
        status, body = self.history(lw, "series=loadwatch_procs_running&since=%f&until=%f" % (
            since, until))
        self.assertEqual(status, 200, body[:200])
        return json.loads(body)["data"][0]

    def turn(self, lw, readers):
        """One turn: scrapes for WINDOW s, with `readers` readers meanwhile. Returns the
        scrape latencies (s), the sample timestamps of the turn and the readers' answers."""
        latencies, stop = [], threading.Event()

        def scrape():
            conn = http.client.HTTPConnection("127.0.0.1", lw.port, timeout=30,
                                              source_address=("127.0.0.200", 0))
            while not stop.is_set():
                t = time.perf_counter()
                conn.request("GET", "/metrics")
                r = conn.getresponse()
                r.read()
                latencies.append(time.perf_counter() - t)
                assert r.status == 200, r.status
                stop.wait(0.02)
            conn.close()
        scraper = threading.Thread(target=scrape)
        t0 = time.time()
        scraper.start()
        answers = []
        try:
            if readers:
                out = subprocess.run(
                    [sys.executable, "-c", READER_PROGRAM, str(lw.port), str(readers),
                     str(WINDOW), SERIES], stdout=subprocess.PIPE, timeout=WINDOW + 90,
                    check=True).stdout
                answers = json.loads(out)
            else:
                time.sleep(WINDOW)  # the baseline turn: nothing to poll for, only time
        finally:
            stop.set()
            scraper.join(30)
        t1 = time.time()
        return latencies, self.times(lw, t0, t1), answers

    def run_turns(self, lw):
        def full():
            status, body = self.history(lw, "series=loadwatch_procs_running")
            return status == 200 and len(json.loads(body)["data"][0]) >= POINTS
        eventually(full, timeout=40, interval=0.5, what="%d points in the history" % POINTS)
        status, body = self.history(lw, "series=" + SERIES)
        self.assertEqual(status, 200, body[:200])
        answer = json.loads(body)
        self.assertGreaterEqual(len(answer["series"]), 90)  # time + 12 targets x 8 + 1
        self.assertGreaterEqual(len(answer["data"][0]), POINTS)
        print("one answer: %d series x %d points, %d bytes" % (
            len(answer["series"]) - 1, len(answer["data"][0]), len(body)))

        base_rss = rss_kib(lw.proc.pid)
        quiet, busy = [], []
        for _ in range(2):  # alternated, so a change in the machine's own load hits both
            quiet.append(self.turn(lw, 0))
            busy.append(self.turn(lw, READERS))

        answers = [a for turn in busy for a in turn[2]]
        statuses = {a[0] for a in answers}
        ok = [a for a in answers if a[0] == 200]
        self.assertLessEqual(statuses, {200, 503}, answers[:5])
        self.assertTrue(all(a[2] for a in answers if a[0] == 503), "503 without Retry-After")
        self.assertGreaterEqual(len(ok), 20, "the history was hardly served: %s" % statuses)
        self.assertGreater(min(a[1] for a in ok), 200000)

        def figures(turns):
            lat = [x for t in turns for x in t[0]]
            gaps = [b - a for t in turns for a, b in zip(t[1], t[1][1:])]
            rate = sum(len(t[1]) for t in turns) / (len(turns) * WINDOW)
            return quantile(lat, 0.5), quantile(lat, 0.9), max(lat), max(gaps), rate
        q50, q90, qmax, qgap, qrate = figures(quiet)
        b50, b90, bmax, bgap, brate = figures(busy)
        print("/metrics quiet: p50 %.1f ms, p90 %.1f ms, max %.1f ms; longest gap between "
              "samples %.0f ms, %.0f samples/s" % (q50 * 1e3, q90 * 1e3, qmax * 1e3, qgap * 1e3,
                                                   qrate))
        print("/metrics with %d readers: p50 %.1f ms, p90 %.1f ms, max %.1f ms; longest gap "
              "%.0f ms, %.0f samples/s; %d answers of %d bytes, %d answered 503" % (
                  READERS, b50 * 1e3, b90 * 1e3, bmax * 1e3, bgap * 1e3, brate, len(ok),
                  ok[0][1], len(answers) - len(ok)))
        # Scrapes do not queue behind the builds: the median stays within a few ms of the
        # quiet one (it was 10 times it), and so does the 90th percentile.
        self.assertLessEqual(b50, 2 * q50 + 0.003)
        self.assertLessEqual(b90, 2 * q90 + 0.010)
        # The sampler keeps its pace: not fewer samples, and no gap far past the quiet ones.
        self.assertGreaterEqual(brate, 0.75 * qrate)
        self.assertLessEqual(bgap, max(3 * qgap, 0.6))

        def back():
            rss = rss_kib(lw.proc.pid)
            return rss <= base_rss + 6 * 1024 and rss
        eventually(back, timeout=15, interval=0.2, what="RSS back within 6 MiB of %d KiB" %
                   base_rss)


if __name__ == "__main__":
    lwtest.main()
