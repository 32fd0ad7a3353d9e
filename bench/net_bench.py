#!/usr/bin/env python3
"""net_bench.py - CPU per sample of loadwatch's tcp collector at 60,000 TIME_WAIT sockets,
against the kernel floor and node_exporter 1.5, in one bounded run.

Usage (root, loopback only):
  bench/net_bench.py --build BUILD_DIR [--timewait 60000] [--samples 45] [--procs 2000]
                     [--target-fds 1000] [--scrapes 10] [--out results.json] [--no-build]
  It first configures BUILD_DIR with -DLOADWATCH_BENCH=ON and builds net_bench
  (bench/bench_build.py), unless --no-build (e.g. when running as root on a user's build dir).

What one run does
  1. Fixture: `--procs` sleeping processes (they exit by themselves), a target process
     holding `--target-fds` fds (loopback connections with both ends in it), and
     `--timewait` client-side TIME_WAIT sockets: a bounded connect/close loop, client closing
     first, from 127.0.B.1-4 (IP_BIND_ADDRESS_NO_PORT) to 4 listeners 127.0.0.2-5 on 4 ports
     below the ephemeral range, so more than the ~28k ephemeral ports can be used. Counted
     with /proc/net/sockstat (tw). TIME_WAIT lasts 60 s, so every figure below is taken
     within the set's lifetime (checked; the run is marked partial otherwise).
  2. Floor: system CPU of `ss -Htan state time-wait '( sport = :P1 or dport = :P1 or
     sport = :P2 or dport = :P2 )'` (median of 10 runs; its user time, spent printing, is not
     part of the floor). Two port pairs: "quiet" ports with no TIME_WAIT sockets (the kernel
     walks all 60,000 and copies none) and "busy" (one of the fixture's listener ports: a
     quarter of the set is copied).
  3. loadwatch: `net_bench sample` (the tcp collector as the daemon builds it, thread CPU
     time user+system per sample, `--samples` timed samples after a warm-up) with no ports,
     with each port pair, with the /proc fallback, with the target.
  4. node_exporter 1.5 (Debian prometheus-node-exporter) with only --collector.tcpstat on
     127.0.0.1:19131: CPU (utime+stime of its PID) per scrape over `--scrapes` scrapes.
  5. Exactness: the collector's time_wait against sockstat and `ss state time-wait | wc -l`
     in the same moment, and its ephemeral usage (max per destination, TIME_WAIT included)
     against ss's.
  6. The two deferrable dumps alone (`net_bench dump`): the walk (every state but
     TIME_WAIT) and the ephemeral TIME_WAIT dump (source port range bytecode).
Prints a table with the ratios, writes JSON with --out. Bounded: --max-seconds (300).
"""
import argparse
import json
import os
import resource
import signal
import socket
import subprocess
import sys
import time
import urllib.request

from bench_build import build_targets

TW_LIFETIME = 60.0
LISTEN_PORTS = [20200, 20201, 20202, 20203]
QUIET_PORTS = [20298, 20299]
CLK_TCK = os.sysconf("SC_CLK_TCK")


def sockstat_tw():
    with open("/proc/net/sockstat") as f:
        for line in f:
            if line.startswith("TCP:"):
                parts = line.split()
                return int(parts[parts.index("tw") + 1])
    return -1


def ss_timewait():
    out = subprocess.run(["ss", "-Htan", "state", "time-wait"], stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, timeout=60).stdout
    return out.count(b"\n")


def ss_ephemeral_max(lo, hi):
    """Max over peer ip:port of sockets (TIME_WAIT included) on an ephemeral local port."""
    out = subprocess.run(["ss", "-Htan", "exclude", "listening"], stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, timeout=60).stdout.decode()
    per_peer = {}
    for line in out.splitlines():
        f = line.split()
        if len(f) < 5:
            continue
        local, peer = f[3], f[4]
        if lo <= int(local.rsplit(":", 1)[1]) <= hi:
            per_peer[peer] = per_peer.get(peer, 0) + 1
    return max(per_peer.values(), default=0)


def pdeathsig():
    import ctypes
    libc = ctypes.CDLL(None)
    libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def run_sys_ms(cmd):
    """Runs cmd; returns (system ms, user ms) of the child from wait4's rusage."""
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, _, ru = os.wait4(p.pid, 0)
    return ru.ru_stime * 1e3, ru.ru_utime * 1e3


