#!/usr/bin/env python3
"""fleet_prometheus_bench.py - `loadwatch report --prometheus` over a synthetic fleet.

Generates a fleet (default 50 generator hosts and 20 target hosts, one run of 5 phases of
120 s, scraped every 5 s) with the families the report across hosts reads, including each
generator's 256-bucket request-duration histogram (tests/lib/synthetic_fleet.py), writes it as
OpenMetrics, backfills it with `promtool tsdb create-blocks-from openmetrics`, starts
Prometheus on loopback over it, and times the report: wall time, the reader's CPU and peak
RSS, and the queries and answer bytes Prometheus counted itself
(prometheus_http_requests_total, prometheus_http_response_size_bytes_sum, gzip on the
wire), and the time Prometheus spent evaluating them (its query log). Each binary
given is timed ROUNDS times, alternating, and the verdict checked against the data.

Usage: bench/fleet_prometheus_bench.py [--binary build/loadwatch ...] [--generators 50]
       [--targets 20] [--phases 5] [--phase-seconds 120] [--scrape 5] [--rounds 3]
"""
import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "lib"))
from synthetic_fleet import Fleet  # noqa: E402


def timed_report(binary, url, fleet, prom):
    before = prom.queries_served()
    logged = len(prom.logged_queries())
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    r = subprocess.run(["/usr/bin/time", "-f", "%M", binary, "report", "--prometheus", url,
                        "--run", fleet.run_id, "--format", "json"],
                       capture_output=True, text=True, timeout=600)
    wall = time.monotonic() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    after = prom.queries_served()
    if r.returncode != 0:
        raise SystemExit("%s: exit %d: %s" % (binary, r.returncode, r.stderr[-2000:]))
    rss_kib = int(r.stderr.strip().splitlines()[-1])
    rep = json.loads(r.stdout)
    evals = prom.logged_queries(logged)
    histogram = [e["eval_s"] for e in evals if "request_duration_seconds_bucket" in e["query"]]
    return {
        "eval_s": sum(e["eval_s"] for e in evals),
        "histogram_eval_s": sum(histogram),
        "wall_s": wall,
        "cpu_s": (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime),
        "rss_mib": rss_kib / 1024,
        "queries": after[0] - before[0],
        "answer_mib": (after[1] - before[1]) / 2**20,
        "hosts": len(rep["hosts"]),
        "summary": rep["summary"],
        "p95": [p.get("p95_seconds") for p in rep["fleet"]["phases"]],
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", action="append")
    ap.add_argument("--generators", type=int, default=50)
    ap.add_argument("--targets", type=int, default=20)
    ap.add_argument("--phases", type=int, default=5)
    ap.add_argument("--phase-seconds", type=int, default=120)
    ap.add_argument("--scrape", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    binaries = a.binary or ["build/loadwatch"]
    fleet = Fleet(generators=a.generators, targets=a.targets, phases=a.phases,
                  phase_seconds=a.phase_seconds, scrape_seconds=a.scrape)
    work = tempfile.mkdtemp(prefix="lw-fleet-bench-")
    try:
        prom = fleet.prometheus(work)
        with prom as url:
            print("fleet: %d generators + %d targets, %d phases of %d s, scraped every %d s"
                  % (a.generators, a.targets, a.phases, a.phase_seconds, a.scrape))
            print("OpenMetrics %.0f MiB written in %.1f s; promtool backfill %.1f s"
                  % (prom.timings["openmetrics_bytes"] / 2**20, prom.timings["write_s"],
                     prom.timings["promtool_s"]))
            results = {b: [] for b in binaries}
            for _ in range(a.rounds):
                for b in binaries:
                    results[b].append(timed_report(b, url, fleet, prom))
            for b in binaries:
                rs = results[b]
                med = lambda k: statistics.median(x[k] for x in rs)
                print("%s: %d hosts, %d queries, %.1f MiB answered; wall %.2f s, CPU %.2f s, "
                      "peak RSS %.0f MiB; Prometheus evaluating %.2f s, of which the histogram "
                      "%.2f s (median of %d)"
                      % (b, rs[0]["hosts"], med("queries"), med("answer_mib"), med("wall_s"),
                         med("cpu_s"), med("rss_mib"), med("eval_s"), med("histogram_eval_s"),
                         len(rs)))
                print("  verdict: %s" % rs[0]["summary"])
                print("  fleet p95 per phase: %r" % rs[0]["p95"])
                ok = fleet.saturated_host.instance in rs[0]["summary"]
                print("  names the saturated %s: %s" % (fleet.saturated_host.instance, ok))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
