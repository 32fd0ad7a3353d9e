"""What saturated first, with real peers: a CPU-bound target and a CPU-starved generator.

Each process that must saturate runs in a cgroup with a small CPU quota (cgroup v2 cpu.max,
or v1 cpu.cfs_quota_us), so it saturates by construction on a busy host: a process needing a
twentieth of a core gets it on a loaded 2-core machine, a whole core may not (a tenth once got
only 82 % of its quota beside the other tests of the suite). loadwatch
reads the quota (loadwatch_process_cpu_limit_cores) and judges the process against it.
Everything listens on 127.0.0.1; every run and loop is bounded; the cgroups are removed.
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

    def test_cpu_bound_target(self):
        """The server burns CPU per request under a 0.05-core quota: from the first user on it
        is saturated, so whichever phase is assessed, the target's CPU is the verdict."""
        quota = 0.05
        cg = self.cgroup("app")
        cg.quota(quota)
        app, _ = self.server(4, 5, mode="cpu", prefix=cg.prefix())
        locust_port = free_port()
        with Loadwatch(self.loadwatch_args(app, locust_port, os.path.join(self.dir, "s"))) as lw:
            run = self.step_run(lw, app, locust_port, USERS, step=STEP)
            b, targets = self.verdict(lw, run)
        first = b["findings"][0]
        self.assertEqual((first["check"], first["subject"]), ("target_cpu", "app"), b)
        self.assertAlmostEqual(targets["app"]["cpu_limit_cores"], quota, places=3)
        self.assertGreaterEqual(targets["app"]["cpu_cores"], 0.9 * quota)

    def test_generator_under_cpu_quota(self):
        """Locust, watched as the target "generator", under a 0.15-core quota against a server
        that serves 200 requests at once in 20 ms each (10,000 req/s). Locust spends about 2 ms
        of CPU a request, so the quota caps it near 80 req/s: from 16 users on (demand several
        hundred req/s) it saturates, the server never does."""
        quota = 0.15
        cg = self.cgroup("gen")
        cg.quota(None)  # Locust starts at full speed (its imports take seconds of CPU) ...
        app, _ = self.server(200, 20)
        locust_port = free_port()
        # Locust's command line holds this test's own directory: no other Locust matches. The
        # "[l]" keeps the pattern from matching loadwatch's own command line, which holds it.
        gen = "--target=generator=cmdline:[l]ocust -f " + re.escape(self.dir)
        args = self.loadwatch_args(app, locust_port, os.path.join(self.dir, "s"), [gen])

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
                                    step=STEP)
            finally:
                capper.join(timeout=35)
            b, targets = self.verdict(lw, run)
        first = b["findings"][0]
        self.assertEqual((first["check"], first["subject"]), ("generator_cpu", "generator"), b)
        self.assertNotIn("target_cpu", [f["check"] for f in b["findings"]], b)
        self.assertAlmostEqual(targets["generator"]["cpu_limit_cores"], quota, places=3)


if __name__ == "__main__":
    lwtest.main()
