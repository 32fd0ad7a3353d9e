"""Real wrk (Debian wrk 4.1) with scripts/wrk/loadwatch.lua against a local HTTP server: the
textfile appears atomically, its totals equal what wrk printed, and the real loadwatch binary
exports it through --collector.textfile.directory. Two 1-second wrk runs."""
import http.server
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from lwtest import SOURCE_DIR, Loadwatch, promtool_check  # noqa: E402
import lwtest  # noqa: E402

SCRIPT = os.path.join(SOURCE_DIR, "scripts", "wrk", "loadwatch.lua")


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self):
        status, body = (200, b"hello\n") if self.path in ("/", "/announce") else (404, b"no\n")
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        # "/" closes, when asked to, without saying so in the response (http.server's way);
        # "/announce" answers "Connection: close" (Mountebank's and Node's way).
        if self.path == "/announce" and self.headers.get("Connection", "").lower() == "close":
            self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


UNITS = {"us": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0,
         "B": 1, "KB": 1024, "MB": 1024**2, "GB": 1024**3}


def parse_wrk_output(text):
    """wrk's printed summary (run with --latency) -> requests, bytes read, latency percentiles
    (seconds), status errors, socket errors by kind."""
    m = re.search(r"^\s*(\d+) requests in [^,]+, ([\d.]+)([KMG]?B) read", text, re.M)
    assert m, text
    out = {"requests": int(m.group(1)), "bytes": float(m.group(2)) * UNITS[m.group(3)],
           "status": 0, "connect": 0, "read": 0, "write": 0, "timeout": 0}
    for pct, value, unit in re.findall(r"^\s+(50|75|90|99)%\s+([\d.]+)(us|ms|s|m|h)$", text,
                                       re.M):
        out["p" + pct] = float(value) * UNITS[unit]
    assert "p50" in out and "p99" in out, text
    m = re.search(r"Non-2xx or 3xx responses: (\d+)", text)
    if m:
        out["status"] = int(m.group(1))
    m = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", text)
    if m:
        out.update(connect=int(m.group(1)), read=int(m.group(2)), write=int(m.group(3)),
                   timeout=int(m.group(4)))
    return out


def read_prom(path):
    values = {}
    with open(path) as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            series, value = line.rsplit(" ", 1)
            values[series] = float(value)
    return values


class WrkTextfile(unittest.TestCase):
    def setUp(self):
        self.assertTrue(shutil.which("wrk"), "wrk missing: scripts/install-deps test")
        self.dir = tempfile.mkdtemp()
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def tearDown(self):
        self.server.shutdown()
        self.server.server_close()
        shutil.rmtree(self.dir)

    def wrk(self, path, run, *extra):
        env = dict(os.environ, LOADWATCH_TEXTFILE_DIR=self.dir, LOADWATCH_WRK_RUN=run)
        url = "http://127.0.0.1:%d%s" % (self.server.server_address[1], path)
        p = subprocess.run(["wrk", "-t1", "-c2", "-d1s", "--latency", *extra, "-s", SCRIPT, url],
                           env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("loadwatch.lua: wrote", p.stderr)
        return parse_wrk_output(p.stdout)

    def check_file(self, run, printed):
        path = os.path.join(self.dir, "wrk_%s.prom" % run)
        self.assertTrue(os.path.exists(path))
        # Atomic write: no temporary file left behind.
        self.assertEqual(sorted(f for f in os.listdir(self.dir) if f.startswith(".")), [])
        with open(path) as f:
            ok, out = promtool_check(f.read())
        self.assertTrue(ok, out)
        values = read_prom(path)
        self.assertEqual(values['loadwatch_wrk_requests_total{run="%s"}' % run],
                         printed["requests"])
        for kind in ("connect", "read", "write", "status", "timeout"):
            self.assertEqual(values['loadwatch_wrk_errors_total{run="%s",kind="%s"}' % (run, kind)],
                             printed[kind], kind)
        # The same figures wrk printed, within its print rounding (2 decimals of its unit).
        for pct, quantile in (("p50", "0.5"), ("p99", "0.99")):
            exported = values['loadwatch_wrk_latency_seconds{run="%s",quantile="%s"}'
                              % (run, quantile)]
            self.assertAlmostEqual(exported, printed[pct], delta=0.01 * printed[pct] + 1e-5,
                                   msg=pct)
        q999 = values['loadwatch_wrk_latency_seconds{run="%s",quantile="0.999"}' % run]
        self.assertTrue(printed["p99"] * 0.99 <= q999 < 10, q999)
        self.assertAlmostEqual(values['loadwatch_wrk_read_bytes_total{run="%s"}' % run],
                               printed["bytes"], delta=0.01 * printed["bytes"])
        self.assertGreater(values['loadwatch_wrk_duration_seconds{run="%s"}' % run], 0.9)
        return values

    def test_summary_file_and_export(self):
        ok_run = self.wrk("/", "ok")
        self.assertGreater(ok_run["requests"], 0)
        self.assertEqual(ok_run["status"], 0)
        self.check_file("ok", ok_run)
        bad_run = self.wrk("/missing", "missing")
        self.assertEqual(bad_run["status"], bad_run["requests"])  # every response a 404
        self.check_file("missing", bad_run)

        with Loadwatch(["--collector.textfile.directory=" + self.dir]) as lw:
            s = lw.metrics()
            self.assertEqual(lw.value("loadwatch_wrk_requests_total", s, run="ok"),
                             ok_run["requests"])
            self.assertEqual(lw.value("loadwatch_wrk_errors_total", s, run="missing",
                                      kind="status"), bad_run["status"])
            self.assertEqual(lw.value("loadwatch_textfile_scrape_error", s), 0)
            self.assertGreater(lw.value("loadwatch_textfile_mtime_seconds", s,
                                        file="wrk_ok.prom"), 1.6e9)
            # A new run of the same name replaces the file; the next sample shows it (this run
            # only gets 404s, so its status errors cannot match the first run's zero).
            again = self.wrk("/missing", "ok")
            self.assertGreater(again["status"], 0)
            lw.wait_for(lambda m: lw.value("loadwatch_wrk_errors_total", m, run="ok",
                                           kind="status") == again["status"] and
                        lw.value("loadwatch_wrk_requests_total", m, run="ok") ==
                        again["requests"], timeout=10, what="the rewritten wrk_ok.prom")

    def test_connection_close_makes_every_request_a_read_error(self):
        # wrk without keep-alive: the server closes after each complete response. A server
        # that does not answer "Connection: close" makes wrk count each close as a socket
        # "read" error (docs/soak.md); one that answers it does not.
        run = self.wrk("/", "close", "-H", "Connection: close")
        self.assertGreater(run["requests"], 0)
        self.assertEqual(run["status"], 0)
        # One per response, but for the last response of each of the 2 connections when the
        # run ended before wrk read the close.
        self.assertTrue(run["requests"] - 2 <= run["read"] <= run["requests"], run)
        self.check_file("close", run)  # exported as printed
        announced = self.wrk("/announce", "announced", "-H", "Connection: close")
        self.assertGreater(announced["requests"], 0)
        self.assertEqual(announced["read"], 0)
        self.check_file("announced", announced)


if __name__ == "__main__":
    lwtest.main()
