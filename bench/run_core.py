#!/usr/bin/env python3
"""Core benchmark: loadwatch's per-second sampling against the raw /proc floor and
against process-exporter 0.7.10, in one run on this machine.

Scenario: N extra sleeping processes (comm "benchsleep") and one process holding F fds
(comm "benchfdhold"); targets sleepers=comm:benchsleep and fds=pid:<holder>.

Measures, all in the same run (the machines are noisy: compare ratios, not absolutes):
  floor        bench/proc_floor over the same PIDs: stat+status+io reads + stat() of fd dir
  collector    bench/targets_bench: the targets collector alone, CPU per sample
  one read     the guard on sleeping processes: targets_bench --one-read on the same processes
               once they are older than 16 s, against a listing of /proc plus one schedstat
               pread per member (and per other process as often as the comm scan must look
               at it), the two alternating; over --max-one-read-ratio (1.2) fails the run
               (exit 1)
  daemon       the real loadwatch (targets collector only, then every default collector),
               CPU per sample from /proc/PID/stat over a window of 1 s samples
  scrape       /metrics p50/p99 with 4 concurrent gzip scrapers (wrk): paced at 100/s each, and
               back to back
  rss          loadwatch VmRSS after the run
  peer         process-exporter 0.7.10 with the same two groups: CPU per scrape

Usage: bench/run_core.py [--build build] [--procs 500] [--fds 10000] [--seconds 20]
                         [--out bench/results/core.json] [--no-build]
It first configures BUILD with -DLOADWATCH_BENCH=ON and builds loadwatch, targets_bench and
proc_floor (bench/bench_build.py), unless --no-build.
Everything it starts it stops by PID; it binds only 127.0.0.1. Bounded by --seconds per phase.
"""
import argparse
import json
import os
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

from bench_build import build_targets

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
CLK_TCK = os.sysconf("SC_CLK_TCK")
sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))
import lwtest  # noqa: E402


