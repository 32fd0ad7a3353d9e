"""The tcp collector when netlink sock_diag is refused at runtime, as under systemd's
RestrictAddressFamilies= or a seccomp filter: loadwatch runs under tests/tools/deny_netlink
(socket(AF_NETLINK) fails with EAFNOSUPPORT), warns once, falls back to /proc/net/tcp{,6} and
counts a loopback port's connections exactly as it does over netlink, without
loadwatch_tcp_listen_queue_max (which /proc/net/tcp does not carry). x86_64 only."""
import errno
import os
import platform
import shutil
import socket
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from lwtest import SOURCE_DIR, Loadwatch  # noqa: E402
import lwtest  # noqa: E402

BUILD_DIR = os.environ.get("LOADWATCH_BUILD_DIR", os.path.join(SOURCE_DIR, "build"))
DENY_NETLINK = os.path.join(BUILD_DIR, "tests", "deny_netlink")
WARNING = "tcp: netlink sock_diag refused"
CONNECTIONS = 20

NETLINK_PROBE = r"""
import socket, sys
try:
    socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 4).close()  # 4: NETLINK_SOCK_DIAG
except OSError as e:
    sys.exit(e.errno)
socket.socket(socket.AF_INET, socket.SOCK_STREAM).close()  # other families still work
"""


@unittest.skipUnless(platform.machine() == "x86_64", "the seccomp filter is x86_64 only")
class NetlinkRefused(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not os.access(DENY_NETLINK, os.X_OK):
            raise RuntimeError("%s not built (target deny_netlink)" % DENY_NETLINK)
        probe = subprocess.run([sys.executable, "-c", NETLINK_PROBE], timeout=10)
        if probe.returncode != 0:
            raise unittest.SkipTest("netlink sock_diag already refused here: nothing to compare")
        cls.dir = tempfile.mkdtemp()
        cls.addClassCleanup(shutil.rmtree, cls.dir)
        # Held open for the whole class: CONNECTIONS ESTABLISHED pairs on a loopback port.
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        cls.addClassCleanup(listener.close)
        listener.bind(("127.0.0.1", 0))
        listener.listen(64)
        listener.settimeout(5)
        cls.port = listener.getsockname()[1]
        for _ in range(CONNECTIONS):
            client = socket.create_connection(("127.0.0.1", cls.port), timeout=5)
            cls.addClassCleanup(client.close)
            server = listener.accept()[0]
            cls.addClassCleanup(server.close)
        cls.config = os.path.join(cls.dir, "lw.yml")
        with open(cls.config, "w") as f:
            f.write("allow_empty: true\ntcp:\n  ports: [%d]\n" % cls.port)

    def args(self):
        return ["--config.file=" + self.config, "--log.level=debug", "--sample.interval=200ms"]

    def run_loadwatch(self, wrapped):
        """Samples of a loadwatch that counts the held connections, its log and its /proc
        status, with or without deny_netlink in front."""
        lw = Loadwatch(self.args())
        if wrapped:
            lw.args.insert(0, DENY_NETLINK)
        with lw:
            lw.wait_for(lambda s: lw.value("loadwatch_tcp_port_connections", s,
                                           port=str(self.port), side="local",
                                           state="established") == CONNECTIONS,
                        timeout=10, what="%d established on port %d" % (CONNECTIONS, self.port))
            samples = lw.wait_samples(3)  # a few more samples: the warning must not repeat
            self.assertIsNone(lw.proc.poll(), lw.output())
            with open("/proc/%d/status" % lw.proc.pid) as f:
                seccomp = [l.split()[1] for l in f if l.startswith("Seccomp:")][0]
            return samples, lw.output(), seccomp, lw

    @staticmethod
    def own_seccomp():
        with open("/proc/self/status") as f:
            return [l.split()[1] for l in f if l.startswith("Seccomp:")][0]

    def test_filter_refuses_netlink_only(self):
        p = subprocess.run([DENY_NETLINK, sys.executable, "-c", NETLINK_PROBE], timeout=10,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.assertEqual(p.returncode, errno.EAFNOSUPPORT, p.stdout)

    def test_falls_back_to_procfs_with_the_same_counts(self):
        port = str(self.port)
        samples, log, seccomp, lw = self.run_loadwatch(wrapped=True)
        self.assertEqual(seccomp, "2", "loadwatch not under the seccomp filter")  # 2: filter
        self.assertEqual(log.count(WARNING), 1, log)
        self.assertIn(os.strerror(errno.EAFNOSUPPORT), log)
        self.assertEqual(lw.value("loadwatch_collector_success", samples, collector="tcp"), 1)
        procfs = {side: lw.value("loadwatch_tcp_port_connections", samples, port=port,
                                 side=side, state="established") for side in ("local", "remote")}
        self.assertEqual(procfs, {"local": CONNECTIONS, "remote": CONNECTIONS})
        lw.value("loadwatch_tcp_listen_queue_length", samples, port=port)
        self.assertNotIn("loadwatch_tcp_listen_queue_max", {n for n, _ in samples})

        samples, log, seccomp, lw = self.run_loadwatch(wrapped=False)
        self.assertEqual(seccomp, self.own_seccomp())
        self.assertNotIn(WARNING, log)
        self.assertEqual(lw.value("loadwatch_collector_success", samples, collector="tcp"), 1)
        netlink = {side: lw.value("loadwatch_tcp_port_connections", samples, port=port,
                                  side=side, state="established") for side in ("local", "remote")}
        self.assertEqual(netlink, procfs)
        self.assertEqual(lw.value("loadwatch_tcp_listen_queue_length", samples, port=port), 0)
        self.assertGreater(lw.value("loadwatch_tcp_listen_queue_max", samples, port=port), 0)


if __name__ == "__main__":
    lwtest.main(verbosity=2)
