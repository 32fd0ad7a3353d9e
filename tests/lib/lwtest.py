"""Helpers for tests that drive the real loadwatch binary (stdlib only).

    from lwtest import Loadwatch, free_port, parse_metrics
    with Loadwatch(["--target=self=comm:loadwatch"]) as lw:
        samples = lw.metrics()          # {(name, frozenset(labels)): value}
        lw.value("loadwatch_target_up", target="self")
"""
import base64
import ctypes
import errno
import http.client
import http.server
import json
import os
import random
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.error
import urllib.parse
import urllib.request

# ctest counts a test that exits with this code as skipped (SKIP_RETURN_CODE, tests/CMakeLists.txt).
SKIP_EXIT = 77

BINARY = os.environ.get("LOADWATCH_BINARY", "build/loadwatch")
SOURCE_DIR = os.environ.get("LOADWATCH_SOURCE_DIR", os.getcwd())

_SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+(\S+)(\s+\S+)?$')
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def free_port():
    # Below the ephemeral range (32768-60999): a port the kernel hands out is soon some other
    # test's client port, and a peer that binds it a moment later gets EADDRINUSE.
    for _ in range(200):
        port = random.randint(20000, 32000)
        families = [(socket.AF_INET, "127.0.0.1")]
        if socket.has_ipv6:
            families.append((socket.AF_INET6, "::"))  # peers such as Mountebank bind every address
        try:
            for family, host in families:
                with socket.socket(family) as s:
                    s.bind((host, port))
        except OSError as e:
            if e.errno == errno.EADDRINUSE:
                continue
            if family == socket.AF_INET6:
                return port  # no IPv6 here: the IPv4 check stands
            raise
        return port
    raise RuntimeError("no free port below the ephemeral range")


def rss_kib(pid, field="VmRSS"):
    """A size field of /proc/PID/status (VmRSS, VmHWM, ...) in KiB; 0 when it is absent."""
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def eventually(condition, timeout=10, interval=0.05, what="condition"):
    """Polls condition() until it returns a true value, and returns that value. An OSError,
    KeyError, ValueError or AssertionError it raises counts as not yet. After `timeout`
    seconds, fails (AssertionError) naming `what` and the last value or exception. Tests wait
    with this, never with a fixed sleep that hopes the condition holds by then."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            last = condition()
            if last:
                return last
        except (OSError, KeyError, ValueError, AssertionError) as e:
            last = e
        if time.monotonic() >= deadline:
            raise AssertionError("timed out after %g s waiting for %s (last: %r)" % (
                timeout, what, last))
        time.sleep(interval)


def concurrently(n, work, timeout=300):
    """Runs work(i) for i in range(n), in n threads at once; returns their results in order.
    An OSError a call raises is its result. Each thread is waited for at most `timeout` s."""
    out = [None] * n

    def one(i):
        try:
            out[i] = work(i)
        except OSError as e:
            out[i] = e
    threads = [threading.Thread(target=one, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout)
    return out


def sighup(lw, logged, timeout=10):
    """Sends SIGHUP to lw.proc and waits until lw.output() holds `logged` once more than
    before: the reload has been handled, whatever its outcome."""
    before = lw.output().count(logged)
    lw.proc.send_signal(signal.SIGHUP)
    eventually(lambda: lw.output().count(logged) > before, timeout,
               what="%r logged after SIGHUP" % logged)


def serve(answer, content_type=None):
    """Starts a loopback HTTP server in a daemon thread: GET (or POST) PATH is answered with
    answer(PATH), bytes (200) or None (404). Returns the server: its port is
    server.server_address[1], server.shutdown() stops it. Keep-alive (HTTP/1.1), and quiet
    about clients that drop their connections (wrk and Locust at their end)."""
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self):
            body = answer(self.path)
            if body is None:
                self.send_error(404)
                return
            self.send_response(200)
            if content_type:
                self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_POST(self):  # answered as GET, after reading the request body
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            self.do_GET()

        def log_message(self, *args):
            pass

    class Server(http.server.ThreadingHTTPServer):
        daemon_threads = True

        def handle_error(self, request, client_address):
            pass

    server = Server(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def parse_metrics(text):
    """Text format -> {(name, frozenset(label items)): float}."""
    out = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = _SAMPLE.match(line)
        if not m:
            raise ValueError("unparsable sample line: %r" % line)
        labels = frozenset(_LABEL.findall(m.group(3) or ""))
        out[(m.group(1), labels)] = float(m.group(4))
    return out


def http_get(url, headers=None, timeout=5):
    req = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()


def get_from(url, address="127.0.0.1", timeout=60, busy_retries=0):
    """GET `url` from the loopback `address` (each address has its own share of the daemon's
    handlers). A 503 with Retry-After (handlers or answer builders busy) is asked again after
    it, at most `busy_retries` times, as a client should. Returns (status, body, 503s seen)."""
    u = urllib.parse.urlsplit(url)
    busy = 0
    while True:
        conn = http.client.HTTPConnection(u.hostname, u.port, timeout=timeout,
                                          source_address=(address, 0))
        try:
            conn.request("GET", u.path + ("?" + u.query if u.query else ""))
            r = conn.getresponse()
            status, body, wait = r.status, r.read(), r.getheader("Retry-After")
        finally:
            conn.close()
        if status != 503 or not wait or busy >= busy_retries:
            return status, body, busy
        busy += 1
        time.sleep(float(wait))


class Loadwatch:
    """Starts loadwatch on a free loopback port; stops it (by its PID) on exit."""

    def __init__(self, args=(), port=None, env=None, wait_ready=True):
        self.port = port or free_port()
        self.args = [BINARY, "--web.listen-address=127.0.0.1:%d" % self.port] + list(args)
        self.env = env
        self.wait_ready = wait_ready
        self.proc = None
        self.log = tempfile.TemporaryFile()

    @property
    def url(self):
        return "http://127.0.0.1:%d" % self.port

    def __enter__(self):
        self.proc = subprocess.Popen(self.args, stdout=self.log, stderr=subprocess.STDOUT,
                                     env=self.env)
        if self.wait_ready:
            deadline = time.time() + 15
            while time.time() < deadline:
                if self.proc.poll() is not None:
                    raise RuntimeError("loadwatch exited %s:\n%s" % (self.proc.returncode,
                                                                    self.output()))
                try:
                    if http_get(self.url + "/-/ready", timeout=1)[0] == 200:
                        break
                except OSError:
                    pass
                time.sleep(0.05)
            else:
                raise RuntimeError("loadwatch not ready in 15s:\n" + self.output())
        return self

    def __exit__(self, *exc):
        self.stop()
        self.log.close()

    def stop(self, sig=signal.SIGTERM, timeout=5):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode if self.proc else None

    def output(self):
        if self.log.closed:
            return ""
        self.log.seek(0)
        return self.log.read().decode(errors="replace")

    def get(self, path, headers=None):
        return http_get(self.url + path, headers)

    def metrics_text(self):
        status, _, body = self.get("/metrics")
        assert status == 200, status
        return body.decode()

    def metrics(self):
        return parse_metrics(self.metrics_text())

    def value(self, name, samples=None, **labels):
        samples = samples if samples is not None else self.metrics()
        want = set(labels.items())
        found = [v for (n, ls), v in samples.items() if n == name and want <= set(ls)]
        if len(found) != 1:
            raise KeyError("%s%s matched %d series" % (name, labels, len(found)))
        return found[0]

    def wait_for(self, predicate, timeout=10, interval=0.1, what="condition"):
        """Polls /metrics until predicate(samples) is true; returns those samples."""
        def holds():
            samples = self.metrics()
            return samples if predicate(samples) else None
        try:
            return eventually(holds, timeout, interval, what)
        except AssertionError as e:
            raise AssertionError("%s\n%s" % (e, self.output()[-3000:])) from None

    def wait_samples(self, count=1, timeout=15):
        """Waits until the sampler has taken `count` more samples than it had at the call
        (loadwatch_last_sample_timestamp_seconds changed that many times); returns the
        samples of the last. For a test whose point is that something holds over samples."""
        seen = [self.value("loadwatch_last_sample_timestamp_seconds")]

        def advanced(samples):
            now = self.value("loadwatch_last_sample_timestamp_seconds", samples)
            if now != seen[-1]:
                seen.append(now)
            return len(seen) > count
        return self.wait_for(advanced, timeout, 0.02, "%d more samples" % count)


class Child:
    """A peer process; stop() ends it by PID (SIGTERM, then SIGKILL) and reaps it."""

    def __init__(self, args, log_path, stdin_pipe=False, stdout_pipe=False):
        self.log = open(log_path, "wb")
        self.proc = subprocess.Popen(
            args, stdin=subprocess.PIPE if stdin_pipe else subprocess.DEVNULL,
            stdout=subprocess.PIPE if stdout_pipe else self.log, stderr=self.log)

    def stop(self, timeout=10):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        for f in (self.proc.stdin, self.proc.stdout):
            if f:
                f.close()
        self.log.close()


def find_mb():
    """Mountebank's `mb`: $LOADWATCH_MB, or where scripts/install-deps test puts it."""
    for path in (os.environ.get("LOADWATCH_MB", ""),
                 os.path.join(SOURCE_DIR, "build/peers/mountebank/node_modules/.bin/mb")):
        if path and os.access(path, os.X_OK):
            return path
    return None