def cpu_seconds(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def wait_http(url, proc, timeout=15):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError("%s exited early" % url)
        try:
            urllib.request.urlopen(url, timeout=1).read()
            return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError("%s did not answer" % url)


class Fixture:
    """Sleepers and an fd holder; every child ends by itself after `lifetime` seconds."""

    def __init__(self, procs, fds, lifetime):
        self.started = time.monotonic()
        self.dir = tempfile.mkdtemp(prefix="lwbench")
        self.children = []
        sleep_link = os.path.join(self.dir, "benchsleep")
        os.symlink(shutil.which("sleep"), sleep_link)
        for _ in range(procs):
            self.children.append(subprocess.Popen([sleep_link, str(lifetime)]))
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        self.fds = min(fds, hard - 64)
        holder = ("import os,sys,time,resource\n"
                  "resource.setrlimit(resource.RLIMIT_NOFILE,(%d,%d))\n"
                  "fds=[os.open('/dev/null',os.O_RDONLY) for _ in range(%d)]\n"
                  "print('ready',flush=True)\ntime.sleep(%d)\n" % (self.fds + 64, hard, self.fds,
                                                                 lifetime))
        holder_link = os.path.join(self.dir, "benchfdhold")
        os.symlink(sys.executable, holder_link)
        self.holder = subprocess.Popen([holder_link, "-c", holder], stdout=subprocess.PIPE)
        self.holder.stdout.readline()
        self.children.append(self.holder)
        self.pids = [c.pid for c in self.children]

    def close(self):
        for c in self.children:
            if c.poll() is None:
                c.send_signal(signal.SIGTERM)
        for c in self.children:
            try:
                c.wait(5)
            except subprocess.TimeoutExpired:
                c.kill()
        shutil.rmtree(self.dir, ignore_errors=True)


def keyvals(line):
    return {k: v for k, v in (kv.split("=", 1) for kv in line.split()[1:] if "=" in kv)}


def run_floor_and_collector(build, holder_pid, samples):
    out = subprocess.run([os.path.join(build, "bench", "targets_bench"),
                          "--target", "sleepers=comm:benchsleep",
                          "--target", "fds=pid:%d" % holder_pid,
                          "--samples", str(samples), "--interval-ms", "100",
                          "--floor", os.path.join(build, "bench", "proc_floor"), "--libproc2"],
                         stdout=subprocess.PIPE, text=True, check=True, timeout=300).stdout
    result = {}
    for line in out.splitlines():
        if line.split() and line.split()[0] in ("targets_bench", "proc_floor", "ratio", "libproc2"):
            result[line.split()[0]] = keyvals(line)
    return result


def run_one_read_guard(build, fixture, max_ratio):
    """targets_bench --one-read with every member asleep and past the 16 s in which a new
    process is checked every sample; 45 samples so that the 15-sample re-reads are in."""
    time.sleep(max(0.0, 17 - (time.monotonic() - fixture.started)))
    out = subprocess.run([os.path.join(build, "bench", "targets_bench"),
                          "--target", "sleepers=comm:benchsleep",
                          "--target", "fds=pid:%d" % fixture.holder.pid,
                          "--samples", "45", "--interval-ms", "100",
                          "--max-one-read-ratio", str(max_ratio)],
                         stdout=subprocess.PIPE, text=True, timeout=300)
    result = {"max_ratio": max_ratio, "passed": out.returncode == 0}
    for line in out.stdout.splitlines():
        if line.startswith("one_read "):
            result.update(keyvals(line))
        elif line.startswith("ratio targets_over_one_read="):
            result["ratio"] = float(line.split("=", 1)[1])
    if "ratio" not in result:
        raise RuntimeError("targets_bench --one-read gave no ratio:\n" + out.stdout)
    return result


def run_daemon(build, holder_pid, seconds, only_targets):
    port = lwtest.free_port()
    args = [os.path.join(build, "loadwatch"), "--web.listen-address=127.0.0.1:%d" % port,
            "--target=sleepers=comm:benchsleep", "--target=fds=pid:%d" % holder_pid,
            "--log.level=warn"]
    if only_targets:
        help_text = subprocess.run([args[0], "--help"], stdout=subprocess.PIPE, text=True).stdout
        for word in help_text.split():
            if word.startswith("--no-collector.") and word != "--no-collector.targets":
                args.append(word)
    proc = subprocess.Popen(args)
    try:
        url = "http://127.0.0.1:%d/metrics" % port
        wait_http(url, proc)
        time.sleep(2)  # past the first samples, which open per-process handles
        c0, t0 = cpu_seconds(proc.pid), time.time()
        time.sleep(seconds)
        c1, t1 = cpu_seconds(proc.pid), time.time()
        result = {"cpu_ms_per_sample": 1000 * (c1 - c0) / (t1 - t0),
                  "cpu_percent": 100 * (c1 - c0) / (t1 - t0)}
        if not only_targets:
            result.update(scrape_latency(url))
            result["rss_bytes"] = lwtest.rss_kib(proc.pid) * 1024
        return result
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(10)


def wrk_duration_ms(text):
    """wrk prints latencies as 759.00us, 1.20ms or 1.01s."""
    for unit, scale in (("us", 0.001), ("ms", 1.0), ("s", 1000.0)):
        if text.endswith(unit):
            return float(text[:-len(unit)]) * scale
    raise ValueError("unexpected wrk latency %r" % text)


def run_wrk(url, scrapers, seconds, script=None):
    wrk = shutil.which("wrk")
    if not wrk:
        sys.exit("wrk not found: install it (scripts/install-deps test)")
    cmd = [wrk, "-t2", "-c%d" % scrapers, "-d%ds" % seconds, "--latency",
           "-H", "Accept-Encoding: gzip", url]
    if script:
        cmd[1:1] = ["-s", script]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=seconds + 30,
                         check=True).stdout
    pct, rate = {}, 0.0
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] in ("50%", "99%"):
            pct[parts[0]] = wrk_duration_ms(parts[1])
        if line.startswith("Requests/sec:"):
            rate = float(parts[1])
    return pct["50%"], pct["99%"], rate


