"""What saturated first, with real peers: a CPU-bound target, a CPU-starved generator, a host
CPU taken by other processes, and a server behind K slots with idle CPU.

Each process that must saturate runs in a cgroup with a small CPU quota (cgroup v2 cpu.max,
or v1 cpu.cfs_quota_us), so it saturates by construction on a busy host: a process needing a
twentieth of a core gets it on a loaded 2-core machine, a whole core may not (a tenth once got
only 82 % of its quota beside the other tests of the suite). loadwatch
reads the quota (loadwatch_process_cpu_limit_cores) and judges the process against it.
Everything listens on 127.0.0.1; every run and loop is bounded; the cgroups are removed.

The host-CPU and queueing cases take their ground truth from /proc, sampled by the test itself
(CpuMeter): the busy loops' own CPU time and the host's busy time over the assessed phase.
"""
import os
import re
import subprocess
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lwtest import Loadwatch, free_port, http_get  # noqa: E402
import lwtest  # noqa: E402
from test_capacity_run import CapacityRunHelpers  # noqa: E402

STEP = 10            # seconds per step: 5 s stable window after the warm-up rule's half
USERS = [1, 2, 4, 8]
GENERATOR_USERS = [4, 16, 32, 64]
HOG_USERS = [1, 2, 4]
QUEUE_K, QUEUE_SERVICE_MS = 8, 40   # at most 200 req/s, whatever the CPU
QUEUE_USERS = [1, 4, 16, 32]
CLK_TCK = os.sysconf("SC_CLK_TCK")
PERIOD_US = 100000
V2 = "/sys/fs/cgroup"
V1 = "/sys/fs/cgroup/cpu"


class CpuCgroup:
    """A child cgroup with a CPU quota; v2 when the cpu controller is delegated, else v1."""

    def __init__(self, name):
        self.dir = None
        if os.path.exists(os.path.join(V2, "cgroup.controllers")):
            try:
                with open(os.path.join(V2, "cgroup.subtree_control")) as f:
                    v2_cpu = "cpu" in f.read().split()
            except OSError:
                v2_cpu = False
            if v2_cpu:
                self.v2, self.dir = True, os.path.join(V2, name)
        elif os.path.exists(os.path.join(V1, "cpu.cfs_quota_us")):
            self.v2, self.dir = False, os.path.join(V1, name)
        if self.dir:
            try:
                os.mkdir(self.dir)
            except OSError:
                self.dir = None

    def quota(self, cores):
        """Caps the cgroup at `cores` (None: no cap)."""
        if self.v2:
            value = "max %d" % PERIOD_US if cores is None else "%d %d" % (cores * PERIOD_US,
                                                                          PERIOD_US)
            with open(os.path.join(self.dir, "cpu.max"), "w") as f:
                f.write(value)
        else:
            with open(os.path.join(self.dir, "cpu.cfs_period_us"), "w") as f:
                f.write(str(PERIOD_US))
            with open(os.path.join(self.dir, "cpu.cfs_quota_us"), "w") as f:
                f.write("-1" if cores is None else str(int(cores * PERIOD_US)))

    def prefix(self):
        """A command prefix that starts the command inside the cgroup (same PID: exec)."""
        return ["sh", "-c", 'echo $$ > "$0" && exec "$@"', os.path.join(self.dir, "cgroup.procs")]

    def remove(self):
        # The tasks were killed and reaped; the kernel lets go of the cgroup shortly after.
        for _ in range(50):
            try:
                os.rmdir(self.dir)
                return
            except FileNotFoundError:
                return
            except OSError:
                time.sleep(0.1)
        raise AssertionError("cgroup %s not removed" % self.dir)


def host_cpu_seconds():
    """CPU seconds the host spent running something (all modes but idle, iowait, steal), and
    the part of it spent on niced processes (the nice mode)."""
    with open("/proc/stat") as f:
        ticks = [int(x) for x in f.readline().split()[1:9]]
    user, nice, system, idle, iowait, irq, softirq, steal = ticks
    return (user + nice + system + irq + softirq) / CLK_TCK, nice / CLK_TCK


