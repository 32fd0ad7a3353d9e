#!/usr/bin/env python3
"""Where one sample's CPU goes: processes, TCP and the rest, on a fixture of the side-by-side
benchmark's sizes (sleeping processes, TIME_WAIT sockets, an fd holder).

Starts the fixture and loadwatch (targets comm:benchsleep and comm:benchfdhold), lets it sample,
then records `perf record -g` on loadwatch for --seconds and sorts each CPU sample by the kernel
file handler on its stack (/proc/PID/stat, status, io, limits, the /proc listing, sock_diag...),
and prints the median wall time of each collector from loadwatch_collector_duration_seconds.
Needs root (perf, many processes) and linux-perf. Every process it starts exits by itself after
--life seconds and is ended by PID at the end.

    python3 bench/sample_profile.py --binary build/loadwatch --size medium
"""
import argparse
import collections
import os
import re
import resource
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

SIZES = {"medium": (500, 20000, 10000), "large": (2000, 60000, 20000)}
# The first marker found on a sample's stack names what the sample was spent on.
MARKERS = [
    ("processes: /proc/PID/stat", "do_task_stat"),
    ("processes: /proc/PID/status", "proc_pid_status"),
    ("processes: /proc/PID/io", "do_io_accounting"),
    ("processes: /proc/PID/limits", "proc_pid_limits"),
    ("processes: fd directories", "proc_readfd"),
    ("processes: /proc listing", "proc_pid_readdir"),
    ("tcp: sock_diag", "inet_diag"),
    ("tcp: sock_diag", "tcp_diag"),
    ("open", "do_sys_openat2"),
    ("close", "__x64_sys_close"),
    ("other reads", "vfs_read"),
]


def fixture(procs, timewait, fds, life, workdir):
    """Starts the fixture; returns the PIDs it started."""
    sleeper = os.path.join(workdir, "benchsleep")
    os.symlink(shutil.which("sleep"), sleeper)
    pids = [subprocess.Popen([sleeper, str(life)]).pid for _ in range(procs)]
    holder = subprocess.Popen([sys.executable, "-c", (
        "import ctypes, os, resource, time\n"
        "soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)\n"
        "resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, %d), hard))\n"
        "ctypes.CDLL(None).prctl(15, b'benchfdhold', 0, 0, 0)\n"
        "fds = [os.open('/dev/null', os.O_RDONLY) for _ in range(%d)]\n"
        "time.sleep(%d)\n") % (fds + 100, fds, life)])
    pids.append(holder.pid)
    # TIME_WAIT on loopback: the client closes first, spread over 4 listener addresses.
    listeners = []
    for i in range(4):
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.%d" % (i + 2), 23456))
        s.listen(4096)
        listeners.append(s)
    deadline = time.time() + 120
    for n in range(timewait):
        if time.time() > deadline:
            print("fixture: %d of %d TIME_WAIT sockets in 120 s" % (n, timewait))
            break
        s = listeners[n % 4]
        c = socket.create_connection(s.getsockname())
        a, _ = s.accept()
        c.close()
        a.close()
    for s in listeners:
        s.close()
    return pids


def collector_durations(url, seconds):
    out = collections.defaultdict(list)
    for _ in range(int(seconds)):
        text = urllib.request.urlopen(url, timeout=5).read().decode()
        for m in re.finditer(r'^loadwatch_collector_duration_seconds\{collector="(\w+)"\} (\S+)$',
                             text, re.M):
            out[m.group(1)].append(float(m.group(2)) * 1000)
        time.sleep(1)
    return out


def classify(perf_data):
    script = subprocess.run(["perf", "script", "-i", perf_data], capture_output=True,
                            text=True).stdout
    counts = collections.Counter()
    for sample in script.split("\n\n"):
        if not sample.strip():
            continue
        for name, marker in MARKERS:
            if marker in sample:
                counts[name] += 1
                break
        else:
            counts["the rest (user space, scheduling, HTTP)"] += 1
    return counts


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--binary", default="build/loadwatch")
    ap.add_argument("--size", choices=sorted(SIZES), default="medium")
    ap.add_argument("--seconds", type=float, default=30)
    ap.add_argument("--port", type=int, default=19300)
    args = ap.parse_args()
    procs, timewait, fds = SIZES[args.size]
    life = int(args.seconds) + 240
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    work = tempfile.mkdtemp(prefix="lw-profile-")
    pids = []
    lw = None
    try:
        pids = fixture(procs, timewait, fds, life, work)
        lw = subprocess.Popen([args.binary, "--web.listen-address=127.0.0.1:%d" % args.port,
                               "--target=sleepers=comm:benchsleep",
                               "--target=fds=comm:benchfdhold"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        url = "http://127.0.0.1:%d/metrics" % args.port
        time.sleep(5)
        perf_data = os.path.join(work, "perf.data")
        perf = subprocess.Popen(["perf", "record", "-q", "-g", "-p", str(lw.pid), "-o", perf_data,
                                 "--", "sleep", str(args.seconds)])
        durations = collector_durations(url, args.seconds)
        perf.wait()
        counts = classify(perf_data)
        total = sum(counts.values())
        print("CPU samples of loadwatch over %g s (%s fixture): %d" % (args.seconds, args.size,
                                                                       total))
        for name, n in counts.most_common():
            print("  %-42s %5.1f %%" % (name, 100.0 * n / total))
        print("Collector wall time per sample, median (p90), ms:")
        for name, v in sorted(durations.items(), key=lambda kv: -statistics.median(kv[1])):
            if statistics.median(v) >= 0.01:
                print("  %-10s %8.3f (%.3f)" % (name, statistics.median(v),
                                                sorted(v)[int(len(v) * 0.9)]))
    finally:
        for pid in ([lw.pid] if lw else []) + pids:
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        if lw:
            lw.wait()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
