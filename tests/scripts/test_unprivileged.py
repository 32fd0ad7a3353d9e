"""loadwatch as an unprivileged user watching a root-owned process: which capability the unit
needs (CAP_DAC_READ_SEARCH and CAP_SYS_PTRACE, both), and that without them the target degrades
to partial reads instead of failing. Needs root (to start the target and drop to nobody)."""
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from lwtest import BINARY, free_port, http_get, parse_metrics  # noqa: E402
import lwtest  # noqa: E402

NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]

# A root-owned process with a listening TCP socket and some file I/O.
TARGET = r"""
import socket, time
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(8)
print(s.getsockname()[1], flush=True)
deadline = time.time() + 120
while time.time() < deadline:
    with open("/proc/self/stat") as f: f.read()
    time.sleep(0.05)
"""


def caps(*names):
    if not names:
        return []
    joined = ",".join("+" + n for n in names)
    return ["--inh-caps=" + joined, "--ambient-caps=" + joined]


class Unprivileged(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if os.geteuid() != 0:
            raise unittest.SkipTest("not root: cannot start a target and drop to nobody")
        cls.target = subprocess.Popen([sys.executable, "-c", TARGET], stdout=subprocess.PIPE)
        cls.target_port = int(cls.target.stdout.readline())

    @classmethod
    def tearDownClass(cls):
        cls.target.kill()
        cls.target.wait()
        cls.target.stdout.close()

    def run_as_nobody(self, *capabilities):
        """Starts loadwatch as nobody with these capabilities; returns metrics after a few
        samples and the exit code on SIGTERM."""
        port = free_port()
        cmd = NOBODY + caps(*capabilities) + [
            BINARY, "--web.listen-address=127.0.0.1:%d" % port, "--sample.interval=100ms",
            "--target=root=pid:%d" % self.target.pid, "--log.level=debug"]
        log = tempfile.TemporaryFile()
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
        try:
            def scrape():
                try:
                    status, _, body = http_get("http://127.0.0.1:%d/metrics" % port, timeout=2)
                except OSError:
                    return None
                self.assertEqual(status, 200)
                return parse_metrics(body.decode())
            up = ("loadwatch_target_up", frozenset({("target", "root")}))
            samples = None
            deadline = time.time() + 15
            while time.time() < deadline and not (samples and samples.get(up) == 1):
                if proc.poll() is not None:
                    log.seek(0)
                    self.fail("loadwatch exited:\n" + log.read().decode(errors="replace"))
                time.sleep(0.1)
                samples = scrape()
            self.assertIsNotNone(samples, "no metrics in 15 s")
            # 15 more samples (1.5 s), time for at least one walk of the target's sockets.
            stamp = ("loadwatch_last_sample_timestamp_seconds", frozenset())
            stamps = {samples[stamp]}

            def later():
                s = scrape()
                if s:
                    stamps.add(s[stamp])
                return s if len(stamps) > 15 else None
            samples = lwtest.eventually(later, 15, 0.02, what="15 more samples")
            with open("/proc/%d/status" % proc.pid) as f:
                uid_line = [l for l in f if l.startswith("Uid:")][0]
            self.assertEqual(uid_line.split()[1:3], ["65534", "65534"])
        finally:
            proc.send_signal(signal.SIGTERM)
            try:
                code = proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                code = proc.wait()
            log.close()
        self.assertEqual(code, 0, "loadwatch did not exit cleanly")

        def value(name, **labels):
            want = set(labels.items())
            found = [v for (n, ls), v in samples.items() if n == name and want <= set(ls)]
            return found[0] if len(found) == 1 else None
        return value

    def test_capabilities_for_other_users_processes(self):
        results = {}
        for label, capabilities in (("none", ()), ("dac_read_search", ("dac_read_search",)),
                                    ("sys_ptrace", ("sys_ptrace",)),
                                    ("both", ("dac_read_search", "sys_ptrace"))):
            value = self.run_as_nobody(*capabilities)
            results[label] = {
                "up": value("loadwatch_target_up", target="root"),
                "partial_reads": value("loadwatch_target_partial_reads_total", target="root"),
                "rss": value("loadwatch_process_resident_memory_bytes", target="root"),
                "open_fds": value("loadwatch_process_open_fds", target="root"),
                "listen_sockets": value("loadwatch_process_tcp_connections", target="root",
                                        state="listen"),
            }
        for label, r in results.items():
            print(label, r)
        for label, r in results.items():
            # What any user may read keeps the target alive in the metrics.
            self.assertEqual(r["up"], 1, label)
            self.assertGreater(r["rss"], 0, label)
            self.assertGreater(r["open_fds"], 0, label)
        for label in ("none", "dac_read_search", "sys_ptrace"):
            self.assertGreater(results[label]["partial_reads"], 0, label)
            self.assertEqual(results[label]["listen_sockets"], 0, label)
        self.assertEqual(results["both"]["partial_reads"], 0)
        self.assertEqual(results["both"]["listen_sockets"], 1)


if __name__ == "__main__":
    lwtest.main(verbosity=2)