def scrape_latency(url, scrapers=4, seconds=10, rounds=5):
    """/metrics latency with 4 concurrent keep-alive scrapers asking for gzip, measured by wrk
    (a Python client's own GIL and connection overhead would dominate sub-ms figures):
    paced, each scraper 100 times a second (the target figure), and back to back, which on 2
    cores mostly measures wrk and the daemon's threads queueing for the CPU.

    The paced runs alternate with the same load on /-/healthy, which does no work: its p99 is
    this machine's floor for the measurement (one stall of the VM's vCPU, seen here at 3 ms on a
    /proc/loadavg read, moves a 5 s run's p99 on its own). Medians of `rounds` runs each."""
    script = os.path.join(HERE, "scrape_paced.lua")
    healthy = url.rsplit("/", 1)[0] + "/-/healthy"
    metrics_runs, healthy_runs = [], []
    for _ in range(rounds):
        metrics_runs.append(run_wrk(url, scrapers, 5, script))
        healthy_runs.append(run_wrk(healthy, scrapers, 5, script))
    median = lambda runs, i: statistics.median(r[i] for r in runs)  # noqa: E731
    s50, s99, srate = run_wrk(url, scrapers, seconds)
    return {"scrape_p50_ms": median(metrics_runs, 0), "scrape_p99_ms": median(metrics_runs, 1),
            "scrape_p99_runs_ms": [r[1] for r in metrics_runs],
            "healthy_p50_ms": median(healthy_runs, 0), "healthy_p99_ms": median(healthy_runs, 1),
            "healthy_p99_runs_ms": [r[1] for r in healthy_runs],
            "saturated_p50_ms": s50, "saturated_p99_ms": s99,
            "saturated_scrapes_per_second": srate}


