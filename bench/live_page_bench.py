#!/usr/bin/env python3
"""live_page_bench.py - /metrics latency with and without a live page polling the history.

Starts build/loadwatch on loopback with a few targets, then measures GET /metrics latency
(N requests, 20 a second) in ROUNDS alternating pairs: alone, and while a poller does what the
live page does, from a second process (lists the series, then asks /api/v1/history for every kept series with rate=1
and since=the last timestamp, once per sample interval; its first request fetches 15
minutes). Alternating keeps the machine's own drift out of the comparison on a shared host.
Prints p50/p99 and the daemon's CPU (ms per second, from /proc/PID/stat) of each phase, and
the median over rounds of the ratios with/alone. Bounded: about 2 x ROUNDS x N / 20 seconds.

Usage: bench/live_page_bench.py [--build build] [--requests 600] [--rounds 3]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import multiprocessing
import time
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "lib"))
from lwtest import Loadwatch, http_get  # noqa: E402


def cpu_seconds(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def latencies(url, n):
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        status = http_get(url)[0]
        out.append((time.perf_counter() - t0) * 1000)
        assert status == 200, status
        time.sleep(0.05)
    out.sort()
    return out[len(out) // 2], out[int(len(out) * 0.99)]


def page(base, stop, count):
    """The page's polling, in its own process so that its JSON parsing does not hold this
    interpreter's lock while the /metrics latencies are timed."""
    listed = json.loads(http_get(base + "/api/v1/history/series")[2])
    keys = [s["series"] for s in listed["data"]][:100]
    since = time.time() - 900
    while not stop.is_set():
        q = urllib.parse.urlencode({"series": ",".join(keys), "since": since, "rate": 1})
        body = json.loads(http_get(base + "/api/v1/history?" + q)[2])
        if body["data"][0]:
            since = body["data"][0][-1]
        with count.get_lock():
            count.value += 1
        stop.wait(listed["interval_seconds"])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--requests", type=int, default=600)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    os.environ.setdefault("LOADWATCH_BINARY", os.path.join(a.build, "loadwatch"))
    args = ["--target=self=comm:loadwatch", "--target=init=pid:1", "--target=py=comm:python3"]
    import lwtest
    lwtest.BINARY = os.environ["LOADWATCH_BINARY"]
    ratios = {"p50": [], "p99": [], "cpu": []}

    def phase(lw, name, with_page):
        stop, count = multiprocessing.Event(), multiprocessing.Value("i", 0)
        t = multiprocessing.Process(target=page, args=(lw.url, stop, count)) if with_page else None
        if t:
            t.start()
        c0, w0 = cpu_seconds(lw.proc.pid), time.monotonic()
        try:
            p50, p99 = latencies(lw.url + "/metrics", a.requests)
        finally:
            stop.set()
            if t:
                t.join()
        cpu_ms = (cpu_seconds(lw.proc.pid) - c0) / (time.monotonic() - w0) * 1000
        print("%s p50_ms=%.2f p99_ms=%.2f daemon_cpu_ms_per_s=%.1f page_requests=%d" % (
            name, p50, p99, cpu_ms, count.value), flush=True)
        return p50, p99, cpu_ms

    with Loadwatch(args) as lw:
        time.sleep(3)
        for r in range(a.rounds):
            alone = phase(lw, "round=%d metrics_alone" % r, False)
            with_page = phase(lw, "round=%d metrics_with_page" % r, True)
            for key, i in (("p50", 0), ("p99", 1), ("cpu", 2)):
                ratios[key].append(with_page[i] / alone[i] if alone[i] else float("nan"))
    print("median_ratio_with_page_over_alone p50=%.2f p99=%.2f daemon_cpu=%.2f rounds=%d" % (
        statistics.median(ratios["p50"]), statistics.median(ratios["p99"]),
        statistics.median(ratios["cpu"]), a.rounds))


if __name__ == "__main__":
    main()
