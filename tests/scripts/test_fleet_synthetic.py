#!/usr/bin/env python3
"""`report --prometheus` over a synthetic fleet: 4 generator and 2 target hosts (and 2 of
another environment), written as OpenMetrics, backfilled with `promtool tsdb
create-blocks-from openmetrics` and served by a Prometheus on loopback (tests/lib/
synthetic_fleet.py). The ground truth is the data itself: which hosts took part, which
generator has its CPU at the cap, the fleet's req/s per phase. Checked: every host is named
with its role, the verdict names the saturated generator, `--match` narrows the instances,
and the queries Prometheus answered (its own counters) do not grow with the hosts. Skipped
(exit 77) without prometheus and promtool.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
from lwtest import BINARY, SKIP_EXIT  # noqa: E402
from synthetic_fleet import Fleet  # noqa: E402


def report(url, fleet, *args):
    return subprocess.run([BINARY, "report", "--prometheus", url, "--run", fleet.run_id,
                           "--format", "json", *args], capture_output=True, text=True, timeout=60)


def check(fleet, prom, url, failures):
    perf = {h.instance: h.role for h in fleet.perf_hosts}
    before = prom.queries_served()
    r = report(url, fleet, "--match", '{job="loadwatch",env="perf"}')
    if r.returncode != 0:
        raise AssertionError("report: %d %s" % (r.returncode, r.stderr))
    all_queries = prom.queries_served()[0] - before[0]
    rep = json.loads(r.stdout)
    roles = {h["name"]: h["role"] for h in rep["hosts"]}
    if roles != perf:
        failures.append("hosts and roles %r, the fleet has %r" % (roles, perf))
    else:
        print("ok: the report names the %d hosts of env=perf with their roles" % len(perf))
    saturated = fleet.saturated_host.instance
    if not rep["summary"].count("%s (generator host): the host's CPU" % saturated):
        failures.append("the verdict %r does not name %s" % (rep["summary"], saturated))
    else:
        print("ok: verdict: %s" % rep["summary"])
    # The fleet's req/s: the generators' req/s in phase k, by construction.
    phases = rep["fleet"]["phases"]
    wrong = [(p["name"], p.get("rps"), fleet.fleet_rps(k)) for k, p in enumerate(phases)
             if abs(p.get("rps", -1) - fleet.fleet_rps(k)) > 0.01 * fleet.fleet_rps(k)]
    if len(phases) != fleet.phases or wrong:
        failures.append("fleet req/s (phase, report, truth): %r" % wrong)
    else:
        print("ok: the fleet's req/s matches the data in %d phases" % len(phases))
    # Its latency: the generators' histograms summed by bucket. The true quantile lies in the
    # bucket the report gives as its bound; the p95s averaged (25 ms) or the slowest host's
    # (40 ms) would not.
    wrong = []
    for q, key in ((0.5, "p50"), (0.95, "p95"), (0.99, "p99")):
        truth = fleet.true_quantile(q)
        for p in phases:
            low, high = p.get(key + "_low_seconds"), p.get(key + "_high_seconds")
            if p.get("latency_method") != "histogram" or not low <= truth <= high:
                wrong.append((p["name"], key, low, high, truth, p.get("latency_window")))
    # Each generator host's own p95, from the same buckets: its one latency.
    for h in rep["hosts"]:
        truth = {g.instance: g.latency for g in fleet.perf_hosts}.get(h["name"])
        for p in h["report"]["phases"] if h["role"] == "generator host" else []:
            if not p.get("p95_low_seconds", 1) <= truth <= p.get("p95_high_seconds", 0):
                wrong.append((h["name"], p["name"], p.get("p95_low_seconds"),
                              p.get("p95_high_seconds"), truth, p.get("latency_window")))
    if wrong:
        failures.append("fleet latency (phase, quantile, low, high, truth, window): %r" % wrong)
    else:
        print("ok: the fleet's p50/p95/p99 hold the true %.0f/%.0f/%.0f ms in every phase, "
              "each generator's p95 its own" % tuple(fleet.true_quantile(q) * 1000
                                                    for q in (0.5, 0.95, 0.99)))

    # Without --match the other environment's hosts join; with a narrower one, fewer hosts
    # cost the same queries: one per family for all of them.
    r = report(url, fleet)
    names = {h["name"] for h in json.loads(r.stdout)["hosts"]} if r.returncode == 0 else set()
    if names != {h.instance for h in fleet.hosts}:
        failures.append("without --match: %d %r" % (r.returncode, sorted(names)))
    before = prom.queries_served()
    r = report(url, fleet, "--match", 'instance=~"gen-0[12]:.*|sut-01:.*"')
    few_queries = prom.queries_served()[0] - before[0]
    few = [h["name"] for h in json.loads(r.stdout)["hosts"]] if r.returncode == 0 else []
    if len(few) != 3:
        failures.append("--match on 3 instances gave %r (%s)" % (few, r.stderr))
    elif few_queries != all_queries or all_queries > 50:
        failures.append("queries: %d for %d hosts, %d for 3" % (all_queries, len(perf),
                                                                 few_queries))
    else:
        print("ok: %d queries for %d hosts, %d for 3 (Prometheus's own count)"
              % (all_queries, len(perf), few_queries))
    r = report(url, fleet, "--match", '{env="perf"')
    if r.returncode != 2 or "--match: at byte" not in r.stderr:
        failures.append("a malformed --match: %d %r" % (r.returncode, r.stderr))
    # A regex only Prometheus can judge: its own reason, not just its status.
    r = report(url, fleet, "--match", '{env=~"("}')
    if r.returncode != 2 or "error parsing regexp" not in r.stderr:
        failures.append("a --match Prometheus refuses: %d %r" % (r.returncode, r.stderr))


def main():
    if not shutil.which("prometheus") or not shutil.which("promtool"):
        print("SKIP: prometheus or promtool missing (scripts/install-deps test)")
        return SKIP_EXIT
    fleet = Fleet(generators=4, targets=2, others=2, phases=4, phase_seconds=30,
                  scrape_seconds=2)
    failures = []
    work = tempfile.mkdtemp(prefix="lw-fleet-synth-")
    try:
        prom = fleet.prometheus(work)
        with prom as url:
            check(fleet, prom, url, failures)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
