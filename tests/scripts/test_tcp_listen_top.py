"""The host-wide fullest listeners (loadwatch_tcp_listen_top_queue_*{port,owner}) name a
listener that overflows although nobody watches it: not in tcp.ports, not a target. The
listener is this test's own socket (owner comm python3), listening with backlog 1 and never
accepting while clients connect; its queue length and limit must match `ss -ltn`. Over netlink
and with --tcp.force-procfs (which has no limit column: _max is absent there)."""
import os
import re
import socket
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from lwtest import Loadwatch, promtool_check  # noqa: E402
import lwtest  # noqa: E402

CLIENTS = 4


def ss_listener(port):
    """(Recv-Q, Send-Q) of the listener on 127.0.0.1:port, as `ss -ltn` prints them."""
    out = subprocess.run(["ss", "-ltnH", "sport = :%d" % port], check=True,
                         stdout=subprocess.PIPE).stdout.decode()
    rows = [line.split() for line in out.splitlines() if line.strip()]
    assert len(rows) == 1, out
    return int(rows[0][1]), int(rows[0][2])


def top_series(samples, name, port):
    return {dict(ls).get("owner"): v for (n, ls), v in samples.items()
            if n == name and dict(ls).get("port") == str(port)}


class ListenTop(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.listener = socket.socket()
        cls.listener.bind(("127.0.0.1", 0))
        cls.listener.listen(1)  # never accepted: the queue holds backlog + 1, then overflows
        cls.port = cls.listener.getsockname()[1]
        cls.clients = []
        for _ in range(CLIENTS):
            c = socket.socket()
            c.setblocking(False)
            c.connect_ex(("127.0.0.1", cls.port))  # past the queue: SYNs dropped, retried
            cls.clients.append(c)
        deadline = time.time() + 5
        while ss_listener(cls.port)[0] < 2 and time.time() < deadline:
            time.sleep(0.05)
        cls.queue = ss_listener(cls.port)
        assert cls.queue == (2, 1), cls.queue

    @classmethod
    def tearDownClass(cls):
        for c in cls.clients:
            c.close()
        cls.listener.close()

    def check(self, args, with_max):
        with Loadwatch(["--sample.interval=200ms"] + args) as lw:
            samples = lw.wait_for(
                lambda s: top_series(s, "loadwatch_tcp_listen_top_queue_length", self.port),
                what="top listener on port %d" % self.port)
            text = lw.metrics_text()
            ok, out = promtool_check(text)
            self.assertTrue(ok, out)
            samples = lw.metrics()
            length = top_series(samples, "loadwatch_tcp_listen_top_queue_length", self.port)
            limit = top_series(samples, "loadwatch_tcp_listen_top_queue_max", self.port)
            recv_q, send_q = ss_listener(self.port)
            self.assertEqual(length, {"python3": float(recv_q)})
            if with_max:
                self.assertEqual(limit, {"python3": float(send_q)})
            else:
                self.assertEqual(limit, {})
                self.assertNotIn("loadwatch_tcp_listen_top_queue_max", text)
            # Not watched: the per-port series do not cover it.
            self.assertFalse(re.search(r'loadwatch_tcp_port_connections\{[^}]*port="%d"'
                                       % self.port, text))
            # Bounded: at most 5 listeners, distinct ports, every queue non-empty.
            tops = [(dict(ls)["port"], v) for (n, ls), v in samples.items()
                    if n == "loadwatch_tcp_listen_top_queue_length"]
            self.assertLessEqual(len(tops), 5)
            self.assertEqual(len({p for p, _ in tops}), len(tops))
            self.assertTrue(all(v > 0 for _, v in tops), tops)

    def test_netlink(self):
        self.check([], with_max=True)

    def test_procfs(self):
        self.check(["--tcp.force-procfs"], with_max=False)


if __name__ == "__main__":
    lwtest.main()
