"""The byte budget of /metrics: Influx pushes each within every series and size cap (long
transaction names on many series) made the page over 100 MB. The push sources now share
--metrics.push-max-bytes fairly: a family past its source's share is dropped and counted
(loadwatch_dropped_series_total{reason="page_bytes"}), the page stays valid for promtool, and
a small sender beside the flood (Graphite) keeps every series."""
import os
import socket
import sys
import time
import unittest
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from lwtest import Loadwatch, free_port, promtool_check, rss_kib  # noqa: E402

NAME = 2000  # a transaction name just under the 2048-byte cap


def influx_body(db, count):
    """`count` transactions with 2000-byte names: about 2 KB a line, 14 KB on the page."""
    lines = []
    for i in range(count):
        name = ("%s-%05d-" % (db, i)).ljust(NAME, "x")
        lines.append("jmeter,application=budget,transaction=%s,statut=all "
                     "count=5,countError=0,avg=12,max=30,min=3,pct95.0=20,pct99.0=25" % name)
    return ("\n".join(lines) + "\n").encode()


def post(port, db, body):
    req = urllib.request.Request("http://127.0.0.1:%d/write?db=%s" % (port, db), data=body,
                                 method="POST")
    with urllib.request.urlopen(req, timeout=30) as r:
        return r.status


class PageBudget(unittest.TestCase):
    def flood(self, budget_args, budget_bytes):
        gport = free_port()
        with Loadwatch(["--graphite.listen-address=127.0.0.1:%d" % gport,
                        "--sample.interval=500ms"] + budget_args) as lw:
            base = len(lw.metrics_text())
            # A small sender beside the flood.
            with socket.create_connection(("127.0.0.1", gport)) as g:
                g.sendall(b"jmeter.all.a.count 3 %d\n" % int(time.time()))
                lw.wait_for(lambda m: m.get(("loadwatch_generator_requests_total",
                                             frozenset({("source", "jmeter")}))) == 3,
                            what="the Graphite sender's series")
            # Four ~4 MB pushes to four databases: about 7,000 transactions in all.
            for db in ("a", "b", "c", "d"):
                self.assertEqual(post(lw.port, db, influx_body(db, 1800)), 204)
            lw.wait_for(lambda m: any(n == "loadwatch_dropped_series_total" and
                                      ("reason", "page_bytes") in ls and v > 0
                                      for (n, ls), v in m.items()),
                        timeout=30, what="page_bytes drops counted")
            text = lw.metrics_text()
            rss = rss_kib(lw.proc.pid) / 1024
            print("page %.1f MB (%.1f MB without pushes), RSS %.0f MiB" %
                  (len(text) / 1e6, base / 1e6, rss))
            # The budget, an estimate, plus loadwatch's own series.
            self.assertLess(len(text), base + budget_bytes * 1.25)
            ok, out = promtool_check(text)
            self.assertTrue(ok, out[:2000])
            m = lw.metrics()
            self.assertEqual(m.get(("loadwatch_generator_requests_total",
                                    frozenset({("source", "jmeter")}))), 3,
                             "the small sender lost its series")
            dropped = {dict(ls)["collector"]: v for (n, ls), v in m.items()
                       if n == "loadwatch_dropped_series_total" and
                       ("reason", "page_bytes") in ls}
            self.assertEqual(list(dropped), ["influx"], dropped)
            return len(text)

    def test_pushes_share_a_small_budget(self):
        self.flood(["--metrics.push-max-bytes=4194304"], 4 << 20)

    def test_the_default_budget_holds_the_page_near_32_mib(self):
        self.flood([], 32 << 20)


if __name__ == "__main__":
    unittest.main()
