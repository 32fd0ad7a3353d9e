"""Test hosts on one machine: network namespaces joined by a bridge (stdlib and iproute2 only).

Each host is a network namespace with its own TCP stack (its own TIME_WAIT, ports, listeners
and /proc/net), one veth to a bridge, and one address in 198.18.0.0/15, the range set aside for
network tests (RFC 2544). The bridge lives in a namespace of its own, so nothing is added to
the machine's own network: traffic stays among the namespaces the test made, and removing them
removes every link.

    from netns import Hosts, NotPossible
    with Hosts(["sut", "gen"]) as hosts:
        hosts.run("gen", ["curl", "-s", "http://%s:8080/" % hosts.address("sut")])
"""
import os
import subprocess

SUBNET = "198.18.0"
SKIP = 77  # the exit code ctest counts as skipped


class NotPossible(Exception):
    """Namespaces cannot be made here (not root, no iproute2): the test should skip."""


def _ip(*args, check=True):
    return subprocess.run(["ip", *args], check=check, capture_output=True, text=True)


class Hosts:
    def __init__(self, names, tag=None):
        self.tag = tag or "lw%d" % (os.getpid() % 100000)
        self.names = list(names)
        if len(self.names) > 250:
            raise ValueError("at most 250 hosts")
        self.bridge_ns = "%s-br" % self.tag
        self._made = []

    def netns(self, host):
        """The namespace name of `host` (for `ip netns exec`)."""
        return "%s-%s" % (self.tag, host)

    def address(self, host):
        return "%s.%d" % (SUBNET, self.names.index(host) + 1)

    def __enter__(self):
        if os.geteuid() != 0:
            raise NotPossible("network namespaces need root")
        try:
            _ip("netns", "add", self.bridge_ns)
        except (OSError, subprocess.CalledProcessError) as e:
            raise NotPossible("cannot add a network namespace: %s" % getattr(e, "stderr", e))
        self._made.append(self.bridge_ns)
        try:
            _ip("-n", self.bridge_ns, "link", "add", "br0", "type", "bridge")
            _ip("-n", self.bridge_ns, "link", "set", "br0", "up")
            for i, host in enumerate(self.names):
                ns = self.netns(host)
                _ip("netns", "add", ns)
                self._made.append(ns)
                outer, inner = "v%d" % i, "eth0"
                _ip("-n", self.bridge_ns, "link", "add", outer, "type", "veth", "peer", "name",
                    inner, "netns", ns)
                _ip("-n", self.bridge_ns, "link", "set", outer, "master", "br0", "up")
                _ip("-n", ns, "link", "set", "lo", "up")
                _ip("-n", ns, "addr", "add", self.address(host) + "/24", "dev", inner)
                _ip("-n", ns, "link", "set", inner, "up")
        except subprocess.CalledProcessError as e:
            self.__exit__(None, None, None)
            raise NotPossible("cannot build the test network: %s" % e.stderr.strip())
        return self

    def __exit__(self, *exc):
        for ns in reversed(self._made):
            _ip("netns", "del", ns, check=False)
        self._made = []

    def command(self, host, argv, keep_sys=False):
        """argv run inside `host`'s namespace. `ip netns exec` mounts a fresh /sys, without the
        machine's cgroup hierarchies; with keep_sys only the network namespace is entered, so
        /sys/fs/cgroup stays as on a real host (a loadwatch reading a process's CPU quota)."""
        if keep_sys:
            return ["nsenter", "--net=/run/netns/" + self.netns(host), *argv]
        return ["ip", "netns", "exec", self.netns(host), *argv]

    def run(self, host, argv, timeout=30, keep_sys=False, **kwargs):
        return subprocess.run(self.command(host, argv, keep_sys), timeout=timeout,
                              capture_output=True, text=True, **kwargs)

    def popen(self, host, argv, keep_sys=False, **kwargs):
        return subprocess.Popen(self.command(host, argv, keep_sys), **kwargs)


def stop_all(procs, timeout=5):
    """Ends the processes a test started in its hosts, by PID (SIGTERM, then SIGKILL)."""
    for p in procs:
        if p.poll() is None:
            p.terminate()
            try:
                p.wait(timeout)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


def run_on_hosts(names, check, *args):
    """A script test's body on fresh hosts: check(hosts, *args, procs, failures) starts what it
    needs (each process appended to procs, all ended by PID afterwards) and appends a line to
    failures for each property that did not hold. Returns the exit code: SKIP when namespaces
    cannot be made here, 1 after printing the failures, else 0."""
    failures, procs = [], []
    try:
        with Hosts(names) as hosts:
            try:
                check(hosts, *args, procs, failures)
            finally:
                stop_all(procs)
    except NotPossible as e:
        print("SKIP: %s" % e)
        return SKIP
    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0
