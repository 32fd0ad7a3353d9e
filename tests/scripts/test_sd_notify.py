"""The systemd notify protocol as loadwatch.service (Type=notify, WatchdogSec=) sees it, through a
real NOTIFY_SOCKET: READY=1 only once the port answers with a sample; WATCHDOG=1 while the
sampler makes progress and not once it is stuck; RELOADING=1/READY=1 around SIGHUP;
STOPPING=1 on SIGTERM."""
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from lwtest import BINARY, SOURCE_DIR, free_port, http_get  # noqa: E402
import lwtest  # noqa: E402


class Notify(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="lw-notify-")
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(os.path.join(self.dir, "notify"))
        self.sock.settimeout(0.2)
        self.proc = None
        self.log = tempfile.TemporaryFile()

    def tearDown(self):
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.sock.close()
        self.log.close()
        shutil.rmtree(self.dir)

    def start(self, args):
        env = dict(os.environ, NOTIFY_SOCKET=os.path.join(self.dir, "notify"),
                   WATCHDOG_USEC="2000000")  # WatchdogSec=2s
        self.port = free_port()
        self.proc = subprocess.Popen([BINARY, "--web.listen-address=127.0.0.1:%d" % self.port]
                                     + args, env=env, stdout=self.log, stderr=subprocess.STDOUT)

    def messages(self, seconds, until=None):
        """Notify datagrams received within `seconds` (stops early at one containing `until`),
        each as (time received, text)."""
        out = []
        deadline = time.time() + seconds
        while time.time() < deadline:
            try:
                data = self.sock.recv(4096).decode()
            except socket.timeout:
                continue
            out.append((time.time(), data))
            if until and until in data:
                break
        return out

    def output(self):
        self.log.seek(0)
        return self.log.read().decode(errors="replace")

    def test_ready_watchdog_reload_stop(self):
        self.start(["--sample.interval=200ms"])
        got = self.messages(15, until="READY=1")
        self.assertTrue(got and "READY=1" in got[-1][1], "no READY=1: %r\n%s" % (got, self.output()))
        # Ready means serving, with a sample published.
        status, _, body = http_get("http://127.0.0.1:%d/metrics" % self.port)
        self.assertEqual(status, 200)
        self.assertIn(b"loadwatch_last_sample_timestamp_seconds", body)
        pings = [t for t, m in self.messages(3) if "WATCHDOG=1" in m]
        self.assertGreaterEqual(len(pings), 3, "WATCHDOG=1 should come every ~0.5 s")
        self.proc.send_signal(signal.SIGHUP)
        got = [m for _, m in self.messages(5, until="READY=1")]
        self.assertTrue(any("RELOADING=1" in m for m in got), got)
        self.assertIn("READY=1", got[-1])
        self.proc.send_signal(signal.SIGTERM)
        got = [m for _, m in self.messages(5, until="STOPPING=1")]
        self.assertTrue(got and "STOPPING=1" in got[-1], got)
        self.assertEqual(self.proc.wait(10), 0)

    def test_a_stuck_sampler_stops_the_watchdog(self):
        # A procfs whose loadavg becomes a FIFO without a writer: the next read blocks for
        # good, as on a hung file system.
        proc = os.path.join(self.dir, "proc")
        shutil.copytree(os.path.join(SOURCE_DIR, "tests", "fixtures", "proc"), proc, symlinks=True)
        self.start(["--sample.interval=200ms", "--path.procfs=" + proc])
        got = self.messages(15, until="READY=1")
        self.assertTrue(got and "READY=1" in got[-1][1], "no READY=1\n" + self.output())
        self.assertTrue(any("WATCHDOG=1" in m for _, m in self.messages(2)))
        os.remove(os.path.join(proc, "loadavg"))
        os.mkfifo(os.path.join(proc, "loadavg"))
        stuck_at = time.time()
        pings = [t for t, m in self.messages(9) if "WATCHDOG=1" in m]
        last = max(pings) - stuck_at if pings else 0
        print("last WATCHDOG=1 %.1f s after the sampler got stuck" % last)
        # Stall allowance: max(2 x 200ms, 200ms + 5s) = 5.2 s, then silence.
        self.assertLess(last, 6.5)
        self.assertTrue(pings and max(pings) < time.time() - 2)
        self.assertIsNone(self.proc.poll())
        # Unblock the reader so the process can stop.
        fd = os.open(os.path.join(proc, "loadavg"), os.O_WRONLY | os.O_NONBLOCK)
        os.close(fd)


if __name__ == "__main__":
    lwtest.main(verbosity=2)
