"""Helpers for tests that drive the real loadwatch binary (stdlib only).

    from lwtest import Loadwatch, free_port, parse_metrics
    with Loadwatch(["--target=self=comm:loadwatch"]) as lw:
        samples = lw.metrics()          # {(name, frozenset(labels)): value}
        lw.value("loadwatch_target_up", target="self")
"""
import base64
import ctypes
import errno
import http.server
import os
import random
import re
import signal
import socket
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.request

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
        deadline = time.time() + timeout
        last = None
        while time.time() < deadline:
            try:
                samples = self.metrics()
                last = predicate(samples)
                if last:
                    return samples
            except KeyError:
                pass
            time.sleep(interval)
        raise AssertionError("timed out waiting for %s (last: %r)\n%s" % (what, last,
                                                                          self.output()[-3000:]))


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
