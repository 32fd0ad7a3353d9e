"""The landing page `/` and /api/v1/sources list each pull source: name, kind, up, the
reason and message of its last failure, its last success. A real up source (another
loadwatch's /metrics as a prometheus source) and a down one (a closed loopback port); the
up one is then stopped and must show down with its last success kept. Every value on the
page is HTML-escaped (a source name full of markup)."""
import html
import json
import os
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from lwtest import Loadwatch, free_port, promtool_check  # noqa: E402
import lwtest  # noqa: E402

PEER = "peer<b>&\"x\"'"


def utc(t):
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


class LandingSources(unittest.TestCase):
    def sources(self, lw):
        status, headers, body = lw.get("/api/v1/sources")
        self.assertEqual(status, 200)
        self.assertEqual(headers.get("Content-Type"), "application/json")
        doc = json.loads(body)
        self.assertEqual(doc["status"], "success")
        return {s["name"]: s for s in doc["data"]}

    def landing(self, lw):
        status, _, body = lw.get("/")
        self.assertEqual(status, 200)
        return body.decode()

    def row(self, page, name):
        rows = [r for r in page.split("<tr>") if r.startswith("<td>%s</td>" % name)]
        self.assertEqual(len(rows), 1, page)
        return rows[0]

    def wait(self, lw, pred, what, timeout=15):
        deadline = time.time() + timeout
        while time.time() < deadline:
            got = self.sources(lw)
            if pred(got):
                return got
            time.sleep(0.2)
        self.fail("timed out waiting for %s: %s" % (what, self.sources(lw)))

    def test_up_and_down_sources(self):
        closed = free_port()  # nothing listens there
        with tempfile.NamedTemporaryFile("w", suffix=".yml") as cfg:
            peer = Loadwatch(["--sample.interval=200ms"])
            with peer:
                cfg.write("sources:\n"
                          "  - {name: %s, kind: prometheus, url: '%s/metrics', interval: 500ms}\n"
                          "  - {name: closed, kind: prometheus, url: 'http://127.0.0.1:%d/metrics',"
                          " interval: 500ms}\n" % (json.dumps(PEER), peer.url, closed))
                cfg.flush()
                with Loadwatch(["--config.file=" + cfg.name, "--sample.interval=200ms"]) as lw:
                    got = self.wait(lw, lambda s: s[PEER]["up"] and s["closed"]["scrapes"] > 0,
                                    "peer up, closed scraped")
                    up, down = got[PEER], got["closed"]
                    self.assertEqual(up["kind"], "prometheus")
                    self.assertEqual(up["last_error_reason"], "")
                    self.assertAlmostEqual(up["last_success"], time.time(), delta=30)
                    self.assertFalse(down["up"])
                    self.assertEqual(down["last_error_reason"], "connect")
                    self.assertTrue(down["last_error"])
                    self.assertIsNone(down["last_success"])

                    page = self.landing(lw)
                    self.assertNotIn("<b>", page)
                    escaped = html.escape(PEER, quote=True).replace("&#x27;", "&#39;")
                    r = self.row(page, escaped)
                    self.assertIn('class="up">up<', r)
                    self.assertIn("<td>prometheus</td>", r)
                    self.assertIn("<td>none</td>", r)
                    self.assertIn(utc(self.sources(lw)[PEER]["last_success"])[:13], r)
                    r = self.row(page, "closed")
                    self.assertIn('class="down">down<', r)
                    self.assertIn("<code>connect</code>", r)
                    self.assertIn("<td>never</td>", r)
                    self.assertIn('href="/api/v1/sources"', page)
                    for text in (lw.metrics_text(), peer.metrics_text()):
                        ok, out = promtool_check(text)
                        self.assertTrue(ok, out)

                    # The peer stops: down, why, and when it last answered.
                    last = got[PEER]["last_success"]
                    peer.stop()
                    got = self.wait(lw, lambda s: not s[PEER]["up"], "peer down")
                    self.assertIn(got[PEER]["last_error_reason"], ("connect", "timeout"))
                    self.assertGreaterEqual(got[PEER]["last_success"], last)
                    r = self.row(self.landing(lw), escaped)
                    self.assertIn('class="down">down<', r)
                    self.assertIn("<code>%s</code>" % got[PEER]["last_error_reason"], r)
                    self.assertIn(utc(got[PEER]["last_success"]), r)

    def test_no_sources(self):
        with Loadwatch(["--sample.interval=200ms"]) as lw:
            self.assertEqual(self.sources(lw), {})
            self.assertIn("no sources configured", self.landing(lw))


if __name__ == "__main__":
    lwtest.main()