def post_json(url, doc):
    """POSTs `doc` as JSON; returns the HTTP status."""
    req = urllib.request.Request(url, data=json.dumps(doc).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as r:
        return r.status


def promtool_check(text):
    """Runs `promtool check metrics` on the text; returns (ok, output)."""
    p = subprocess.run(["promtool", "check", "metrics"], input=text.encode(),
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    return p.returncode == 0, p.stdout.decode()


def bcrypt(password, cost):
    """A $2b$ hash through libxcrypt (what htpasswd -B and Go's bcrypt make, give or take $2y$)."""
    crypt = ctypes.CDLL("libcrypt.so.1")
    crypt.crypt_gensalt.restype = ctypes.c_char_p
    crypt.crypt_gensalt.argtypes = [ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p, ctypes.c_int]
    crypt.crypt.restype = ctypes.c_char_p
    crypt.crypt.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
    return crypt.crypt(password.encode(), crypt.crypt_gensalt(b"$2b$", cost, None, 0)).decode()


def basic(user, password):
    """An Authorization header value for HTTP basic auth."""
    return "Basic " + base64.b64encode(("%s:%s" % (user, password)).encode()).decode()


def main(**kwargs):
    """unittest.main() for the script tests: exits 0 when every test ran and passed, 1 on a
    failure, and SKIP_EXIT when any test was skipped, so ctest counts the file as skipped
    instead of passed (the reasons are printed)."""
    result = unittest.main(exit=False, **kwargs).result
    if not result.wasSuccessful():
        sys.exit(1)
    if result.skipped:  # a test, or a whole class (setUpClass), that could not run here
        for test, reason in result.skipped:
            print("SKIPPED: %s: %s" % (test.id(), reason))
        print("%d skipped: exit %d (ctest: skipped)" % (len(result.skipped), SKIP_EXIT))
        sys.exit(SKIP_EXIT)
    sys.exit(0 if result.testsRun else 1)
