"""Push endpoints wired into the real loadwatch binary: Graphite on --graphite.listen-address,
InfluxDB line protocol on the web port (/write, /api/v2/write), and the collector switches."""
import os
import socket
import subprocess
import sys
import unittest
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from lwtest import BINARY, Loadwatch, free_port, promtool_check  # noqa: E402
import lwtest  # noqa: E402


def post(url, body, headers=None, method="POST"):
    req = urllib.request.Request(url, data=body.encode() if body is not None else None,
                                 headers=headers or {}, method=method)
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


class PushEndpoints(unittest.TestCase):
    def test_graphite_and_influx_through_the_daemon(self):
        gport = free_port()
        with Loadwatch(["--graphite.listen-address=127.0.0.1:%d" % gport,
                        "--sample.interval=100ms"]) as lw:
            with socket.create_connection(("127.0.0.1", gport), timeout=5) as s:
                s.sendall(b"shop.all.a.count 7 1700000000\nshop.all.ko.count 2 1700000000\n"
                          b"shop.test.startedT 3 1700000000\nshop.test.endedT 1 1700000000\n")
            status, body = post(lw.url + "/write?db=perf",
                                "jmeter,application=,transaction=all,statut=all count=11,"
                                "countError=1,pct99.0=250.0 1700000000000000000\n")
            self.assertEqual((status, body), (204, ""))
            status, body = post(lw.url + "/api/v2/write?org=o&bucket=v2",
                                "jmeter,transaction=all,statut=all count=2\n",
                                {"Authorization": "Token t"})
            self.assertEqual(status, 204)
            status, body = post(lw.url + "/write?db=perf",
                                "jmeter,transaction=all,statut=all count=1\nbroken line\n")
            self.assertEqual(status, 400)
            self.assertIn("line 2", body)
            self.assertEqual(post(lw.url + "/write?db=perf", None, method="GET")[0], 405)

            def ready(m):
                return (lw.value("loadwatch_generator_requests_total", m, source="shop") == 7 and
                        lw.value("loadwatch_generator_requests_total", m, source="perf") == 12)
            m = lw.wait_for(ready, timeout=10, what="pushed totals")
            self.assertEqual(lw.value("loadwatch_generator_failures_total", m, source="shop"), 2)
            self.assertEqual(lw.value("loadwatch_generator_users", m, source="shop"), 2)
            self.assertEqual(lw.value("loadwatch_generator_failures_total", m, source="perf"), 1)
            self.assertEqual(lw.value("loadwatch_generator_latency_seconds", m, source="perf",
                                      quantile="0.99"), 0.25)
            self.assertEqual(lw.value("loadwatch_generator_requests_total", m, source="v2"), 2)
            self.assertEqual(lw.value("loadwatch_push_rejected_lines_total", m,
                                      protocol="influx", reason="parse"), 1)
            self.assertEqual(lw.value("loadwatch_collector_success", m, collector="graphite"), 1)
            self.assertEqual(lw.value("loadwatch_collector_success", m, collector="influx"), 1)
            # Latency is a summary (as for Locust): count = requests, quantiles as sent.
            self.assertEqual(lw.value("loadwatch_generator_latency_seconds_count", m,
                                      source="perf"), 12)
            ok, out = promtool_check(lw.metrics_text())
            self.assertTrue(ok, "promtool check metrics:\n" + out)

    def test_switches(self):
        with Loadwatch(["--no-collector.influx"]) as lw:
            self.assertEqual(post(lw.url + "/write?db=x", "m v=1")[0], 404)
            m = lw.metrics()
            # Without --graphite.listen-address the graphite collector listens nowhere and
            # exports nothing.
            self.assertFalse(any(n.startswith("loadwatch_push_") for (n, _) in m))

    def test_busy_graphite_port_fails_start_up(self):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            s.listen(1)
            port = s.getsockname()[1]
            p = subprocess.run([BINARY, "--web.listen-address=127.0.0.1:%d" % free_port(),
                                "--graphite.listen-address=127.0.0.1:%d" % port],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               timeout=15)
            self.assertNotEqual(p.returncode, 0)
            self.assertIn("cannot listen for graphite on 127.0.0.1:%d" % port, p.stdout)


if __name__ == "__main__":
    lwtest.main()