def median(v):
    v = sorted(v)
    return v[len(v) // 2] if v else float("nan")


class Bench:
    def __init__(self, a):
        self.a = a
        self.deadline = time.monotonic() + a.max_seconds
        self.children = []
        self.keep = []
        self.notes = []
        self.tw_start = None
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            self.eph_lo, self.eph_hi = map(int, f.read().split()[:2])
        assert max(LISTEN_PORTS + QUIET_PORTS) < self.eph_lo

    def left(self):
        return self.deadline - time.monotonic()

    def start_sleepers(self):
        for _ in range(self.a.procs):
            if self.left() < 30:
                break
            self.children.append(subprocess.Popen(["sleep", str(int(self.a.max_seconds))],
                                                  preexec_fn=pdeathsig))

    def start_target(self):
        """A child holding target_fds fds: a listener and loopback connections, both ends."""
        n = max(1, self.a.target_fds // 2)
        code = (
            "import socket,sys,time,resource\n"
            "h=resource.getrlimit(resource.RLIMIT_NOFILE)[1];resource.setrlimit(resource.RLIMIT_NOFILE,(h,h))\n"
            "l=socket.socket();l.bind(('127.0.0.1',0));l.listen(4096)\n"
            "keep=[]\n"
            "for i in range(%d):\n"
            "  c=socket.create_connection(l.getsockname());a,_=l.accept();keep+=[c,a]\n"
            "print(l.getsockname()[1],flush=True)\n"
            "time.sleep(%d)\n" % (n, int(self.a.max_seconds)))
        p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                             preexec_fn=pdeathsig)
        self.children.append(p)
        self.target_port = int(p.stdout.readline())
        self.target_pid = p.pid
        self.target_conns = n

    def build_timewait(self):
        target = self.a.timewait
        listeners, dsts = [], []
        for i in range(4):
            for port in LISTEN_PORTS:
                s = socket.socket()
                s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                s.bind(("127.0.0.%d" % (2 + i), port))
                s.listen(4096)
                s.setblocking(False)
                listeners.append(s)
                dsts.append(("127.0.0.%d" % (2 + i), port))
        block = 1 + os.getpid() % 250
        srcs = ["127.0.%d.%d" % (block, 1 + i) for i in range(4)]
        before = sockstat_tw()
        t0 = time.monotonic()
        stop = t0 + 40
        made = errors = 0

        def drain():
            for ls in listeners:
                for _ in range(8192):
                    try:
                        s, _ = ls.accept()
                    except (BlockingIOError, InterruptedError):
                        break
                    s.close()

        while made < target and time.monotonic() < stop and errors <= 100:
            for _ in range(min(1024, target - made)):
                k = made
                c = socket.socket()
                try:
                    c.setsockopt(socket.IPPROTO_IP, 24, 1)  # IP_BIND_ADDRESS_NO_PORT
                    c.bind((srcs[k % 4], 0))
                    c.connect(dsts[(k // 4) % len(dsts)])
                except OSError:
                    errors += 1
                finally:
                    c.close()  # client first: this end goes to TIME_WAIT
                made += 1
            drain()
        drain()
        for s in listeners:
            s.close()
        time.sleep(0.3)
        self.tw_start = t0
        self.tw_built = sockstat_tw() - before
        self.tw_build_s = time.monotonic() - t0
        print("TIME_WAIT fixture: %d new (sockstat), %d connect errors, %.1fs"
              % (self.tw_built, errors, self.tw_build_s), flush=True)
        if self.tw_built < 0.99 * target:
            self.notes.append("fixture reached %d of %d TIME_WAIT" % (self.tw_built, target))

    def in_window(self, what):
        ok = time.monotonic() < self.tw_start + TW_LIFETIME - 2
        if not ok:
            self.notes.append("%s ran past the TIME_WAIT lifetime" % what)
        return ok

    def quiet_listeners(self):
        for port in QUIET_PORTS:
            s = socket.socket()
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind(("127.0.0.1", port))
            s.listen(128)
            c = socket.create_connection(("127.0.0.1", port))
            a, _ = s.accept()
            self.keep += [s, c, a]

    def floor(self, ports):
        f = " or ".join("sport = :%d or dport = :%d" % (p, p) for p in ports)
        runs = [run_sys_ms(["ss", "-Htan", "state", "time-wait", "( %s )" % f])
                for _ in range(10)]
        return {"sys_ms": median([r[0] for r in runs]), "user_ms": median([r[1] for r in runs])}

    def floor_base(self):
        """ss's own start-up system time: a LISTEN-only query walks no established hash."""
        runs = [run_sys_ms(["ss", "-Htan", "state", "listening"]) for _ in range(10)]
        return {"sys_ms": median([r[0] for r in runs]), "user_ms": median([r[1] for r in runs])}

    def ours(self, *args):
        cmd = [os.path.join(self.a.build, "bench", "net_bench"), "sample", "--samples",
               str(self.a.samples)] + list(args)
        out = subprocess.run(cmd, stdout=subprocess.PIPE, timeout=120, check=True).stdout
        return json.loads(out)

    def dump(self, *args):
        """Kernel + parse cost of one sock_diag dump (two families in one walk), median of 10."""
        cmd = [os.path.join(self.a.build, "bench", "net_bench"), "dump", args[0], "0", "10"]
        out = subprocess.run(cmd + list(args[1:]), stdout=subprocess.PIPE, timeout=120,
                             check=True).stdout
        return json.loads(out)

    def node_exporter(self):
        url = "http://127.0.0.1:19131/metrics"
        p = subprocess.Popen(["prometheus-node-exporter", "--web.listen-address=127.0.0.1:19131",
                              "--collector.disable-defaults", "--collector.tcpstat"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             preexec_fn=pdeathsig)
        try:
            for _ in range(100):
                try:
                    urllib.request.urlopen(url, timeout=5).read()
                    break
                except OSError:
                    time.sleep(0.1)
            urllib.request.urlopen(url, timeout=10).read()  # warm-up

            def ticks():
                with open("/proc/%d/stat" % p.pid) as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                return int(fields[11]) + int(fields[12])

            t0 = ticks()
            body = b""
            for _ in range(self.a.scrapes):
                body = urllib.request.urlopen(url, timeout=10).read()
            t1 = ticks()
            tw = None
            for line in body.decode().splitlines():
                if line.startswith('node_tcp_connection_states{state="time_wait"}'):
                    tw = float(line.split()[-1])
            return {"cpu_ms_per_scrape": (t1 - t0) * 1000.0 / CLK_TCK / self.a.scrapes,
                    "time_wait": tw}
        finally:
            p.terminate()
            p.wait(timeout=10)

    def run(self):
        r = {"timewait_target": self.a.timewait, "samples": self.a.samples}
        self.start_sleepers()
        self.start_target()
        self.quiet_listeners()
        r["procs"] = len(self.children)
        # Leftover TIME_WAIT from earlier runs would make the set larger than asked.
        r["tw_before"] = sockstat_tw()
        self.build_timewait()
        r["tw_built"] = self.tw_built
        busy = [LISTEN_PORTS[0], QUIET_PORTS[0]]
        r["floor_base"] = self.floor_base()
        r["floor_quiet"] = self.floor(QUIET_PORTS)
        r["floor_busy"] = self.floor(busy)
        q = ",".join(map(str, QUIET_PORTS))
        b = ",".join(map(str, busy))
        r["ours_no_ports"] = self.ours()
        r["ours_no_ports_every_sample"] = self.ours("--walk-budget", "0")
        r["ours_all_network"] = {n: self.ours("--collector", n)["cpu_ms_mean"]
                                 for n in ("netstat", "sockstat", "sysctl", "netdev", "conntrack")}
        r["ours_quiet_ports"] = self.ours("--ports", q)
        r["ours_busy_ports"] = self.ours("--ports", b)
        r["ours_target"] = self.ours("--target", "app=%d" % self.target_pid)
        r["ours_procfs"] = self.ours("--force-procfs", "--ports", q)
        # The two deferrable dumps alone: the walk (every state but TIME_WAIT) and the
        # ephemeral TIME_WAIT dump (source range bytecode).
        r["dump_walk"] = self.dump("fbe")
        r["dump_ephemeral_tw"] = self.dump("40", "--sport", "%d-%d" % (self.eph_lo, self.eph_hi))
        # Exactness in one moment: sockstat, the collector, ss.
        one = self.ours("--samples", "1", "--walk-budget", "0")
        r["exact"] = {"sockstat_before": sockstat_tw(), "collector": one["time_wait"],
                      "ss": ss_timewait(), "sockstat_after": sockstat_tw(),
                      "ephemeral_collector": one["ephemeral_max"],
                      "ephemeral_ss": ss_ephemeral_max(self.eph_lo, self.eph_hi)}
        r["node_exporter"] = self.node_exporter()
        r["in_window"] = self.in_window("the measurements")
        r["notes"] = self.notes
        r["target_fds"] = 2 * self.target_conns + 1
        with open("/proc/loadavg") as f:
            r["loadavg"] = f.read().split()[0]
        return r

    def cleanup(self):
        for s in self.keep:
            s.close()
        for p in self.children:
            try:
                p.kill()  # by PID: only processes this run started
                p.wait(timeout=5)
            except Exception:
                pass


def report(r):
    fq, fb = r["floor_quiet"]["sys_ms"], r["floor_busy"]["sys_ms"]
    base = r["floor_base"]["sys_ms"]
    m = lambda k: r[k]["cpu_ms_mean"]
    rows = [
        ("tcp, no ports (deferred walks)", m("ours_no_ports"),
         "max %.1f; budget 2 ms" % r["ours_no_ports"]["cpu_ms_max"]),
        ("tcp, no ports, walk every sample", m("ours_no_ports_every_sample"), ""),
        ("tcp, 2 quiet ports", m("ours_quiet_ports"),
         "%.2f x floor (%.2f x startup-corrected)" % (m("ours_quiet_ports") / fq,
                                                     m("ours_quiet_ports") / max(fq - base, 1e-6))),
        ("tcp, 2 ports, 1 busy", m("ours_busy_ports"),
         "%.2f x floor (%.2f x startup-corrected)" % (m("ours_busy_ports") / fb,
                                                     m("ours_busy_ports") / max(fb - base, 1e-6))),
        ("tcp, a target with %d fds, no ports" % r["target_fds"], m("ours_target"), ""),
        ("tcp, /proc fallback, 2 quiet ports", m("ours_procfs"), ""),
        ("netstat+sockstat+sysctl+netdev+conntrack", sum(r["ours_all_network"].values()), ""),
        ("dump alone: walk (all but TIME_WAIT)", r["dump_walk"]["cpu_ms_median"],
         "%d sockets" % r["dump_walk"]["sockets"]),
        ("dump alone: ephemeral TIME_WAIT", r["dump_ephemeral_tw"]["cpu_ms_median"],
         "%d sockets" % r["dump_ephemeral_tw"]["sockets"]),
        ("node_exporter 1.5 tcpstat, per scrape", r["node_exporter"]["cpu_ms_per_scrape"],
         "%.0f x tcp no ports, %.1f x tcp 2 ports" % (
             r["node_exporter"]["cpu_ms_per_scrape"] / max(m("ours_no_ports"), 1e-6),
             r["node_exporter"]["cpu_ms_per_scrape"] / max(m("ours_quiet_ports"), 1e-6))),
        ("floor: ss sys, 2 quiet ports", fq, ""),
        ("floor: ss sys, 2 ports, 1 busy", fb, ""),
        ("ss sys startup (state listening, no walk)", base, ""),
    ]
    print("\n%d TIME_WAIT sockets (sockstat), %d processes started, loadavg %s"
          % (r["tw_built"], r["procs"], r["loadavg"]))
    print("%-46s %10s  %s" % ("CPU per sample (mean)", "ms", "note"))
    for name, v, note in rows:
        print("%-46s %10.2f  %s" % (name, v, note))
    e = r["exact"]
    print("exactness: sockstat %d / collector %d / ss %d / sockstat %d"
          % (e["sockstat_before"], e["collector"], e["ss"], e["sockstat_after"]))
    print("ephemeral max per destination: collector %d / ss %d"
          % (e["ephemeral_collector"], e["ephemeral_ss"]))
    print("node_exporter time_wait: %s" % r["node_exporter"]["time_wait"])
    for n in r["notes"]:
        print("NOTE: " + n)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", required=True)
    ap.add_argument("--timewait", type=int, default=60000)
    ap.add_argument("--samples", type=int, default=45)
    ap.add_argument("--procs", type=int, default=2000)
    ap.add_argument("--target-fds", type=int, default=1000)
    ap.add_argument("--scrapes", type=int, default=10)
    ap.add_argument("--max-seconds", type=float, default=300)
    ap.add_argument("--out")
    ap.add_argument("--no-build", action="store_true", help="use BUILD_DIR as it is")
    a = ap.parse_args()
    if not a.no_build:
        build_targets(a.build, ["net_bench"])
    if not (0 < a.timewait <= 200000 and 0 < a.samples <= 1000 and 0 <= a.procs <= 5000
            and 0 < a.target_fds <= 50000 and 0 < a.scrapes <= 100):
        ap.error("argument out of range")
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    b = Bench(a)
    try:
        r = b.run()
    finally:
        b.cleanup()
    report(r)
    if a.out:
        with open(a.out, "w") as f:
            json.dump(r, f, indent=1)
    sys.exit(0 if r["in_window"] and not r["notes"] else 2)


if __name__ == "__main__":
    main()
