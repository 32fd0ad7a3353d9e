#!/usr/bin/env python3
"""Memory under hostile input: peak RSS and RSS after the burst, against a ceiling.

Each input is thrown alone (then taken away), then all of them together; PASS when every
input alone adds at most --budget-mib to the baseline RSS (the peak stays under the stated
ceiling, baseline + budget), every reader got its answers (200, after retrying any 503 with
Retry-After, as a client should) and RSS returns to within --after-slack-mib of the baseline
once each input is taken away, and once the whole burst is over.

Starts a loadwatch binary (loopback only) with a textfile directory, a Graphite port and two
Prometheus sources served from this process, then throws at it, in turn:

  source_1m     a source answering 1,000,000 series (14 MB, under max_response_bytes)
  source_15mib  a source answering one 15 MiB label value
  influx_pct    one Influx line with 128,000 distinct pctN fields, while /-/ready is polled
  influx_names  64 KiB transaction names x 100 x 8 databases
  textfiles     4 textfiles of 16 MiB (~1.1 M series each), then deleted
  runs_list     40 concurrent readers, each paging through GET /api/v1/runs?phases=1 over
                the documented maxima (100 stored runs of 1,000 phases, written before start)
  report_html   20 concurrent readers of report.html of a 1,000-phase run (made through the API)
  history       20 concurrent readers, 10 answers each, of every series of the 12 targets
                (all the daemon itself) over the whole history the daemon holds by then

and reports, per step and overall, VmHWM (peak RSS, restarted at each step through
/proc/PID/clear_refs) and VmRSS after the daemon settled,
the /metrics size, the slowest /-/ready answer during the Influx line and its status codes.
Taking an input away means switching the sources back to a small body and deleting the
textfiles; the "after" figure is taken a few samples after the last step.

    python3 bench/memory_ceiling.py --binary build/loadwatch [--budget-mib 40] [--json out]
        [--daemon-arg=--history.points=N]

Readers come from 8 loopback addresses (one address may run a quarter of --web.max-requests).

Every wait is bounded; the daemon is stopped by its PID.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))
import lwtest  # noqa: E402


def reset_peak(pid):
    """Restarts VmHWM from the current RSS (Linux >= 4.0), so each step has its own peak."""
    try:
        with open("/proc/%d/clear_refs" % pid, "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def get(url, timeout=30):
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


READER_ADDRESSES = 8  # a reader's share is a quarter of --web.max-requests per address


def read(url, reader, timeout=120):
    """GET from 127.0.0.(1 + reader % READER_ADDRESSES), as many clients would; a 503 with
    Retry-After is asked again after it, at most 300 times. Returns (status, body, 503s)."""
    return lwtest.get_from(url, "127.0.0.%d" % (1 + reader % READER_ADDRESSES), timeout, 300)


def post_json(url, doc, timeout=30):
    req = urllib.request.Request(url, data=json.dumps(doc).encode(), method="POST")
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return json.loads(r.read())


def post(url, body, timeout=120):
    req = urllib.request.Request(url, data=body, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code


class Bodies:
    """What the two sources answer; switched by the steps."""
    small = b"# TYPE ok gauge\nok 1\n"

    def __init__(self):
        self.one = self.small
        self.two = self.small


def stored_run(k, phases):
    """A run file as loadwatch writes it: run k of 100, finished days ago, `phases` phases."""
    start = 1700000000 + k * 10000
    ts = time.strftime("%Y%m%dT%H%M%S", time.gmtime(start))
    rid = "%s-bench%d" % (ts, k)
    doc = {"format": 1, "last_seen": start + phases + 1,
           "run": {"id": rid, "name": "bench%d" % k, "labels": {"k": str(k)}, "origin": "api",
                   "state": "finished", "start": start, "end": start + phases + 1,
                   "phases": [{"name": "users=%d" % i, "start": start + i, "users": i}
                              for i in range(phases)]}}
    return rid, json.dumps(doc)


def textfile_body(target_bytes):
    # Short series, as many as fit: the worst case for parsed size per byte of file.
    lines = []
    size = 0
    i = 0
    lines.append(b"# TYPE tf gauge\n")
    while size < target_bytes:
        line = b'tf{i="%d"} 1\n' % i
        lines.append(line)
        size += len(line)
        i += 1
    return b"".join(lines), i


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--binary", default=os.path.join(ROOT, "build", "loadwatch"))
    ap.add_argument("--budget-mib", type=float, default=40,
                    help="RSS one hostile input may add to the baseline at its peak")
    ap.add_argument("--daemon-arg", action="append", default=[],
                    help="an extra flag for the daemon (repeatable)")
    ap.add_argument("--after-slack-mib", type=float, default=8,
                    help="RSS after the burst may exceed the baseline by this much")
    ap.add_argument("--settle-seconds", type=float, default=4)
    ap.add_argument("--json", help="write the figures here")
    ap.add_argument("--steps", help="only these steps, comma-separated (default: all, then "
                    "all_at_once)")
    args = ap.parse_args()

    work = tempfile.mkdtemp(prefix="lw-memceiling-")
    textfiles = os.path.join(work, "textfiles")
    os.mkdir(textfiles)
    bodies = Bodies()
    server = lwtest.serve(lambda path: bodies.one if path == "/one" else bodies.two,
                          "text/plain; version=0.0.4")
    sport = server.server_address[1]
    config = os.path.join(work, "lw.yml")
    with open(config, "w") as f:
        f.write("sources:\n"
                "  - {name: one, kind: prometheus, url: 'http://127.0.0.1:%d/one', interval: 1s,"
                " timeout: 10s}\n"
                "  - {name: two, kind: prometheus, url: 'http://127.0.0.1:%d/two', interval: 1s,"
                " timeout: 10s}\n" % (sport, sport))
        # The history's targets: the daemon itself, so the values move (written once it runs).
        pidfile = os.path.join(work, "self.pid")
        f.write("targets:\n" + "".join("  - {name: self%d, match: {pidfile: '%s'}}\n" % (i, pidfile)
                                        for i in range(12)))
    # The run API's documented maxima, on disk before start: 100 runs of 1,000 phases.
    state = os.path.join(work, "state")
    os.makedirs(os.path.join(state, "runs"))
    for k in range(100):
        rid, text = stored_run(k, 1000)
        with open(os.path.join(state, "runs", rid + ".json"), "w") as f:
            f.write(text)
    port, gport = lwtest.free_port(), lwtest.free_port()
    log = open(os.path.join(work, "loadwatch.log"), "wb")
    proc = subprocess.Popen([args.binary, "--web.listen-address=127.0.0.1:%d" % port,
                             "--config.file=" + config,
                             "--collector.textfile.directory=" + textfiles,
                             "--graphite.listen-address=127.0.0.1:%d" % gport,
                             "--storage.path=" + state, "--web.enable-run-api"]
                            + args.daemon_arg,
                            stdout=log, stderr=subprocess.STDOUT)
    with open(pidfile, "w") as f:
        f.write(str(proc.pid))
    url = "http://127.0.0.1:%d" % port
    results = {"binary": args.binary, "budget_mib": args.budget_mib,
               "daemon_args": args.daemon_arg, "steps": []}
    try:
        deadline = time.time() + 20
        while time.time() < deadline:
            try:
                if get(url + "/-/ready", timeout=1)[0] == 200:
                    break
            except OSError:
                time.sleep(0.1)
        else:
            raise SystemExit("loadwatch not ready")
        time.sleep(args.settle_seconds)
        get(url + "/metrics")
        baseline = lwtest.rss_kib(proc.pid, "VmRSS")
        results["baseline_kib"] = baseline

        per_step = reset_peak(proc.pid)
        results["per_step_peaks"] = per_step
        overall_peak = 0

        def step(name, run):
            nonlocal overall_peak
            reset_peak(proc.pid)
            t0 = time.time()
            extra = run() or {}
            time.sleep(args.settle_seconds)
            try:
                status, page = get(url + "/metrics", timeout=60)
            except OSError:  # a daemon that cannot serve the page in time (older builds)
                status, page = 0, b""
            row = {"step": name, "seconds": round(time.time() - t0, 1),
                   "peak_kib": lwtest.rss_kib(proc.pid, "VmHWM"), "rss_kib": lwtest.rss_kib(proc.pid, "VmRSS"),
                   "metrics_status": status, "metrics_bytes": len(page)}
            row.update(extra)
            overall_peak = max(overall_peak, row["peak_kib"])
            results["steps"].append(row)
            print("%-13s peak %7.1f MiB  rss %7.1f MiB  /metrics %8d bytes  %s" % (
                name, row["peak_kib"] / 1024, row["rss_kib"] / 1024, len(page),
                " ".join("%s=%s" % kv for kv in extra.items())), flush=True)

        def source_1m():
            bodies.one = b"".join(b'a{i="%d"} 1\n' % i for i in range(1000000))
            time.sleep(3)
            return {"body_bytes": len(bodies.one)}

        def source_15mib():
            bodies.two = b'big{v="' + b"x" * (15 << 20) + b'"} 1\nok 1\n'
            time.sleep(3)
            return {}

        def influx_pct():
            line = b"jmeter,transaction=t,statut=all count=1," + b",".join(
                b"pct%d.%d=1" % (i // 1000, i % 1000) for i in range(128000)) + b"\n"
            ready = []
            stop = threading.Event()

            def poll():
                while not stop.is_set():
                    t = time.time()
                    try:
                        code = get(url + "/-/ready", timeout=30)[0]
                    except OSError:
                        code = 0
                    ready.append((code, time.time() - t))
                    time.sleep(0.05)
            poller = threading.Thread(target=poll)
            poller.start()
            t = time.time()
            status = post(url + "/write?db=pct", line)
            took = time.time() - t
            time.sleep(1)
            stop.set()
            poller.join(60)
            return {"post_status": status, "post_seconds": round(took, 2),
                    "ready_codes": sorted({c for c, _ in ready}),
                    "ready_worst_s": round(max((d for _, d in ready), default=0), 3)}

        def influx_names():
            statuses = []
            for db in range(8):
                body = b"".join(b"jmeter,transaction=%s%d,statut=all count=1,avg=1,pct90.0=1\n"
                                % (b"n" * 65536, t) for t in range(100))
                statuses.append(post(url + "/write?db=big%d" % db, body))
            return {"post_statuses": sorted(set(statuses))}

        def textfile_burst():
            series = 0
            for k in range(4):
                data, n = textfile_body((16 << 20) - 64)  # just under the file cap
                series += n
                tmp = os.path.join(textfiles, ".t%d" % k)
                with open(tmp, "wb") as f:
                    f.write(data)
                os.rename(tmp, os.path.join(textfiles, "t%d.prom" % k))
            time.sleep(3)
            return {"series_written": series}

        def runs_list():
            def reader(i):
                pages, size, worst, token, busy = 0, 0, 0.0, "", 0
                for _ in range(100):  # bounded: 100 runs are 10 pages of 10
                    path = "/api/v1/runs?phases=1" + ("&page_token=" + token if token else "")
                    t = time.time()
                    status, body, b = read(url + path, i)
                    busy += b
                    worst = max(worst, time.time() - t)
                    if status != 200:
                        return (status, pages, size, worst, busy)
                    pages += 1
                    size = max(size, len(body))
                    token = json.loads(body).get("next_page_token", "")
                    if not token:
                        break
                return (200, pages, size, worst, busy)
            got = lwtest.concurrently(40, reader)
            return {"readers": 40, "statuses": sorted({g[0] for g in got}),
                    "pages_each": max(g[1] for g in got),
                    "largest_answer_bytes": max(g[2] for g in got),
                    "slowest_answer_s": round(max(g[3] for g in got), 2),
                    "retried_503": sum(g[4] for g in got)}

        report_run = {}

        def make_report_run():
            # A 1,000-phase run inside the history's window, through the API.
            body = post_json(url + "/api/v1/runs", {"name": "report-bench"})
            report_run["id"] = body["data"]["id"]
            for i in range(1000):
                post_json(url + "/api/v1/runs/%s/phases" % report_run["id"], {"users": i})
            time.sleep(1.5)
            post_json(url + "/api/v1/runs/%s/stop" % report_run["id"], {})

        def report_html():
            make_report_run()
            reset_peak(proc.pid)  # the readers' peak, not the 1,000 phase POSTs'
            path = url + "/api/v1/runs/%s/report.html" % report_run["id"]
            def reader(i):
                t = time.time()
                status, body, busy = read(path, i, timeout=300)
                return (status, len(body), time.time() - t, busy)
            got = lwtest.concurrently(20, reader)
            return {"readers": 20, "statuses": sorted({g[0] for g in got}),
                    "answer_bytes": max(g[1] for g in got),
                    "slowest_answer_s": round(max(g[2] for g in got), 2),
                    "retried_503": sum(g[3] for g in got)}

        def history():
            families = ("loadwatch_process_cpu_seconds_total,loadwatch_process_resident_memory_bytes,"
                        "loadwatch_process_open_fds,loadwatch_process_max_fds,"
                        "loadwatch_process_threads,loadwatch_process_cpu_limit_cores,"
                        "loadwatch_target_processes,loadwatch_procs_running")
            path = url + "/api/v1/history?series=" + families

            def reader(i):
                size, worst, busy, statuses = 0, 0.0, 0, set()
                for _ in range(10):
                    t = time.time()
                    status, body, b = read(path, i)
                    worst = max(worst, time.time() - t)
                    busy += b
                    statuses.add(status)
                    size = max(size, len(body))
                return (statuses, size, worst, busy)
            got = lwtest.concurrently(20, reader)
            return {"readers": 20, "statuses": sorted(set().union(*(g[0] for g in got))),
                    "answer_bytes": max(g[1] for g in got),
                    "slowest_answer_s": round(max(g[2] for g in got), 2),
                    "retried_503": sum(g[3] for g in got)}

        def calm():
            bodies.one = bodies.two = Bodies.small
            for name in os.listdir(textfiles):
                os.remove(os.path.join(textfiles, name))
            time.sleep(3)
            return {}

        def all_at_once():
            # Every input together: the peak is then the baseline plus what is in flight at
            # once (two source bodies, a textfile's text, a push body), each under its cap.
            extra = {}
            threads = [threading.Thread(target=f) for f in (influx_pct, influx_names)]
            extra.update(source_1m())
            source_15mib()
            for t in threads:
                t.start()
            extra.update(textfile_burst())
            for t in threads:
                t.join(300)
            return extra

        def settled():
            """RSS once the input is gone: polled until within the slack, for a bounded time."""
            limit = baseline + args.after_slack_mib * 1024
            deadline = time.time() + 3 * args.settle_seconds
            rss = lwtest.rss_kib(proc.pid, "VmRSS")
            while rss > limit and time.time() < deadline:
                time.sleep(0.2)
                rss = lwtest.rss_kib(proc.pid, "VmRSS")
            print("%-13s after it is gone: rss %7.1f MiB" % ("", rss / 1024), flush=True)
            return rss

        # Each input alone (then taken away), then all together, then calm.
        for name, run in (("source_1m", source_1m), ("source_15mib", source_15mib),
                          ("influx_pct", influx_pct), ("influx_names", influx_names),
                          ("textfiles", textfile_burst), ("runs_list", runs_list),
                          ("report_html", report_html), ("history", history)):
            if args.steps and name not in args.steps.split(","):
                continue
            step(name, run)
            calm()
            results["steps"][-1]["after_kib"] = settled()
            if proc.poll() is not None:
                raise SystemExit("loadwatch exited during %s" % name)
        alone_peak = overall_peak
        if not args.steps:
            step("all_at_once", all_at_once)
        step("after_burst", calm)
        after = lwtest.rss_kib(proc.pid, "VmRSS")
        ceiling = baseline + args.budget_mib * 1024
        slack = args.after_slack_mib * 1024
        held = [r["step"] for r in results["steps"] if r.get("after_kib", 0) > baseline + slack]
        unanswered = [r["step"] for r in results["steps"] if r.get("statuses", [200]) != [200]]
        results.update(alone_peak_kib=alone_peak, all_peak_kib=overall_peak, after_kib=after,
                       ceiling_kib=ceiling, held_after=held, unanswered=unanswered,
                       passed=alone_peak <= ceiling and after <= baseline + slack and not held
                       and not unanswered)
        if unanswered:
            print("readers not answered 200 in: %s" % ", ".join(unanswered))
        if held:
            print("RSS not back within %.0f MiB after: %s" % (args.after_slack_mib,
                                                              ", ".join(held)))
        print("baseline %.1f MiB; peak with one input at a time %.1f MiB (ceiling: baseline + "
              "%.0f = %.1f MiB), with all at once %.1f MiB; after the burst %.1f MiB (at most "
              "baseline + %.0f): %s"
              % (baseline / 1024, alone_peak / 1024, args.budget_mib, ceiling / 1024,
                 overall_peak / 1024, after / 1024, args.after_slack_mib,
                 "PASS" if results["passed"] else "FAIL"))
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        server.shutdown()
        log.close()
        shutil.rmtree(work, ignore_errors=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    sys.exit(0 if results.get("passed") else 1)


if __name__ == "__main__":
    main()
