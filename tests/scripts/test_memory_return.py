#!/usr/bin/env python3
"""Memory comes back after a burst of readers of every route that builds a big answer.

The daemon holds 20 stored runs of 1,000 phases (the run API's maxima). One burst per route
class, each in a fresh daemon: 36 concurrent readers of runs with their phases and of pages
of runs with their phases, and 500 phase POSTs (each answered with the whole run)
followed by readers of that run's report page. After each, VmRSS from /proc/PID/status must
come back to within 4 MiB of the baseline taken before it. It used to stay up to 20 MiB above:
the answers' scratch stayed behind in the malloc caches of every HTTP thread that built one.
"""
import json
import os
import shutil
import sys
import tempfile
import time
import unittest
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import lwtest  # noqa: E402
from lwtest import Loadwatch, eventually, rss_kib  # noqa: E402

SLACK_KIB = 4 * 1024
READERS = 36  # under the 40 handlers --web.max-requests lets run at once
# Readers come from 9 loopback addresses, 4 each: one address may run only a quarter of the
# handlers at once (its share), and the burst is about memory, not about that share.
ADDRESSES = 9


def stored_run(k, phases):
    """A finished run file as loadwatch writes it, `phases` phases long."""
    start = 1700000000 + k * 10000
    rid = "%s-mem%d" % (time.strftime("%Y%m%dT%H%M%S", time.gmtime(start)), k)
    doc = {"format": 1, "last_seen": start + phases + 1,
           "run": {"id": rid, "name": "mem%d" % k, "labels": {}, "origin": "api",
                   "state": "finished", "start": start, "end": start + phases + 1,
                   "phases": [{"name": "users=%d" % i, "start": start + i, "users": i}
                              for i in range(phases)]}}
    return rid, json.dumps(doc)


def get(url, reader=0):
    """GET from loopback address 127.0.0.(1 + reader % ADDRESSES); returns (status, body). A
    503 (the answer builders busy with other readers) is asked again after its Retry-After."""
    status, body, _ = lwtest.get_from(url, "127.0.0.%d" % (1 + reader % ADDRESSES),
                                      busy_retries=120)
    return status, body


def post(url, doc):
    req = urllib.request.Request(url, data=json.dumps(doc).encode(), method="POST",
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.loads(r.read())


def burst(work):
    """work(i) in READERS threads at once (each returns the statuses it saw); returns them all."""
    statuses = set()
    for got in lwtest.concurrently(READERS, work, timeout=120):
        if got is None:  # the reader raised something other than OSError, or hung
            got = {"reader failed"}
        statuses.update({type(got).__name__} if isinstance(got, OSError) else got)
    return statuses


class MemoryReturns(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="lw-memreturn-")
        os.makedirs(os.path.join(cls.dir, "runs"))
        cls.ids = []
        for k in range(20):
            rid, text = stored_run(k, 1000)
            cls.ids.append(rid)
            with open(os.path.join(cls.dir, "runs", rid + ".json"), "w") as f:
                f.write(text)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def returns(self, name, work, times=1):
        """Starts a daemon, takes its baseline RSS, runs `work` (a burst), and waits until RSS
        is back within SLACK_KIB of the baseline."""
        with Loadwatch(["--storage.path=" + self.dir, "--web.enable-run-api",
                        "--sample.interval=200ms"]) as lw:
            for _ in range(3):
                lw.metrics_text()
            lw.wait_samples(3)
            base = rss_kib(lw.proc.pid)
            t0 = time.time()
            for _ in range(times):
                self.assertEqual(work(lw), {200}, name)
            took = time.time() - t0

            def back():
                rss = rss_kib(lw.proc.pid)
                return rss <= base + SLACK_KIB and rss
            try:
                rss = eventually(back, timeout=15, interval=0.2, what="RSS back after " + name)
            except AssertionError:
                self.fail("%s: RSS %.1f MiB, baseline %.1f MiB (at most +%d MiB)" % (
                    name, rss_kib(lw.proc.pid) / 1024, base / 1024, SLACK_KIB // 1024))
            print("%s (%.1f s): RSS %.1f MiB after, baseline %.1f MiB" % (
                name, took, rss / 1024, base / 1024))

    def test_a_run_with_its_phases(self):
        def work(lw):  # each reader: 25 runs with their 1,000 phases
            return burst(lambda i: {
                get(lw.url + "/api/v1/runs/" + self.ids[(i + j) % len(self.ids)], i)[0]
                for j in range(25)})
        self.returns("36 x 25 GET /api/v1/runs/ID", work)

    def test_pages_of_runs_with_their_phases(self):
        def pages(lw, reader):
            seen, token = set(), ""
            for _ in range(20):  # bounded: 20 runs are 10 pages of 2
                status, body = get(lw.url + "/api/v1/runs?phases=1" +
                                   ("&page_token=" + token if token else ""), reader)
                seen.add(status)
                if status != 200:
                    break
                token = json.loads(body).get("next_page_token", "")
                if not token:
                    break
            return seen
        self.returns("36 readers x 5 of every GET /api/v1/runs?phases=1 page",
                     lambda lw: burst(lambda i: pages(lw, i)), times=5)

    def test_phase_posts_and_the_report_page(self):
        def work(lw):
            # Each POST is answered with the whole run so far.
            rid = post(lw.url + "/api/v1/runs", {"name": "mem-report"})["data"]["id"]
            for i in range(500):
                post(lw.url + "/api/v1/runs/%s/phases" % rid, {"users": i})
            post(lw.url + "/api/v1/runs/%s/stop" % rid, {})
            return burst(lambda i: {get(lw.url + "/api/v1/runs/%s/report.html" % rid, i)[0]
                                    for _ in range(3)})
        self.returns("500 phase POSTs, then 36 x 3 GET report.html", work)


if __name__ == "__main__":
    lwtest.main(verbosity=2)
