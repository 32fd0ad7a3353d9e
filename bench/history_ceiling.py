#!/usr/bin/env python3
"""The history at its documented maxima: answer size and time, concurrent readers, memory.

Starts loadwatch (loopback only) sampling every 10 ms into a history of --points points
(10,000 by default: then 100 series make the 1,000,000-value cap of one answer) of 12 targets,
all the daemon itself so their values move (97 series), and waits until it is full. Then:

  - asks 5 times, one at a time, for the whole history of the 97 series: bytes and seconds;
  - asks for 100 series (the per-request cap) over the whole history: over 1,000,000 values,
    which must be refused with a 400 naming the cap;
  - 20 readers from 4 loopback addresses, 10 answers each (a 503 is asked again after its
    Retry-After), while one client from a fifth address scrapes /metrics every 20 ms:
    their statuses, /metrics latency, VmHWM (peak RSS, restarted through /proc/PID/clear_refs)
    and VmRSS polled until it is back within --after-slack-mib of the baseline.

    python3 bench/history_ceiling.py --binary build/loadwatch [--points 10000] [--json out]

Every wait is bounded; the daemon is stopped by its PID.
"""
import argparse
import http.client
import json
import os
import shutil
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))
import lwtest  # noqa: E402

FAMILIES = ("loadwatch_process_cpu_seconds_total,loadwatch_process_resident_memory_bytes,"
            "loadwatch_process_open_fds,loadwatch_process_max_fds,loadwatch_process_threads,"
            "loadwatch_process_cpu_limit_cores,loadwatch_target_processes,loadwatch_procs_running")
# Three more single series: 100 in all, over the 1,000,000 values of one answer at 10,000 points.
OVER_CAP = FAMILIES + (",loadwatch_swap_in_pages_total,loadwatch_swap_out_pages_total,"
                       "loadwatch_tcp_listen_drops_total")


def get(port, path, address="127.0.0.1", timeout=120):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout,
                                      source_address=(address, 0))
    try:
        conn.request("GET", path)
        r = conn.getresponse()
        return r.status, r.read(), r.getheader("Retry-After")
    finally:
        conn.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--binary", default=os.path.join(ROOT, "build", "loadwatch"))
    ap.add_argument("--points", type=int, default=10000)
    ap.add_argument("--readers", type=int, default=20)
    ap.add_argument("--after-slack-mib", type=float, default=6)
    ap.add_argument("--json", help="write the figures here")
    args = ap.parse_args()

    work = tempfile.mkdtemp(prefix="lw-histceiling-")
    pidfile = os.path.join(work, "self.pid")
    os.environ["LOADWATCH_BINARY"] = args.binary
    lw = lwtest.Loadwatch(["--sample.interval=10ms", "--history.points=%d" % args.points]
                          + ["--target=self%d=pidfile:%s" % (i, pidfile) for i in range(12)])
    lw.args[0] = args.binary
    lw.__enter__()
    proc, port = lw.proc, lw.port
    with open(pidfile, "w") as f:
        f.write(str(proc.pid))
    out = {"binary": args.binary, "points": args.points, "readers": args.readers}
    try:
        t0 = time.time()

        def points():
            status, body, _ = get(port, "/api/v1/history?series=loadwatch_procs_running")
            return len(json.loads(body)["data"][0]) if status == 200 else 0
        lwtest.eventually(lambda: points() >= args.points, timeout=args.points * 0.05 + 60,
                          interval=1, what="a full history")
        out["fill_seconds"] = round(time.time() - t0, 1)

        whole = "/api/v1/history?series=" + FAMILIES
        serial = []
        for _ in range(5):
            t = time.time()
            status, body, _ = get(port, whole)
            serial.append(time.time() - t)
            assert status == 200, body[:200]
        answer = json.loads(body)
        out.update(series=len(answer["series"]) - 1, answer_points=len(answer["data"][0]),
                   answer_bytes=len(body), answer_seconds=[round(s, 3) for s in serial])
        status, body, _ = get(port, "/api/v1/history?series=" + OVER_CAP)
        out["over_cap"] = {"status": status, "error": json.loads(body).get("error", "")}

        base = lwtest.rss_kib(proc.pid)
        with open("/proc/%d/clear_refs" % proc.pid, "w") as f:
            f.write("5")
        latencies, stop = [], threading.Event()

        def scrape():
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60,
                                              source_address=("127.0.0.200", 0))
            while not stop.is_set():
                t = time.perf_counter()
                conn.request("GET", "/metrics")
                conn.getresponse().read()
                latencies.append(time.perf_counter() - t)
                stop.wait(0.02)
            conn.close()

        def reader(i):
            statuses, busy, worst = set(), 0, 0.0
            for _ in range(10):
                for _ in range(300):  # bounded retries of a 503
                    t = time.time()
                    status, body, wait = get(port, whole, "127.0.0.%d" % (10 + i % 4))
                    if status != 503 or not wait:
                        break
                    busy += 1
                    time.sleep(float(wait))
                worst = max(worst, time.time() - t)
                statuses.add(status)
            return statuses, busy, worst
        scraper = threading.Thread(target=scrape)
        scraper.start()
        t = time.time()
        got = lwtest.concurrently(args.readers, reader)
        took = time.time() - t
        stop.set()
        scraper.join(60)
        peak = lwtest.rss_kib(proc.pid, "VmHWM")

        def back():
            rss = lwtest.rss_kib(proc.pid)
            return rss if rss <= base + args.after_slack_mib * 1024 else None
        try:
            after = lwtest.eventually(back, timeout=20, interval=0.2, what="RSS back")
        except AssertionError:
            after = lwtest.rss_kib(proc.pid)
        latencies.sort()
        q = lambda p: round(latencies[min(len(latencies) - 1, int(p * len(latencies)))] * 1e3, 1)
        out.update(readers_seconds=round(took, 1),
                   statuses=sorted(set().union(*(g[0] for g in got if g))),
                   retried_503=sum(g[1] for g in got if g),
                   slowest_answer_s=round(max(g[2] for g in got if g), 2),
                   metrics_ms={"p50": q(0.5), "p99": q(0.99), "max": q(1.0),
                               "scrapes": len(latencies)},
                   baseline_kib=base, peak_kib=peak, after_kib=after,
                   passed=out["over_cap"]["status"] == 400
                   and after <= base + args.after_slack_mib * 1024)
        print(json.dumps(out, indent=1))
    finally:
        lw.__exit__(None, None, None)
        shutil.rmtree(work, ignore_errors=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)
    sys.exit(0 if out.get("passed") else 1)


if __name__ == "__main__":
    main()
