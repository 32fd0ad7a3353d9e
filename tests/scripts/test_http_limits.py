"""HTTP limits of the real binary: idle and half-sent connections do not starve a scrape, read
timeouts, header and body limits, and no file serving or directory redirects (CVE-2025-55763).
(The concurrent-request limit is tested on the server itself, tests/integration/
test_http_server.cpp; floods and bodies in test_hardening_http.py.) Loopback only; every loop
bounded."""
import os
import shutil
import socket
import statistics
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from lwtest import Loadwatch, http_get  # noqa: E402
import lwtest  # noqa: E402


def complete(data, head_only):
    """True once `data` holds a whole response (headers, then Content-Length bytes)."""
    head, sep, body = data.partition(b"\r\n\r\n")
    if not sep:
        return False
    if head_only:
        return True
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return len(body) >= int(value)
    return False


def raw(port, request, timeout=5):
    """Sends bytes, reads one response (or until the server closes);
    -> (status line, response bytes)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    try:
        s.sendall(request)
        data = b""
        while not complete(data, request.startswith(b"HEAD ")):
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    finally:
        s.close()
    return data.split(b"\r\n", 1)[0].decode(errors="replace"), data


def hold(port, count, payload=b""):
    """Opens `count` connections without waiting for the server to accept them (non-blocking
    connect, as a flood would) and sends `payload` on each once connected."""
    socks = []
    for _ in range(count):
        s = socket.socket()
        s.setblocking(False)
        s.connect_ex(("127.0.0.1", port))
        socks.append(s)
    if payload:
        deadline = time.time() + 5
        pending = list(socks)
        while pending and time.time() < deadline:
            still = []
            for s in pending:
                try:
                    s.send(payload)
                except (BlockingIOError, OSError):
                    still.append(s)
            pending = still
            if pending:
                time.sleep(0.01)
    return socks


def scrape_time(lw):
    t = time.perf_counter()
    status, _, body = http_get(lw.url + "/metrics", timeout=30)
    return status, time.perf_counter() - t, body


class IdleConnections(unittest.TestCase):
    def check_scrape_with(self, payload, what):
        with Loadwatch(["--sample.interval=500ms"]) as lw:
            status, baseline, _ = scrape_time(lw)
            self.assertEqual(status, 200)
            socks = hold(lw.port, 300, payload)
            try:
                time.sleep(0.3)  # let the server accept them all
                times = []
                for _ in range(3):
                    status, dt, body = scrape_time(lw)
                    self.assertEqual(status, 200)
                    self.assertIn(b"loadwatch_build_info", body)
                    times.append(dt)
                print("%s: 300 connections held; scrape %.1f ms (before: %.1f ms), worst %.1f ms"
                      % (what, statistics.median(times) * 1000, baseline * 1000, max(times) * 1000))
                self.assertLess(max(times), 3.0)
            finally:
                for s in socks:
                    s.close()

    def test_300_silent_connections(self):
        self.check_scrape_with(b"", "connect, send nothing")

    def test_300_half_sent_headers(self):
        self.check_scrape_with(b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ",
                               "half a header")

    def test_silent_and_trickling_connections_are_dropped(self):
        with Loadwatch() as lw:
            silent = socket.create_connection(("127.0.0.1", lw.port), timeout=15)
            trickle = socket.create_connection(("127.0.0.1", lw.port), timeout=15)
            t = time.time()
            trickle.sendall(b"GET /metrics HTTP/1.1\r\n")
            closed = {}
            while len(closed) < 2 and time.time() - t < 14:
                for name, s in (("silent", silent), ("trickle", trickle)):
                    if name in closed:
                        continue
                    s.settimeout(0.5)
                    try:
                        if s.recv(1) == b"":
                            closed[name] = time.time() - t
                    except socket.timeout:
                        if name == "trickle":
                            try:  # one header byte every half second: never finishes
                                s.sendall(b"X")
                            except OSError:
                                closed[name] = time.time() - t
                    except OSError:
                        closed[name] = time.time() - t
            silent.close()
            trickle.close()
            print("closed after (s):", {k: round(v, 1) for k, v in closed.items()})
            self.assertIn("silent", closed)
            self.assertIn("trickle", closed)
            self.assertLess(closed["silent"], 8)    # request_timeout_ms 5000
            self.assertLess(closed["trickle"], 8)   # the whole header, not each byte


class RequestLimits(unittest.TestCase):
    def test_header_and_body_limits(self):
        with Loadwatch() as lw:
            line, _ = raw(lw.port, b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 17000 +
                          b"\r\nConnection: close\r\n\r\n")
            self.assertIn(" 400 ", line)
            line, _ = raw(lw.port, b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Ok: " + b"a" * 8000 +
                          b"\r\nConnection: close\r\n\r\n")
            self.assertIn(" 200 ", line)
            line, data = raw(lw.port, b"POST /metrics HTTP/1.1\r\nHost: x\r\n"
                                      b"Content-Length: 999999999\r\nConnection: close\r\n\r\n")
            self.assertIn(" 413 ", line)
            self.assertIn(b"Connection: close", data)
            self.assertEqual(http_get(lw.url + "/-/healthy")[0], 200)


class NoFiles(unittest.TestCase):
    def test_directories_and_files_are_never_served(self):
        # Run in a directory holding a real subdirectory and file: with a document root,
        # A server with a document root would answer "GET /static" with a 301 to "/static/"
        # (civetweb 1.14-1.16 from the code path of CVE-2025-55763) and serve "/secret.txt".
        cwd = tempfile.mkdtemp(prefix="lw-nofiles-")
        os.mkdir(os.path.join(cwd, "static"))
        with open(os.path.join(cwd, "secret.txt"), "w") as f:
            f.write("secret\n")
        old = os.getcwd()
        os.chdir(cwd)
        try:
            with Loadwatch() as lw:
                paths = [b"/static", b"/static/", b"/secret.txt", b"/static" + b"/" * 3000,
                         b"/" * 3000 + b"static", b"//static//", b"/static?" + b"a" * 2000,
                         b"/static/%2e%2e/secret.txt", b"/../../../etc/passwd", b"/etc",
                         b"/tmp", b"/proc/self/environ", b"/static/.", b"/%2fstatic"]
                for path in paths:
                    for method in (b"GET", b"HEAD"):
                        line, data = raw(lw.port, method + b" " + path +
                                         b" HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                        self.assertIn(" 404 ", line, "%s %s" % (method, path[:40]))
                        self.assertNotIn(b"Location:", data)
                        self.assertNotIn(b"secret", data.split(b"\r\n\r\n", 1)[-1])
                # Not a path at all: closed without a response, never a crash.
                for target in (b"*", b"http://127.0.0.1/static", b"static"):
                    line, _ = raw(lw.port, b"GET " + target + b" HTTP/1.1\r\nHost: x\r\n\r\n")
                    self.assertNotIn(" 301 ", line)
                    self.assertNotIn(" 200 ", line)
                self.assertEqual(http_get(lw.url + "/-/healthy")[0], 200)
                self.assertIsNone(lw.proc.poll())
        finally:
            os.chdir(old)
            shutil.rmtree(cwd)


if __name__ == "__main__":
    lwtest.main(verbosity=2)