def process_cpu_seconds(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / CLK_TCK  # utime, stime


def process_nice(pid):
    """The nice value of process `pid` (/proc/PID/stat field 19)."""
    with open("/proc/%d/stat" % pid) as f:
        return int(f.read().rsplit(")", 1)[1].split()[16])


class CpuMeter:
    """Samples the host's busy CPU and some processes' CPU every 0.25 s, from /proc, until
    stopped (bounded by `limit` seconds): the ground truth the verdict is checked against."""

    def __init__(self, pids=(), limit=180):
        self.pids = list(pids)
        self.points = []  # (time, host busy seconds, {pid: cpu seconds}, host nice seconds)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, args=(limit,), daemon=True)
        self.thread.start()

    def _run(self, limit):
        end = time.time() + limit
        while not self.stop.is_set() and time.time() < end:
            busy, nice = host_cpu_seconds()
            self.points.append((time.time(), busy, {p: process_cpu_seconds(p) for p in self.pids},
                                nice))
            self.stop.wait(0.25)

    def close(self):
        self.stop.set()
        self.thread.join(timeout=5)

    def cores(self, t0, t1, pid=None, niced=False):
        """Mean cores over [t0, t1]: the host's busy CPU (niced: its nice mode), or process
        `pid`'s."""
        inside = [p for p in self.points if t0 <= p[0] <= t1]
        if len(inside) < 2:
            raise AssertionError("no CPU samples in [%f, %f]" % (t0, t1))
        a, b = inside[0], inside[-1]
        if pid is not None:
            va, vb = a[2][pid], b[2][pid]
        else:
            va, vb = (a[3], b[3]) if niced else (a[1], b[1])
        return (vb - va) / (b[0] - a[0])


class Bottleneck(CapacityRunHelpers, unittest.TestCase):
    def cgroup(self, role):
        cg = CpuCgroup("lwtest-%d-%s" % (os.getpid(), role))
        if not cg.dir:
            self.skipTest("no writable cgroup cpu controller (v2 cpu.max or v1 cpu.cfs_quota_us)")
        self.addCleanup(cg.remove)  # after tearDown has killed the processes in it
        return cg

    def verdict(self, lw, run):
        rep = self.report(lw, run["id"])
        b = rep["bottleneck"]
        print("\nrps by users:", [(p.get("users"), round(p.get("rps", 0), 1))
                                  for p in rep["phases"]],
              "\nbottleneck:", b.get("basis"), b.get("users"), b["summary"], file=sys.stderr)
        phase = next(p for p in rep["phases"] if p["name"] == b["phase"])
        print("targets:", phase["targets"], file=sys.stderr)
        self.assertTrue(b["assessed"], b)
        self.assertTrue(b["findings"], b)
        return b, {t["name"]: t for t in phase["targets"]}

    def test_quota_bound_target_and_generator(self):
        """The two cases where a process saturates at its own CPU quota, at once: each holds
        what it saturates to a fraction of a core by construction (0.05 and 0.15 cores, and
        Locust's CPU against a server of 10,000 req/s), so neither is the limit of the other,
        and each has its own Locust, server and loadwatch."""
        app_cg, gen_cg = self.cgroup("app"), self.cgroup("gen")
        generator = self.beside(lambda: self.generator_under_cpu_quota(gen_cg))
        try:
            self.cpu_bound_target(app_cg)
        finally:  # its loadwatch stops when it ends, whatever happened here
            generator()

    def cpu_bound_target(self, cg):
        """The server burns CPU per request under a 0.05-core quota: from the first user on it
        is saturated, so whichever phase is assessed, the target's CPU is the verdict."""
        quota = 0.05
        cg.quota(quota)
        app, server = self.server(4, 5, mode="cpu", prefix=cg.prefix())
        locust_port = free_port()
        meter = CpuMeter([server.pid])
        try:
            with Loadwatch(self.loadwatch_args(app, locust_port,
                                               os.path.join(self.dir, "s"))) as lw:
                run = self.step_run(lw, app, locust_port, USERS, step=STEP, linger=True)
                b, targets = self.verdict(lw, run)
                rep = self.report(lw, run["id"])
        finally:
            meter.close()
        first = b["findings"][0]
        # The server at its quota: named by its CPU against the quota, or by the quota's
        # throttling of it (both name the app and its limit, never the idle host).
        self.assertIn((first["check"], first["subject"]),
                      [("target_cpu", "app"), ("throttling", "app")], b)
        self.assertAlmostEqual(targets["app"]["cpu_limit_cores"], quota, places=3)
        # Its CPU as /proc counted it over the stable window. On a busy host a throttled
        # process can get less than its quota (0.044 of 0.05 in one CI run), so the figure is
        # held to /proc, not to the quota.
        phase = next(p for p in rep["phases"] if p["name"] == b["phase"])
        truth = meter.cores(phase["stable_start"], phase["end"], server.pid)
        print("app %.4f cores by /proc, %.4f reported" % (truth, targets["app"]["cpu_cores"]),
              file=sys.stderr)
        self.assertLessEqual(truth, 1.1 * quota)
        self.assertAlmostEqual(targets["app"]["cpu_cores"], truth, delta=0.1 * quota)

    def generator_under_cpu_quota(self, cg):
        """Locust, watched as the target "generator", under a 0.15-core quota against a server
        that serves 200 requests at once in 20 ms each (10,000 req/s). Locust spends about 2 ms
        of CPU a request, so the quota caps it near 80 req/s: from 16 users on (demand several
        hundred req/s) it saturates, the server never does."""
        quota = 0.15
        cg.quota(None)  # Locust starts at full speed (its imports take seconds of CPU) ...
        app, _ = self.server(200, 20)
        locust_port = free_port()
        # Locust's command line holds a directory of this case's own: no other Locust matches
        # (the other case's runs beside it from this test's directory). The "[l]" keeps the
        # pattern from matching loadwatch's own command line, which holds it.
        where = os.path.join(self.dir, "generator")
        os.mkdir(where)
        gen = "--target=generator=cmdline:[l]ocust -f " + re.escape(where + os.sep)
        args = self.loadwatch_args(app, locust_port, os.path.join(where, "s"), [gen])

        def cap_when_up():  # ... and is capped once its web UI answers
            deadline = time.time() + 30
            while time.time() < deadline:
                try:
                    http_get("http://127.0.0.1:%d/" % locust_port, timeout=1)
                    break
                except OSError:
                    time.sleep(0.1)
            cg.quota(quota)

        with Loadwatch(args) as lw:
            capper = threading.Thread(target=cap_when_up)
            capper.start()
            try:
                run = self.step_run(lw, app, locust_port, GENERATOR_USERS, prefix=cg.prefix(),
                                    step=STEP, where=where, linger=True)
            finally:
                capper.join(timeout=35)
            b, targets = self.verdict(lw, run)
        first = b["findings"][0]
        self.assertIn((first["check"], first["subject"]),
                      [("generator_cpu", "generator"), ("throttling", "generator")], b)
        self.assertNotIn("target_cpu", [f["check"] for f in b["findings"]], b)
        self.assertAlmostEqual(targets["generator"]["cpu_limit_cores"], quota, places=3)

    HOG = "lwtest-hog"  # the loops' process name (comm), set with prctl(PR_SET_NAME)

    def hogs(self, n, seconds, nice=0):
        """n busy loops at `nice`, each ending by itself after `seconds` and killed by PID at
        tearDown. Children of this test, they share its scheduling group (autogroup), where a
        nice value counts."""
        code = ("import ctypes, time\n"
                "ctypes.CDLL(None).prctl(15, %r, 0, 0, 0)\n"  # 15: PR_SET_NAME
                "e = time.time() + %d\nwhile time.time() < e: pass\n"
                % (self.HOG.encode(), seconds))
        procs = [subprocess.Popen(["nice", "-n", str(nice), sys.executable, "-c", code])
                 for _ in range(n)]
        self.children.extend(procs)
        return [p.pid for p in procs]

    def test_host_cpu_saturated_by_others(self):
        """Busy loops at nice 0 outside every target (one more than the host has cores)
        compete with the run as equals: the verdict is the host's CPU, the share it gives
        "others" covers what the loops used by /proc over the same window, and it names the
        busiest processes, the loops among them."""
        cores = os.cpu_count()
        app, _ = self.server(50, 50)  # 1,000 req/s of room: never the limit at 4 users
        locust_port = free_port()
        with Loadwatch(self.loadwatch_args(app, locust_port, os.path.join(self.dir, "s"))) as lw:
            pids = self.hogs(cores + 1, STEP * len(HOG_USERS) + 60)
            meter = CpuMeter(pids)
            try:
                run = self.step_run(lw, app, locust_port, HOG_USERS, step=STEP, linger=True)
                b, targets = self.verdict(lw, run)
                rep = self.report(lw, run["id"])
            finally:
                meter.close()
        phase = next(p for p in rep["phases"] if p["name"] == b["phase"])
        first = b["findings"][0]
        self.assertEqual((first["check"], first["subject"]), ("host_cpu", "host"), b)
        self.assertIn("used by others", first["evidence"])
        self.assertIn("app", first["evidence"])
        self.assertIn("; busiest processes: ", first["evidence"])
        t0, t1 = phase["stable_start"], phase["end"]
        hog_cores = sum(meter.cores(t0, t1, pid) for pid in pids)
        busy = meter.cores(t0, t1)
        print("hogs %.2f cores, host busy %.2f by /proc; report: busy %.2f, others %.2f" %
              (hog_cores, busy, phase["host"]["cpu_busy_cores"],
               phase["host"]["others_cpu_cores"]), file=sys.stderr)
        # The host really was saturated, by normal-priority work (niced work, a build beside
        # the test, yields to it), and loadwatch's busy figure agrees with /proc.
        niced = meter.cores(t0, t1, niced=True)
        print("of it niced %.2f by /proc" % niced, file=sys.stderr)
        self.assertGreaterEqual(busy - niced, 0.9 * cores)
        self.assertAlmostEqual(phase["host"]["cpu_busy_cores"], busy, delta=0.1 * cores)
        # Everyone else's share holds the loops' CPU (and whatever else ran on the host), and
        # the loops used more than any target.
        others = phase["host"]["others_cpu_cores"]
        self.assertGreaterEqual(others, 0.9 * hog_cores - 0.05)
        self.assertLessEqual(others, busy + 0.1)
        self.assertGreater(others, max(t["cpu_cores"] for t in targets.values()))
        # Who the others are, by name: the loops, with what they used by /proc. The names are
        # scanned every 5 s, and each sample of the stable window repeats the last scan, which
        # covered up to 5 s before the sample: so the figure is the loops' CPU over some span
        # within [t0 - 10, t1], and lies between its lowest and highest over such spans. On a
        # host where other work takes a large share they may fall out of the five.
        top = phase["host"]["top_cpu_cores"]
        spans = [sum(meter.cores(a, b, pid) for pid in pids)
                 for a in (t0 - 10, t0 - 5, t0) for b in (t0, t1)
                 if b - a >= 4 and a >= meter.points[0][0]]
        print("busiest by name %s; loops by /proc %.2f, %.2f to %.2f over the scans' spans" %
              (top, hog_cores, min(spans), max(spans)), file=sys.stderr)
        if hog_cores >= 0.25 * others:
            self.assertIn(self.HOG + " ", first["evidence"])
            self.assertGreaterEqual(top[self.HOG], 0.9 * min(spans) - 0.1)
            self.assertLessEqual(top[self.HOG], 1.1 * max(spans) + 0.1)

    def test_queueing_limit_with_idle_cpu(self):
        """A server with QUEUE_K slots of QUEUE_SERVICE_MS (sleeping, so its CPU stays low):
        throughput flattens at K / service time while latency grows, and the verdict is a
        queueing limit whose Little's-law figure is K within 25 %. Busy loops at nice 19, one
        per core, fill the host's CPU beside it, as a build at low priority does: that CPU
        yields to the server, so the host is not the limit."""
        cores = os.cpu_count()
        app, server = self.server(QUEUE_K, QUEUE_SERVICE_MS)
        server_nice = process_nice(server.pid)
        locust_port = free_port()
        with Loadwatch(self.loadwatch_args(app, locust_port, os.path.join(self.dir, "s"))) as lw:
            pids = self.hogs(cores, STEP * len(QUEUE_USERS) + 60, nice=19)
            meter = CpuMeter(pids)
            try:
                run = self.step_run(lw, app, locust_port, QUEUE_USERS, step=STEP, linger=True)
                rep = self.report(lw, run["id"])
            finally:
                meter.close()
        b = rep["bottleneck"]
        phase = next(p for p in rep["phases"] if p["name"] == b["phase"])
        t0, t1 = phase["stable_start"], phase["end"]
        busy, niced = meter.cores(t0, t1), meter.cores(t0, t1, niced=True)
        print("\nrps by users:", [(p.get("users"), round(p.get("rps", 0), 1))
                                  for p in rep["phases"]],
              "\nhost busy %.2f, niced %.2f by /proc; report: busy %.2f, nice %.2f"
              "\nbottleneck:" % (busy, niced, phase["host"]["cpu_busy_cores"],
                                 phase["host"]["cpu_cores_by_mode"].get("nice", 0)),
              b["summary"], file=sys.stderr)
        if busy - niced >= 0.85 * cores:
            self.skipTest("normal-priority work kept %.2f of %d cores busy: the idle-CPU premise "
                          "does not hold on this machine now" % (busy - niced, cores))
        # The premise by /proc: the host's CPU was full (the rule for normal-priority work
        # names the host from 90 %), and niced work is what filled it.
        self.assertGreaterEqual(busy, 0.9 * cores)
        self.assertTrue(b["findings"], b)
        first = b["findings"][0]
        self.assertEqual((first["check"], first["subject"]), ("queueing", "app"), b)
        self.assertNotIn("host_cpu", [f["check"] for f in b["findings"]], b)
        self.assertAlmostEqual(first["value"], QUEUE_K, delta=0.25 * QUEUE_K)
        # K's range from the bounds of req/s and latency holds the figure and reaches the
        # server's K within the same 25 %.
        self.assertLessEqual(first["value_low"], first["value"])
        self.assertLessEqual(first["value"], first["value_high"])
        self.assertLessEqual(first["value_low"], 1.25 * QUEUE_K)
        self.assertGreaterEqual(first["value_high"], 0.75 * QUEUE_K)
        self.assertIn("a pool, a lock or a connection limit of about", b["summary"])
        self.assertIn("of it niced work that yields", b["summary"])
        self.assertNotIn("database", b["summary"])
        # The report read the server's nice value as /proc/PID/stat has it.
        self.assertEqual(server_nice, 0)
        self.assertEqual(next(t for t in phase["targets"] if t["name"] == "app")["nice"],
                         server_nice)

if __name__ == "__main__":
    lwtest.main()
