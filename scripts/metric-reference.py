#!/usr/bin/env python3
"""Writes docs/metrics.md, the metric reference, from what a real loadwatch exports.

Starts the built binary on the host with a target, every push source, a textfile directory and
pull sources served from the committed fixtures (tests/fixtures/sources) by a local HTTP server,
a textfile with a bad label value and a family of its own (so the drop counters appear), a
listener with a full accept queue and one nice-19 busy loop per core (topcpu's family), pushes
one Graphite and one Influx line, starts a run with a phase, then turns HELP/TYPE/labels of
every loadwatch_* family into a Markdown table between the reference markers of
docs/metrics.md. Re-run after adding a metric:
    python3 scripts/metric-reference.py [--build build]
--check compares instead of writing (tests/scripts/test_metric_reference.sh).
"""
import argparse
import difflib
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))
from lwtest import Loadwatch, free_port, serve  # noqa: E402

BEGIN, END = "<!-- metric-reference:begin -->", "<!-- metric-reference:end -->"
FIX = os.path.join(ROOT, "tests", "fixtures", "sources")
ROUTES = {"/stats/requests": "locust_2.12.1_stats_requests_running.json",
          "/distributed/stats/requests": "locust_2.28_stats_requests.json",  # has workers
          "/imposters": "mountebank_2.9.1_imposters.json",
          "/metrics": "mountebank_2.9.1_metrics.txt"}
JMETER = os.path.join(ROOT, "tests", "fixtures", "jmeter")
TEXTFILES = os.path.join(ROOT, "tests", "fixtures", "textfile", "ok")
# JMeter's InfluxDB backend listener: a run start, aggregate and per-transaction points, the
# thread counts, a run end (every family the model derives).
INFLUX_BODY = (
    'events,application=app,title=ApacheJMeter text="Test started" {t0}\n'
    "jmeter,application=app,transaction=all,statut=all count=3,countError=1,hit=3,avg=2.5,"
    "min=1,max=4,pct90.0=4,sb=300,rb=900 {t1}\n"
    "jmeter,application=app,transaction=home,statut=all count=3,avg=2.5,min=1,max=4,"
    "pct90.0=4 {t1}\n"
    "jmeter,application=app,transaction=home,statut=ko count=1 {t1}\n"
    "jmeter,application=app,transaction=internal minAT=1,maxAT=2,meanAT=1.5,startedT=2,"
    "endedT=0 {t1}\n"
    'events,application=app,title=ApacheJMeter text="Test ended" {t2}\n')


def start_capped_sleep():
    """A sleep in a cgroup with a CPU quota, when this machine lets us make one (v2 with the cpu
    controller delegated, or v1): its target shows the cgroup throttling families. Returns
    (process, cgroup dir) or None."""
    v2 = "/sys/fs/cgroup"
    candidates = []
    try:
        with open(os.path.join(v2, "cgroup.subtree_control")) as f:
            if "cpu" in f.read().split():
                candidates.append((v2, "cpu.max", "50000 100000"))
    except OSError:
        pass
    if os.path.exists("/sys/fs/cgroup/cpu/cpu.cfs_quota_us"):
        candidates.append(("/sys/fs/cgroup/cpu", "cpu.cfs_quota_us", "50000"))
    for root, knob, value in candidates:
        d = os.path.join(root, "lw-metric-reference-%d" % os.getpid())
        try:
            os.mkdir(d)
            with open(os.path.join(d, knob), "w") as f:
                f.write(value)
        except OSError:
            continue
        p = subprocess.Popen(["sh", "-c", 'echo $$ > "$0" && exec sleep 60',
                              os.path.join(d, "cgroup.procs")])
        return p, d
    print("no writable cgroup cpu controller: the throttling families are left out",
          file=sys.stderr)
    return None


def start_busy_loops():
    """One busy loop per core at nice 19 (at most 60 s each): topcpu exports its family only
    while the host is at least half busy, so an idle machine would leave it out."""
    loop = "import time\nend = time.time() + 60\nwhile time.time() < end: pass"
    return [subprocess.Popen([sys.executable, "-c", loop], preexec_fn=lambda: os.nice(19))
            for _ in range(os.cpu_count() or 1)]


def remove_cgroup(d):
    for _ in range(50):
        try:
            os.rmdir(d)
            return
        except OSError:
            time.sleep(0.1)


def fixture(path):
    name = ROUTES.get(path.split("?")[0])
    if not name:
        return None
    with open(os.path.join(FIX, name), "rb") as f:
        return f.read()


