#!/usr/bin/env python3
"""live_page_bench.py - /metrics latency with and without a live page polling the history.

Starts build/loadwatch on loopback with a few targets, then measures GET /metrics latency
(N requests, 20 a second) twice: alone, and while a poller does what the live page does (lists
the series, then asks /api/v1/history for every kept series with rate=1 and since=the last
timestamp, once per sample interval; its first request fetches 15 minutes). Prints p50/p99 of
each and their difference. Bounded: about 2 x N / 20 seconds.

Usage: bench/live_page_bench.py [--build build] [--requests 600]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "lib"))
from lwtest import Loadwatch, http_get  # noqa: E402


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


def page(base, stop, counts):
    listed = json.loads(http_get(base + "/api/v1/history/series")[2])
    keys = [s["series"] for s in listed["data"]][:100]
    since = time.time() - 900
    while not stop.is_set():
        q = urllib.parse.urlencode({"series": ",".join(keys), "since": since, "rate": 1})
        body = json.loads(http_get(base + "/api/v1/history?" + q)[2])
        if body["data"][0]:
            since = body["data"][0][-1]
        counts.append(len(body["data"][0]))
        stop.wait(listed["interval_seconds"])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--requests", type=int, default=600)
    a = ap.parse_args()
    os.environ.setdefault("LOADWATCH_BINARY", os.path.join(a.build, "loadwatch"))
    args = ["--target=self=comm:loadwatch", "--target=init=pid:1", "--target=py=comm:python3"]
    import lwtest
    lwtest.BINARY = os.environ["LOADWATCH_BINARY"]
    with Loadwatch(args) as lw:
        time.sleep(3)
        alone = latencies(lw.url + "/metrics", a.requests)
        stop, counts = threading.Event(), []
        t = threading.Thread(target=page, args=(lw.url, stop, counts))
        t.start()
        try:
            with_page = latencies(lw.url + "/metrics", a.requests)
        finally:
            stop.set()
            t.join()
    print("metrics_alone p50_ms=%.2f p99_ms=%.2f" % alone)
    print("metrics_with_page p50_ms=%.2f p99_ms=%.2f page_requests=%d" % (
        with_page[0], with_page[1], len(counts)))
    print("difference p50_ms=%.2f p99_ms=%.2f" % (with_page[0] - alone[0], with_page[1] - alone[1]))


if __name__ == "__main__":
    main()
