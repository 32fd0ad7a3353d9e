"""The CLI against JSON it did not expect: every reader of outside JSON (the run API's
answers, a Prometheus server's, saved reports) is bounded in size and depth and total over
its input. A 2xx answer of the wrong shape, nested 100,000 deep, or a 64 MiB file of "["
is exit 2 with a message, in bounded time and memory, never a signal."""
import http.server
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import lwtest  # noqa: E402
from lwtest import BINARY, serve  # noqa: E402

DEEP_ARRAY = b"[" * 100000 + b"]" * 100000
DEEP_OBJECT = b'{"a":' * 50000 + b"1" + b"}" * 50000  # ~300 KB


def run_cli(args, timeout=30):
    """Runs the binary; returns (exit code or -signal, stderr, seconds)."""
    t0 = time.monotonic()
    p = subprocess.Popen([BINARY] + args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        _, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        p.communicate()
        raise
    return p.returncode, err.decode(errors="replace"), time.monotonic() - t0


def peak_rss_mib(args, timeout=30):
    """Exit code and the binary's own peak RSS in MiB, from GNU time (%M): wait4 here would
    count this Python process too, whose high-water mark a child keeps across exec."""
    p = subprocess.run(["/usr/bin/time", "-f", "maxrss %M", BINARY] + args,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=timeout)
    last = p.stderr.decode(errors="replace").strip().splitlines()[-1]
    if not last.startswith("maxrss "):
        raise AssertionError("no peak RSS from /usr/bin/time: %r" % last)
    return p.returncode, int(last.split()[1]) / 1024.0


class Answers:
    """A fake server whose every answer is `body` (200)."""

    def __init__(self, body):
        self.body = body

    def __enter__(self):
        self.server = serve(lambda path: self.body, "application/json")
        return "http://127.0.0.1:%d" % self.server.server_address[1]

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()


def busy_server(answer):
    """A loopback server: GET PATH is answered answer(PATH) (200), or 503 with Retry-After: 1
    when that is None, as loadwatch answers a read while its answer builders are busy."""
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self):
            body = answer(self.path)
            self.send_response(200 if body is not None else 503)
            if body is None:
                body = b'{"status":"error","error":"busy; retry later"}'
                self.send_header("Retry-After", "1")
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def setUpModule():
    if not os.access("/usr/bin/time", os.X_OK):
        print("SKIP: /usr/bin/time (Debian package time) measures the peak RSS")
        sys.exit(77)


class RunClient(unittest.TestCase):
    SHAPES = [b"[]", b"5", b"{}", b'"x"', b"null", b'{"data": 5}', b'{"data": []}',
              b'{"data": {"id": 5}}', b'{"data": {"id": "r1", "phases": {}}}',
              b'{"data": {"id": "r1", "phases": [3]}}', b'{"data": {"id": "r1", "start": "x"}}',
              b'{"warnings": 3, "data": {"id": "r1"}}', DEEP_ARRAY, DEEP_OBJECT]

    def test_every_subcommand_exits_2_on_an_unexpected_answer(self):
        for body in self.SHAPES:
            with Answers(body) as url:
                for sub in (["start", "--name", "x"], ["phase", "--users", "3"], ["stop"],
                            ["list"]):
                    if sub == ["list"] and body == b'{"data": []}':
                        continue  # an empty run list
                    code, err, secs = run_cli(["run"] + sub + ["--url", url])
                    what = "%s on %r" % (sub[0], body[:40])
                    self.assertEqual(code, 2, what + ": " + err)
                    self.assertIn("not a loadwatch answer", err, what)
                    self.assertLess(secs, 10, what)

    def test_a_deep_answer_costs_little(self):
        for body in (DEEP_ARRAY, DEEP_OBJECT):
            with Answers(body) as url:
                code, rss = peak_rss_mib(["run", "start", "--name", "x", "--url", url])
                print("run start on a %d-byte nested answer: peak RSS %.0f MiB" % (len(body), rss))
                self.assertEqual(code, 2)
                self.assertLess(rss, 64)

    def test_the_expected_shape_still_works(self):
        run = {"id": "r1", "state": "running", "origin": "api", "start": 1.7e9, "end": None,
               "phases": [{"name": "p1"}]}
        with Answers(json.dumps({"status": "success", "data": run}).encode()) as url:
            code, err, _ = run_cli(["run", "phase", "--users", "3", "--url", url])
            self.assertEqual(code, 0, err)
        with Answers(json.dumps({"status": "success", "data": [run]}).encode()) as url:
            code, err, _ = run_cli(["run", "list", "--url", url])
            self.assertEqual(code, 0, err)

    def test_a_busy_answer_to_a_read_is_asked_again(self):
        # The daemon answers a read 503 with Retry-After: 1 while its answer builders are busy
        # with other readers; the client asks again rather than failing.
        run = {"id": "r1", "state": "running", "origin": "api", "start": 1.7e9, "end": None,
               "phases": []}
        listing = json.dumps({"status": "success", "data": [run]}).encode()
        asked = []

        def answer(path):
            asked.append(path)
            return listing if len(asked) > 2 else None  # None: the server's error answer
        server = busy_server(answer)
        try:
            url = "http://127.0.0.1:%d" % server.server_address[1]
            code, err, secs = run_cli(["run", "list", "--url", url])
        finally:
            server.shutdown()
            server.server_close()
        self.assertEqual(code, 0, err)
        self.assertEqual(len(asked), 3)
        self.assertGreaterEqual(secs, 2)

    def test_exec_does_not_run_the_command_on_an_unexpected_answer(self):
        with tempfile.TemporaryDirectory() as d, Answers(b"[]") as url:
            marker = os.path.join(d, "ran")
            code, err, _ = run_cli(["run", "exec", "--url", url, "--name", "x", "--",
                                    "touch", marker])
            self.assertEqual(code, 2, err)
            self.assertFalse(os.path.exists(marker))


