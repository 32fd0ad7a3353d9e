"""The mixed HTTP attack, bounded: 200 keep-alive clients (a request every 8 s), 200 slowloris
clients (a header byte a second) and 200 idle connections from 127.0.0.2-9, all reconnecting
when dropped (bench/http_attack.py's attacker, one asyncio process), against the real daemon
watching two targets. Meanwhile /metrics is scraped from 127.0.0.1 on a fresh connection every
0.5 s: the scrapes stay fast (median <= 100 ms, worst <= 1 s), and the daemon stays light
(threads and RSS from /proc/PID/status). The attack is checked to be real from the attacker's
own counts and from ss. Loopback only; bounded in count and time (~45 s)."""
import json
import os
import resource
import socket
import statistics
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from lwtest import Loadwatch, rss_kib  # noqa: E402
import lwtest  # noqa: E402

SOURCE = os.environ.get("LOADWATCH_SOURCE_DIR",
                        os.path.join(os.path.dirname(__file__), "..", ".."))
ATTACKER = os.path.join(SOURCE, "bench", "http_attack.py")
EACH = 200            # clients of each kind
SECONDS = 25          # scraping under attack
MAX_THREADS = 16      # the bound for two targets, doubled under attack: 32
MAX_RSS_MIB = 40


def threads_of(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("Threads:"):
                return int(line.split()[1])
    return 0


def fresh_scrape(port, timeout=5):
    """GET /metrics on a new connection from 127.0.0.1; -> (seconds, status)."""
    t0 = time.monotonic()
    with socket.create_connection(("127.0.0.1", port), timeout=timeout,
                                  source_address=("127.0.0.1", 0)) as s:
        s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        data = b""
        while True:
            chunk = s.recv(262144)
            if not chunk:
                break
            data += chunk
    status = int(data.split(b" ", 2)[1]) if data.startswith(b"HTTP/1.1 ") else 0
    return time.monotonic() - t0, status


def established_from_attackers(port):
    """Established connections to the daemon's port from 127.0.0.2-9, as ss sees them."""
    out = subprocess.run(["ss", "-Htn", "state", "established", "( sport = :%d )" % port],
                         capture_output=True, text=True, timeout=10).stdout
    n = 0
    for line in out.splitlines():
        peer = line.split()[-1] if line.split() else ""
        if peer.startswith("127.0.0.") and peer.split(":")[0] not in ("127.0.0.1",):
            n += 1
    return n


class MixedAttack(unittest.TestCase):
    def test_scrapes_stay_fast_and_the_daemon_light(self):
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        need = 8192
        if hard != resource.RLIM_INFINITY and hard < need:
            raise unittest.SkipTest("hard RLIMIT_NOFILE %d < %d: cannot hold the attack" %
                                    (hard, need))
        resource.setrlimit(resource.RLIMIT_NOFILE, (need if hard == resource.RLIM_INFINITY
                                                    else max(soft, min(hard, need)), hard))
        with Loadwatch(["--target=self=comm:loadwatch", "--target=tester=pid:%d" % os.getpid(),
                        "--sample.interval=1s"]) as lw:
            pid = lw.proc.pid
            lwtest.eventually(lambda: lw.get("/-/ready")[0] == 200, timeout=15, what="ready")
            before = (threads_of(pid), rss_kib(pid))
            attacker = subprocess.Popen(
                [sys.executable, ATTACKER, "--attacker", "--port", str(lw.port),
                 "--keepalive", str(EACH), "--slowloris", str(EACH), "--idle", str(EACH),
                 "--seconds", str(SECONDS), "--ramp", "8"],
                stdout=subprocess.PIPE, text=True)
            try:
                ready = json.loads(attacker.stdout.readline() or "{}")
                self.assertIn("ready", ready, "the attacker did not start")
                times, statuses, threads, rss, held = [], [], [], [], []
                end = time.monotonic() + SECONDS - 2
                next_at = time.monotonic()
                while time.monotonic() < end:
                    time.sleep(max(0.0, next_at - time.monotonic()))
                    next_at += 0.5
                    try:
                        dt, status = fresh_scrape(lw.port)
                    except OSError as e:
                        dt, status = 5.0, type(e).__name__
                    times.append(dt)
                    statuses.append(status)
                    threads.append(threads_of(pid))
                    rss.append(rss_kib(pid))
                    if len(times) % 10 == 5:
                        held.append(established_from_attackers(lw.port))
                    next_at = max(next_at, time.monotonic())
                tail = attacker.stdout.read()
                attacker.wait(30)
            finally:
                if attacker.poll() is None:
                    attacker.kill()
                    attacker.wait(5)
                attacker.stdout.close()
            done = next((json.loads(line)["done"] for line in tail.splitlines()
                         if line.startswith('{"done"')), None)
            self.assertIsNotNone(done, "the attacker ended without its summary")
            keepalive = done["keepalive"]
            rejected = {dict(ls)["reason"]: v for (n, ls), v in lw.metrics().items()
                        if n == "loadwatch_http_rejected_requests_total"}
            print("attack %d+%d+%d from 8 addresses, %d s: %d scrapes, median %.1f ms, "
                  "worst %.1f ms; threads %d before, %d at most; RSS %.1f MiB before, %.1f MiB "
                  "at most; attack connections established (ss): %s; keep-alive answers %s "
                  "of %d requests; attacker drops %s; daemon turned away %s"
                  % (EACH, EACH, EACH, SECONDS, len(times), statistics.median(times) * 1000,
                     max(times) * 1000, before[0], max(threads), before[1] / 1024,
                     max(rss) / 1024, held, keepalive["status"], keepalive["requests"],
                     {k: done[k]["drops"] for k in done},
                     {k: v for k, v in rejected.items() if v}))
            self.assertEqual(set(statuses), {200})
            self.assertLessEqual(statistics.median(times), 0.100)
            self.assertLessEqual(max(times), 1.0)
            self.assertLessEqual(max(threads), 2 * MAX_THREADS)
            self.assertLessEqual(before[0], MAX_THREADS)
            self.assertLessEqual(max(rss) / 1024, MAX_RSS_MIB)
            # The attack was real: the daemon held hundreds of its connections (8 addresses at
            # 64 each at most), and the keep-alive clients were served.
            self.assertGreaterEqual(statistics.median(held), 300)
            self.assertGreater(keepalive["status"].get("200", 0), keepalive["requests"] // 2)
            self.assertGreater(done["slowloris"]["drops"] + done["idle"]["drops"], EACH)


if __name__ == "__main__":
    lwtest.main(verbosity=2)