def run_process_exporter(holder_pid, scrapes):
    exe = shutil.which("prometheus-process-exporter")
    if not exe:
        return {"skipped": "prometheus-process-exporter not installed"}
    d = tempfile.mkdtemp()
    cfg = os.path.join(d, "pe.yml")
    with open(cfg, "w") as f:
        f.write("process_names:\n"
                "  - name: sleepers\n    comm: [benchsleep]\n"
                "  - name: fds\n    comm: [benchfdhold]\n")
    port = lwtest.free_port()
    proc = subprocess.Popen([exe, "-config.path", cfg, "-web.listen-address",
                             "127.0.0.1:%d" % port], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        url = "http://127.0.0.1:%d/metrics" % port
        wait_http(url, proc)
        for _ in range(2):
            urllib.request.urlopen(url, timeout=30).read()
        c0 = cpu_seconds(proc.pid)
        for _ in range(scrapes):
            urllib.request.urlopen(url, timeout=30).read()
        c1 = cpu_seconds(proc.pid)
        return {"cpu_ms_per_scrape": 1000 * (c1 - c0) / scrapes,
                "rss_bytes": lwtest.rss_kib(proc.pid) * 1024}
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(10)
        shutil.rmtree(d)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--procs", type=int, default=500)
    ap.add_argument("--fds", type=int, default=10000)
    ap.add_argument("--seconds", type=int, default=20)
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "results", "core.json"))
    ap.add_argument("--no-build", action="store_true", help="use BUILD as it is")
    ap.add_argument("--max-one-read-ratio", type=float, default=1.2,
                    help="the sleeping processes' guard: fail over this many one-read floors")
    a = ap.parse_args()
    if not a.no_build:
        build_targets(a.build, ["loadwatch", "targets_bench", "proc_floor"])
    fixture = Fixture(a.procs, a.fds, lifetime=8 * a.seconds + 120)
    try:
        res = {"procs": a.procs, "fds": fixture.fds}
        res.update(run_floor_and_collector(a.build, fixture.holder.pid, 20))
        res["daemon_targets_only"] = run_daemon(a.build, fixture.holder.pid, a.seconds, True)
        res["daemon_all_collectors"] = run_daemon(a.build, fixture.holder.pid, a.seconds, False)
        res["one_read_guard"] = run_one_read_guard(a.build, fixture, a.max_one_read_ratio)
        res["process_exporter"] = run_process_exporter(fixture.holder.pid, 10)
    finally:
        fixture.close()
    floor_ms = float(res["proc_floor"]["cpu_us_per_pass"]) / 1000
    coll_ms = float(res["targets_bench"]["cpu_us_per_sample"]) / 1000
    d1 = res["daemon_targets_only"]["cpu_ms_per_sample"]
    d2 = res["daemon_all_collectors"]
    pe = res["process_exporter"].get("cpu_ms_per_scrape")
    rows = [
        ("raw /proc floor (proc_floor), per pass", "%.1f ms" % floor_ms, "1.00"),
        ("targets collector, per sample", "%.1f ms" % coll_ms, "%.2f" % (coll_ms / floor_ms)),
        ("loadwatch daemon, targets only, per 1 s sample", "%.1f ms" % d1, "%.2f" % (d1 / floor_ms)),
        ("loadwatch daemon, all collectors, per 1 s sample", "%.1f ms" % d2["cpu_ms_per_sample"],
         "%.2f" % (d2["cpu_ms_per_sample"] / floor_ms)),
        ("libproc2 procps_pids_select, same items", "%.1f ms" %
         (float(res["libproc2"]["cpu_us_per_pass"]) / 1000) if "libproc2" in res else "n/a",
         res.get("libproc2", {}).get("ratio_over_floor", "n/a")),
        ("process-exporter 0.7.10, per scrape", "%.1f ms" % pe if pe else "n/a",
         "%.2f" % (pe / floor_ms) if pe else "n/a"),
        ("/metrics p50 / p99, 4 scrapers at 100/s each (median of 5 runs)", "%.2f / %.2f ms" %
         (d2["scrape_p50_ms"], d2["scrape_p99_ms"]), ""),
        ("/-/healthy p50 / p99, same load, alternating (the machine's floor)", "%.2f / %.2f ms" %
         (d2["healthy_p50_ms"], d2["healthy_p99_ms"]), ""),
        ("/metrics p50 / p99, 4 scrapers back to back (%d/s)" %
         d2["saturated_scrapes_per_second"], "%.2f / %.2f ms" %
         (d2["saturated_p50_ms"], d2["saturated_p99_ms"]), ""),
        ("loadwatch RSS", "%.1f MiB" % (d2["rss_bytes"] / 2**20), ""),
    ]
    guard = res["one_read_guard"]
    print("\n%d sleeping processes + 1 holding %d fds; CPU is user+system\n" % (a.procs,
                                                                                 fixture.fds))
    print("| measure | value | x floor |\n| --- | --- | --- |")
    for r in rows:
        print("| %s | %s | %s |" % r)
    if pe:
        print("\nprocess-exporter CPU per scrape / loadwatch CPU per sample: %.1fx" %
              (pe / d2["cpu_ms_per_sample"]))
    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    with open(a.out, "w") as f:
        json.dump(res, f, indent=2)
    print("\nraw figures: %s" % a.out)
    print("\nsleeping processes' guard: the targets collector costs %.2f x a listing plus one "
          "read per member (%s pids listed, %s reads a pass; budget %.2f x): %s" %
          (guard["ratio"], guard.get("pids", "?"), guard.get("reads_per_pass", "?"),
           guard["max_ratio"],
           "ok" if guard["passed"] else "FAIL"))
    if not guard["passed"]:
        sys.exit(1)


if __name__ == "__main__":
    main()