class Report(unittest.TestCase):
    def test_prometheus_answer_nested_50000_deep(self):
        deep_data = b'{"status": "success", "data": ' + DEEP_OBJECT + b"}"
        for body in (deep_data, DEEP_OBJECT, DEEP_ARRAY, b"[]", b'{"status": "success", "data": 5}',
                     b'{"status": "success", "data": {"resultType": "matrix", "result": [5]}}',
                     b'{"status": "success", "data": {"resultType": "matrix", "result": '
                     b'[{"metric": 5, "values": [[1, "1"]]}]}}',
                     b'{"status": 5}'):
            with Answers(body) as url:
                code, err, secs = run_cli(["report", "--prometheus", url, "--run", "r"])
                self.assertEqual(code, 2, "%r: %s" % (body[:40], err))
                self.assertTrue(err.strip(), body[:40])
                self.assertLess(secs, 10)

    def test_loadwatch_answers_of_the_wrong_shape(self):
        # The run list gives summaries: a phase_count, not the phases.
        for body in (DEEP_OBJECT, b"[]", b'{"data": [{"phase_count": "5"}]}',
                     b'{"data": [{"phase_count": 1, "id": 5}]}'):
            with Answers(body) as url:
                code, err, _ = run_cli(["report", "--url", url])
                self.assertEqual(code, 2, "%r: %s" % (body[:40], err))
                self.assertIn("/api/v1/runs", err)


class Files(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="lw-json-inputs-")

    def tearDown(self):
        subprocess.run(["rm", "-rf", self.dir])

    def write(self, name, data):
        path = os.path.join(self.dir, name)
        with open(path, "wb") as f:
            f.write(data)
        return path

    def test_64_mib_of_brackets_is_refused_quickly_in_bounded_memory(self):
        good = self.write("good.csv", b"users,throughput,p95\n1,10,5\n2,20,5\n4,40,6\n")
        report = subprocess.run([BINARY, "capacity", good, "--format", "json"],
                                capture_output=True, check=True, timeout=30).stdout
        good_json = self.write("good.json", report)
        bad = self.write("bad.json", b"[" * (64 << 20))
        for args in (["compare", good, bad], ["compare", bad, good],
                     ["report", "--file", good_json, "--baseline", bad]):
            t0 = time.monotonic()
            code, rss = peak_rss_mib(args)
            secs = time.monotonic() - t0
            print("%s: exit %d, %.1f s, peak RSS %.0f MiB" % (args[0], code, secs, rss))
            self.assertEqual(code, 2, args)
            self.assertLess(secs, 5, args)
            # The 64 MiB text itself, plus little: no tree of it.
            self.assertLess(rss, 200, args)
        for args in (["compare", good, bad], ["report", "--file", good_json, "--baseline", bad]):
            code, err, _ = run_cli(args)
            self.assertIn("nested deeper than", err, args)

    def test_a_deep_report_file_and_timeline(self):
        good = self.write("good.csv", b"users,throughput,p95\n1,10,5\n2,20,5\n4,40,6\n")
        deep = self.write("deep.json", DEEP_OBJECT)
        code, err, _ = run_cli(["compare", good, deep])
        self.assertEqual(code, 2, err)
        code, err, _ = run_cli(["report", "--file", deep])
        self.assertEqual(code, 2, err)
        self.assertIn("nested deeper than", err)


if __name__ == "__main__":
    lwtest.main()