def families(text):
    fams = {}
    for line in text.splitlines():
        if line.startswith("# HELP "):
            name, _, help_text = line[7:].partition(" ")
            fams.setdefault(name, {"labels": set()})["help"] = help_text
        elif line.startswith("# TYPE "):
            name, _, typ = line[7:].partition(" ")
            fams.setdefault(name, {"labels": set()})["type"] = typ
        elif line and not line.startswith("#"):
            m = re.match(r"([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?", line)
            name = m.group(1)
            for suffix in ("_bucket", "_sum", "_count"):
                if name not in fams and name.endswith(suffix) and name[:-len(suffix)] in fams:
                    name = name[:-len(suffix)]
            labels = re.findall(r'([a-zA-Z_][a-zA-Z0-9_]*)="', m.group(3) or "")
            fams.setdefault(name, {"labels": set()})["labels"].update(labels)
    return fams


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--check", action="store_true",
                    help="compare with docs/metrics.md instead of writing it; exit 1 if it differs")
    a = ap.parse_args()
    os.environ.setdefault("LOADWATCH_BINARY", os.path.join(a.build, "loadwatch"))
    server = serve(fixture)
    base = "http://127.0.0.1:%d" % server.server_address[1]
    textdir = tempfile.mkdtemp()
    for name in os.listdir(TEXTFILES):
        if name.endswith(".prom"):
            shutil.copy(os.path.join(TEXTFILES, name), textdir)
    # A textfile as a careless script writes it: a label value that is not UTF-8 (written as
    # U+FFFD) and a family of loadwatch's own (dropped): the drop counters.
    with open(os.path.join(textdir, "careless.prom"), "wb") as f:
        f.write(b'# TYPE careless_info gauge\ncareless_info{name="caf\xe9"} 1\n'
                b"# TYPE loadwatch_load1 gauge\nloadwatch_load1 0\n")
    gport = free_port()
    capped = start_capped_sleep()
    busy = start_busy_loops()
    args = ["--target=self=comm:loadwatch", "--target=absent=pid:4194303",
            "--source=mb=mountebank," + base, "--source=locust=locust," + base,
            "--source=workers=locust," + base + "/distributed",
            "--source=app=prometheus," + base + "/metrics",
            "--graphite.listen-address=127.0.0.1:%d" % gport,
            "--collector.textfile.directory=" + textdir, "--sample.interval=200ms",
            "--web.enable-run-api", "--collector.locustpush"]
    if capped:
        args.append("--target=capped=pid:%d" % capped[0].pid)
    # A listener that never accepts, with a full accept queue: the host-wide top listeners.
    full = socket.socket()
    full.bind(("127.0.0.1", 0))
    full.listen(1)
    clients = [socket.socket() for _ in range(3)]
    for c in clients:
        c.setblocking(False)
        c.connect_ex(full.getsockname())
    try:
        with Loadwatch(args) as lw:
            now = int(time.time())
            with open(os.path.join(JMETER, "graphite_2.13_capture.txt")) as f:
                capture = "".join("%s %s %d\n" % (*line.split()[:2], now) for line in f
                                  if line.strip())
            with socket.create_connection(("127.0.0.1", gport)) as s:
                s.sendall(capture.encode())
            ns = now * 10**9
            body = INFLUX_BODY.format(t0=ns - 2 * 10**9, t1=ns - 10**9, t2=ns).encode()
            urllib.request.urlopen(urllib.request.Request(
                lw.url + "/write?db=jmx", method="POST", data=body)).read()
            try:  # one line that is not line protocol: counted as rejected
                urllib.request.urlopen(urllib.request.Request(
                    lw.url + "/write?db=jmx", method="POST", data=b"not line protocol\n")).read()
            except urllib.error.HTTPError:
                pass
            # One push of the Locust listener (scripts/locust/loadwatch_listener.py's shape).
            push = {"source": "listener", "time": time.time(), "requests": 3, "failures": 1,
                    "users": 2, "steps": [[time.time() - 1, 2]],
                    "duration": {"counts": [3] + [0] * 255, "sum": 0.0003}}
            urllib.request.urlopen(urllib.request.Request(
                lw.url + "/api/v1/push/locust", method="POST",
                data=json.dumps(push).encode())).read()
            time.sleep(6)  # sources scrape every 5s by default
            # A run with a phase: it also ends the run inferred from the Locust source, so the
            # last finished run's families appear too.
            for path, doc in (("/api/v1/runs", b'{"name":"reference"}'),
                              ("/api/v1/runs/current/phases", b'{"users":10}')):
                urllib.request.urlopen(urllib.request.Request(
                    lw.url + path, method="POST", data=doc)).read()
            time.sleep(0.5)  # the next sample
            text = lw.metrics_text()
    finally:
        for c in clients + [full]:
            c.close()
        for p in busy:
            p.kill()
            p.wait()
        if capped:
            capped[0].kill()
            capped[0].wait()
            remove_cgroup(capped[1])
        server.shutdown()
        shutil.rmtree(textdir)
    fams = {n: f for n, f in families(text).items() if n.startswith("loadwatch_")}
    rows = ["| metric | type | labels | meaning |", "| --- | --- | --- | --- |"]
    for name in sorted(fams):
        f = fams[name]
        labels = ", ".join(sorted(f["labels"] - {"quantile"} | ({"quantile"} if "quantile" in
                                                                  f["labels"] else set())))
        rows.append("| `%s` | %s | %s | %s |" % (name, f.get("type", "untyped"), labels or "",
                                                 f.get("help", "").replace("|", "\\|")))
    table = "\n".join(rows)
    reference = os.path.join(ROOT, "docs", "metrics.md")
    text = ""
    if os.path.exists(reference):
        with open(reference) as fh:
            text = fh.read()
    section = BEGIN + "\n" + table + "\n" + END
    if BEGIN in text:
        text = re.sub(re.escape(BEGIN) + ".*?" + re.escape(END), lambda _: section, text,
                      flags=re.S)
    else:
        text += "# Metric reference\n\nGenerated by `scripts/metric-reference.py` from a " \
                "real run. Target metrics carry `target`, source metrics `source`; counters " \
                "end in `_total`; base units.\n\n" + section + "\n"
    if a.check:
        with open(reference) as fh:
            committed = fh.read()
        if committed != text:
            sys.stdout.writelines(difflib.unified_diff(
                committed.splitlines(True), text.splitlines(True), "docs/metrics.md",
                "what this loadwatch exports"))
            print("FAIL: docs/metrics.md is not what the binary exports: run "
                  "scripts/metric-reference.py")
            return 1
        print("ok: docs/metrics.md lists the %d loadwatch_* families the binary exports"
              % len(fams))
        return 0
    with open(reference, "w") as fh:
        fh.write(text)
    print("%d loadwatch_* families written to docs/metrics.md" % len(fams))
    return 0


if __name__ == "__main__":
    sys.exit(main())
