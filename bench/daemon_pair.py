#!/usr/bin/env python3
"""Two loadwatch builds side by side on one fixture: CPU a second and fds held, A/B, alternated.

Starts --procs sleeping children (comm "benchsleep", a target of both daemons), optionally
--burners CPU loops at nice 10 (the host busy, so that topcpu scans; with --burn-cycle ON,OFF
they are stopped for OFF s after each ON s, so that the host flips between busy and idle),
then for each of --pairs pairs starts both daemons (the first one started alternates),
waits --warmup s and measures each daemon's CPU over the same --seconds from its threads'
/proc/PID/task/TID/schedstat (ns on a CPU), and its open fds (ls /proc/PID/fd) once a
second. Prints one row a pair, with the load average and the ratio B / A.

    python3 bench/daemon_pair.py --a /work/main/build/loadwatch --b build/loadwatch --burners 2

With --flip ON,OFF both daemons read a scratch procfs root instead (every /proc entry linked,
the PIDs' links refreshed once a second) whose `stat` is /proc/stat with OFF s of idle ticks
added after each ON s: the host seems to flip between busy and idle whatever else runs on it.

Every process it starts exits by itself after its time bound and is ended by PID at the end.
Loopback only.
"""
import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request


def cpu_ns(pid):
    total = 0
    for tid in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/schedstat" % (pid, tid)) as f:
                total += int(f.read().split()[0])
        except (FileNotFoundError, ProcessLookupError):
            pass
    return total


def fds(pid):
    return len(os.listdir("/proc/%d/fd" % pid))


def processes():
    return sum(1 for name in os.listdir("/proc") if name.isdigit())


class FlipRoot:
    """A procfs root of links to /proc whose `stat` shows the host idle in OFF periods."""

    def __init__(self, path, on, off):
        self.path, self.on, self.off = path, on, off
        self.extra = 0  # idle ticks added per CPU so far
        self.last = time.monotonic()
        self.t0 = self.last
        os.mkdir(path)
        for name in os.listdir("/proc"):
            if name != "stat":
                os.symlink("/proc/" + name, os.path.join(path, name))
        self.update()

    def update(self):
        now = time.monotonic()
        idle = (now - self.t0) % (self.on + self.off) >= self.on
        if idle:  # 100 ticks a second of each CPU, all of them idle
            self.extra += int((now - self.last) * 100 * 20)
        self.last = now
        out = []
        with open("/proc/stat") as f:
            for line in f:
                if line.startswith("cpu"):
                    v = line.split()
                    v[4] = str(int(v[4]) + self.extra)
                    line = " ".join(v) + "\n"
                out.append(line)
        tmp = os.path.join(self.path, ".stat.tmp")
        with open(tmp, "w") as f:
            f.write("".join(out))
        os.rename(tmp, os.path.join(self.path, "stat"))
        listed = set(n for n in os.listdir(self.path) if n.isdigit())
        live = set(n for n in os.listdir("/proc") if n.isdigit())
        for n in listed - live:
            os.unlink(os.path.join(self.path, n))
        for n in live - listed:
            os.symlink("/proc/" + n, os.path.join(self.path, n))
        return idle


def wait_ready(url, proc, timeout=30):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            sys.exit("daemon exited: %s" % proc.args)
        try:
            urllib.request.urlopen(url, timeout=2).read()
            return
        except OSError:
            time.sleep(0.2)
    sys.exit("daemon not ready: %s" % url)


