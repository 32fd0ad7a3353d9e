"""A CPU quota for a test's process: a cgroup the test makes and removes (stdlib only).

The cgroup also gets ten times the default CPU weight, so that on a machine busy with other
work the process still gets the whole of its quota: the quota, not the machine, is its limit.

cgroup v2 (cpu.max) where the unified hierarchy has the cpu controller, else v1's cpu
hierarchy (cpu.cfs_quota_us). Its cpu.stat is the ground truth a test checks loadwatch's
throttling figures against: periods, throttled periods and throttled time.

    from cpu_quota import CpuQuota, NotPossible
    with CpuQuota("lw-srv", 0.2) as q:
        proc = subprocess.Popen(["python3", "server.py"])
        q.add(proc.pid)
        q.stat()   # {"nr_periods": ..., "nr_throttled": ..., "throttled_seconds": ...}
"""
import os
import time

V2 = "/sys/fs/cgroup"
V1_CPU = ("/sys/fs/cgroup/cpu", "/sys/fs/cgroup/cpu,cpuacct")
PERIOD_US = 100000


class NotPossible(Exception):
    """No writable cgroup with a CPU quota here: the test should skip."""


def _read(path):
    with open(path) as f:
        return f.read()


def _write(path, text):
    with open(path, "w") as f:
        f.write(text)


class CpuQuota:
    def __init__(self, name, cores):
        self.name = "%s-%d" % (name, os.getpid())
        self.cores = cores
        self.path = None
        self.v2 = False

    def __enter__(self):
        # cores None: no quota, only the weight (a process that must not be slowed by the
        # machine's other work either).
        quota = int(self.cores * PERIOD_US) if self.cores else -1
        try:
            # The machine's cgroup set-up is left as it is: only a root that hands the cpu
            # controller to its children already will do.
            if "cpu" in _read(os.path.join(V2, "cgroup.subtree_control")).split():
                self.path, self.v2 = os.path.join(V2, self.name), True
                os.mkdir(self.path)
                _write(os.path.join(self.path, "cpu.max"),
                       "%s %d" % (quota if quota > 0 else "max", PERIOD_US))
                _write(os.path.join(self.path, "cpu.weight"), "10000")
                return self
        except OSError:
            self._remove()
        for root in V1_CPU:
            if not os.path.exists(os.path.join(root, "cpu.cfs_quota_us")):
                continue
            try:
                self.path, self.v2 = os.path.join(root, self.name), False
                os.mkdir(self.path)
                _write(os.path.join(self.path, "cpu.cfs_period_us"), str(PERIOD_US))
                _write(os.path.join(self.path, "cpu.cfs_quota_us"), str(quota))
                _write(os.path.join(self.path, "cpu.shares"), "10240")
                return self
            except OSError as e:
                self._remove()
                raise NotPossible("cannot make a cgroup with a CPU quota: %s" % e)
        raise NotPossible("no cgroup v2 cpu controller and no v1 cpu hierarchy here")

    def __exit__(self, *exc):
        self._remove()

    def _remove(self):
        if not self.path or not os.path.isdir(self.path):
            return
        # Processes left in it (the test ends its own first) move to the parent.
        parent = os.path.dirname(self.path)
        for _ in range(50):
            try:
                os.rmdir(self.path)
                return
            except OSError:
                for pid in _read(os.path.join(self.path, "cgroup.procs")).split():
                    try:
                        _write(os.path.join(parent, "cgroup.procs"), pid)
                    except OSError:
                        pass
                time.sleep(0.1)

    def add(self, pid):
        """Moves process `pid` (all its threads) into the cgroup."""
        with open(os.path.join(self.path, "cgroup.procs"), "w") as f:
            f.write(str(pid))

    def stat(self):
        """cpu.stat's periods, throttled periods and throttled time (seconds)."""
        fields = dict(line.split() for line in _read(os.path.join(self.path, "cpu.stat"))
                      .splitlines() if line.strip())
        throttled = (int(fields["throttled_usec"]) / 1e6 if "throttled_usec" in fields
                     else int(fields.get("throttled_time", 0)) / 1e9)
        return {"nr_periods": int(fields["nr_periods"]),
                "nr_throttled": int(fields["nr_throttled"]), "throttled_seconds": throttled}