def start_burner(seconds):
    code = "import time\nend = time.time() + %d\nwhile time.time() < end: pass\n" % seconds
    return subprocess.Popen(["nice", "-n", "10", sys.executable, "-c", code])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--a", required=True, help="build A's binary")
    ap.add_argument("--b", required=True, help="build B's binary")
    ap.add_argument("--procs", type=int, default=500)
    ap.add_argument("--burners", type=int, default=0)
    ap.add_argument("--burn-cycle", default="", help="ON,OFF seconds: burners stopped for OFF")
    ap.add_argument("--flip", default="", help="ON,OFF seconds: a procfs root idle for OFF")
    ap.add_argument("--daemon-args", default="", help="more arguments for both daemons")
    ap.add_argument("--pairs", type=int, default=4)
    ap.add_argument("--warmup", type=float, default=15)
    ap.add_argument("--seconds", type=float, default=40)
    ap.add_argument("--port", type=int, default=19470)
    args = ap.parse_args()
    per_pair = args.warmup + args.seconds + 10
    life = int(args.pairs * per_pair + 120)
    work = tempfile.mkdtemp(prefix="lw-pair-")
    sleeper = os.path.join(work, "benchsleep")
    os.symlink(shutil.which("sleep"), sleeper)
    children = []
    burners = []
    daemons = []
    cycle = [float(x) for x in args.burn_cycle.split(",")] if args.burn_cycle else None
    flip = None
    if args.flip:
        on, off = (float(x) for x in args.flip.split(","))
        flip = FlipRoot(os.path.join(work, "proc"), on, off)
    extra = (["--path.procfs=" + flip.path] if flip else []) + args.daemon_args.split()
    try:
        children = [subprocess.Popen([sleeper, str(life)]) for _ in range(args.procs)]
        burners = [start_burner(life) for _ in range(args.burners)]
        print("pair first  load       procs     A ms/s   B ms/s  B/A    fds A (min-max)  "
              "fds B (min-max)")
        ratios = []
        for pair in range(args.pairs):
            order = [("A", args.a), ("B", args.b)]
            if pair % 2:
                order.reverse()
            daemons = []
            for i, (name, binary) in enumerate(order):
                port = args.port + i
                p = subprocess.Popen([binary, "--web.listen-address=127.0.0.1:%d" % port,
                                      "--target=sleepers=comm:benchsleep"] + extra,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                daemons.append((name, p, port))
            for _, p, port in daemons:
                wait_ready("http://127.0.0.1:%d/metrics" % port, p)
            warm_end = time.monotonic() + args.warmup
            while time.monotonic() < warm_end:
                if flip:
                    flip.update()
                time.sleep(min(1.0, max(0.0, warm_end - time.monotonic())))
            start = {name: cpu_ns(p.pid) for name, p, _ in daemons}
            t0 = time.monotonic()
            load0 = os.getloadavg()[0]
            held = {name: [] for name, _, _ in daemons}
            listed = []
            stopped = False
            while time.monotonic() - t0 < args.seconds:
                if cycle:
                    phase = (time.monotonic() - t0) % (cycle[0] + cycle[1])
                    stop = phase >= cycle[0]
                    if stop != stopped:
                        for b in burners:
                            os.kill(b.pid, signal.SIGSTOP if stop else signal.SIGCONT)
                        stopped = stop
                if flip:
                    flip.update()
                for name, p, _ in daemons:
                    held[name].append(fds(p.pid))
                listed.append(processes())
                time.sleep(1)
            if stopped:
                for b in burners:
                    os.kill(b.pid, signal.SIGCONT)
            dt = time.monotonic() - t0
            ms = {name: (cpu_ns(p.pid) - start[name]) / 1e6 / dt for name, p, _ in daemons}
            load1 = os.getloadavg()[0]
            for _, p, _ in daemons:
                p.terminate()
                p.wait(timeout=10)
            daemons = []
            ratios.append(ms["B"] / ms["A"])
            print("%4d %5s  %4.1f-%4.1f  %4d-%4d  %7.2f  %7.2f  %.3f  %5d (%d-%d)  %5d (%d-%d)" % (
                pair + 1, order[0][0], min(load0, load1), max(load0, load1), min(listed),
                max(listed), ms["A"], ms["B"],
                ratios[-1], held["A"][-1], min(held["A"]), max(held["A"]), held["B"][-1],
                min(held["B"]), max(held["B"])), flush=True)
        ratios.sort()
        print("B/A median %.3f, range %.3f-%.3f over %d pairs" % (
            ratios[len(ratios) // 2] if len(ratios) % 2 else
            (ratios[len(ratios) // 2 - 1] + ratios[len(ratios) // 2]) / 2,
            ratios[0], ratios[-1], len(ratios)))
    finally:
        for _, p, _ in daemons:
            p.terminate()
        for b in burners:
            try:
                os.kill(b.pid, signal.SIGCONT)
            except ProcessLookupError:
                pass
        for p in [p for _, p, _ in daemons] + burners + children:
            try:
                p.kill()
            except ProcessLookupError:
                pass
            p.wait()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
