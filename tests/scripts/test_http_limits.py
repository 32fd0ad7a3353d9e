"""HTTP limits of the real binary: idle and half-sent connections do not starve a scrape, read
timeouts, header and body limits, no file serving or directory redirects (CVE-2025-55763), the
fair shares (a full connection table closes the biggest holder's oldest waiting connection; one
address past its share of handlers gets 503) and the flags that set them. Clients bind
127.0.0.2-9 as distinct addresses. (The global concurrent-request limit is tested on the server
itself, tests/integration/test_http_server.cpp; floods and bodies in test_hardening_http.py.)
Loopback only; every loop bounded."""
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from lwtest import BINARY, Loadwatch, http_get  # noqa: E402
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


def until_closed(s):
    """Everything the server sends on `s` until it closes it."""
    chunks = []
    try:
        for chunk in iter(lambda: s.recv(65536), b""):
            chunks.append(chunk)
    except ConnectionResetError:
        pass
    return b"".join(chunks)


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
            self.assertEqual(settled_rejections(lw, "header_too_large", 1), 1)
            self.assertEqual(rejected(lw, "body_not_allowed"), 1)
            self.assertEqual(lw.value("loadwatch_http_request_body_max_bytes"), 64 << 20)

    def test_a_framing_error_closes_the_connection(self):
        """RFC 9112 section 6.1: after the 400, the request smuggled behind it never runs."""
        line = b"jmeter,transaction=all,statut=all count=3i\n"
        smuggled = (b"POST /write?db=smuggled HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n"
                    % len(line) + line)
        cases = (
            (b"Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", "bad_framing"),
            (b"Content-Length: 5\r\nContent-Length: 40\r\n\r\n", "bad_framing"),
            (b"Transfer-Encoding: gzip\r\n\r\n", "bad_framing"),
            (b"Bad Header\r\n\r\n", "bad_request"))
        with Loadwatch(["--collector.influx", "--sample.interval=200ms"]) as lw:
            for head, reason in cases:
                s = socket.create_connection(("127.0.0.1", lw.port), timeout=5)
                try:
                    s.sendall(b"POST /write?db=first HTTP/1.1\r\nHost: x\r\n" + head + smuggled)
                    data = until_closed(s)
                finally:
                    s.close()
                self.assertTrue(data.startswith(b"HTTP/1.1 400 "), (head, data[:100]))
                self.assertIn(b"\r\nConnection: close\r\n", data)
                self.assertEqual(data.count(b"HTTP/1.1 "), 1, (head, data))
            self.assertEqual(settled_rejections(lw, "bad_framing", 3), 3)
            self.assertEqual(rejected(lw, "bad_request"), 1)
            text = lw.metrics_text()
            self.assertNotIn('source="smuggled"', text)
            self.assertNotIn('source="first"', text)
            # Alone, the same request is taken: the check above could see it.
            self.assertEqual(raw(lw.port, smuggled)[0], "HTTP/1.1 204 No Content")
            lw.wait_for(lambda m: lw.value("loadwatch_generator_requests_total", m,
                                           source="smuggled") == 3, what="the write taken")


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


def keep_alive(port, source, timeout=5):
    """A connection from `source` that has had one keep-alive request answered: the server has
    accepted it, and it now waits for the next request head."""
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout, source_address=(source, 0))
    status, data = exchange(s, b"GET /-/healthy HTTP/1.1\r\nHost: x\r\n\r\n")
    assert status == 200 and b"Connection: close" not in data, data[:200]
    return s


def exchange(s, request):
    """Sends one request on an open connection, reads its response; -> (status or 0, bytes)."""
    s.sendall(request)
    data = b""
    while not complete(data, False):
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
    parts = data.split(b" ", 2)
    return (int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else 0), data


def closed_by_server(s, within=3.0):
    """True once the server has closed `s` (EOF or reset) within `within` seconds."""
    s.settimeout(0.1)
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            if s.recv(4096) == b"":
                return True
        except socket.timeout:
            continue
        except OSError:
            return True
    return False


def fresh_scrape(port, source):
    """GET /metrics from `source` on a new connection; -> (status, seconds)."""
    t = time.monotonic()
    with socket.create_connection(("127.0.0.1", port), timeout=5,
                                  source_address=(source, 0)) as s:
        status, data = exchange(s, b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    assert b"loadwatch_build_info" in data
    return status, time.monotonic() - t


def rejected(lw, reason):
    return lw.value("loadwatch_http_rejected_requests_total", reason=reason)


def settled_rejections(lw, reason, at_least):
    """The counter of `reason` once a sample shows at least `at_least` (the counters reach
    /metrics with the next sample), checked again one sample later: it has stopped moving."""
    lw.wait_for(lambda m: rejected(lw, reason) >= at_least, timeout=10,
                what="%s >= %d" % (reason, at_least))
    lw.wait_samples(1)
    return rejected(lw, reason)


class FairShares(unittest.TestCase):
    def test_a_full_table_closes_the_biggest_holders_oldest_waiting_connection(self):
        with Loadwatch(["--web.max-connections=8", "--sample.interval=200ms"]) as lw:
            self.assertEqual(rejected(lw, "connections_full"), 0)
            self.assertEqual(lw.value("loadwatch_http_max_connections"), 8)
            # 6 from 127.0.0.2, 2 from 127.0.0.3, oldest first: the table is full.
            big = [keep_alive(lw.port, "127.0.0.2") for _ in range(6)]
            small = [keep_alive(lw.port, "127.0.0.3") for _ in range(2)]
            try:
                status, seconds = fresh_scrape(lw.port, "127.0.0.4")
                self.assertEqual(status, 200)
                self.assertLess(seconds, 1.0)
                # Room was made by closing 127.0.0.2's oldest: every other one still serves.
                self.assertTrue(closed_by_server(big[0]), "the oldest of the biggest holder")
                for s in big[1:] + small:
                    self.assertEqual(exchange(s, b"GET /-/healthy HTTP/1.1\r\nHost: x\r\n\r\n")[0],
                                     200)
            finally:
                for s in big + small:
                    s.close()
            print("table of 8 full (6 + 2): a scrape from a third address in %.1f ms; the "
                  "biggest holder's oldest connection closed" % (seconds * 1000))
            self.assertEqual(settled_rejections(lw, "connections_full", 1), 1)
            self.assertEqual(rejected(lw, "address_connections"), 0)

    def test_lowered_per_address_connection_cap_crowds_only_that_address(self):
        with Loadwatch(["--web.max-connections-per-address=3", "--sample.interval=200ms"]) as lw:
            mine = [keep_alive(lw.port, "127.0.0.2") for _ in range(3)]
            other = keep_alive(lw.port, "127.0.0.3")
            try:
                mine.append(keep_alive(lw.port, "127.0.0.2"))  # the fourth: its oldest goes
                self.assertTrue(closed_by_server(mine[0]))
                for s in mine[1:] + [other]:
                    self.assertEqual(exchange(s, b"GET /-/healthy HTTP/1.1\r\nHost: x\r\n\r\n")[0],
                                     200)
            finally:
                for s in mine + [other]:
                    s.close()
            self.assertEqual(settled_rejections(lw, "address_connections", 1), 1)
            self.assertEqual(rejected(lw, "connections_full"), 0)

    def burst_past_the_handler_share(self, args, share):
        """POSTs from 127.0.0.2 whose bodies end at the same moment, each a few MiB of Influx
        lines (a handler of tens of ms, under the listener's lock), while 127.0.0.3 scrapes:
        -> (statuses, 503 responses, the scrape's seconds). Up to three bursts, until one of
        them is past the share (on a very busy machine a burst may not overlap)."""
        lines = b"".join(b"jmeter,application=fair,transaction=t%d,statut=all count=1i,avg=2.5 "
                         b"%d\n" % (i % 50, 1700000000000000000 + i) for i in range(40000))
        head = (b"POST /write?db=fair HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n"
                % len(lines))
        with Loadwatch(["--collector.influx", "--sample.interval=200ms"] + args) as lw:
            statuses, refused, scrapes = [], [], []
            for _ in range(3):
                conns = [socket.create_connection(("127.0.0.1", lw.port), timeout=10,
                                                  source_address=("127.0.0.2", 0))
                         for _ in range(share + 4)]
                try:
                    for s in conns:
                        s.sendall(head + lines[:-1])
                    for s in conns:
                        s.sendall(lines[-1:])
                    scrapes.append(fresh_scrape(lw.port, "127.0.0.3"))
                    for s in conns:
                        status, data = exchange(s, b"")
                        statuses.append(status)
                        if status == 503:
                            refused.append(data)
                finally:
                    for s in conns:
                        s.close()
                if refused:
                    break
            print("%s: %d POSTs from one address in %d burst(s): %s; a scrape from another "
                  "address meanwhile: %s" % (" ".join(args), len(statuses), len(scrapes),
                                            {k: statuses.count(k) for k in set(statuses)},
                                            ["%d in %.1f ms" % (st, t * 1000) for st, t in scrapes]))
            self.assertTrue(refused, "no burst went past the share of %d" % share)
            self.assertEqual(set(statuses), {204, 503})
            for data in refused:
                self.assertIn(b"too many concurrent requests from 127.0.0.2\n", data)
                self.assertIn(b"\r\nRetry-After: 1\r\n", data)
            for status, seconds in scrapes:
                self.assertEqual(status, 200)
                self.assertLess(seconds, 1.0)
            self.assertEqual(settled_rejections(lw, "address_requests", len(refused)),
                             len(refused))
            self.assertEqual(rejected(lw, "too_many_requests"), 0)

    def test_one_address_gets_a_quarter_of_the_handlers(self):
        self.burst_past_the_handler_share(["--web.max-requests=8"], 2)

    def test_lowered_per_address_handler_share(self):
        self.burst_past_the_handler_share(["--web.max-requests-per-address=1"], 1)


class ConnectionEnds(unittest.TestCase):
    def test_a_connection_ends_after_its_requests(self):
        with Loadwatch(["--web.max-requests-per-connection=3"]) as lw:
            s = socket.create_connection(("127.0.0.1", lw.port), timeout=5)
            try:
                for i in range(1, 4):
                    status, data = exchange(s, b"GET /-/healthy HTTP/1.1\r\nHost: x\r\n\r\n")
                    self.assertEqual(status, 200)
                    self.assertEqual(b"\r\nConnection: close\r\n" in data, i == 3, "request %d" % i)
                self.assertTrue(closed_by_server(s))
            finally:
                s.close()

    def test_a_connection_ends_at_its_age(self):
        with Loadwatch(["--web.max-connection-age=1s"]) as lw:
            s = socket.create_connection(("127.0.0.1", lw.port), timeout=5)
            t0 = time.monotonic()
            try:
                status, data = exchange(s, b"GET /-/healthy HTTP/1.1\r\nHost: x\r\n\r\n")
                self.assertNotIn(b"Connection: close", data)
                ended = None
                while ended is None and time.monotonic() - t0 < 5:  # a request each 0.1 s
                    time.sleep(0.1)
                    status, data = exchange(s, b"GET /-/healthy HTTP/1.1\r\nHost: x\r\n\r\n")
                    self.assertEqual(status, 200)
                    if b"\r\nConnection: close\r\n" in data:
                        ended = time.monotonic() - t0
                print("a connection of --web.max-connection-age=1s ended after %.2f s" % ended)
                self.assertGreaterEqual(ended, 1.0)
                self.assertLess(ended, 3.0)
                self.assertTrue(closed_by_server(s))
            finally:
                s.close()

    def test_bad_values_are_refused_at_start(self):
        for args, message in (
                (["--web.max-requests-per-connection=0"], "--web.max-requests-per-connection"),
                (["--web.max-connections-per-address=0"], "--web.max-connections-per-address"),
                (["--web.max-requests=8", "--web.max-requests-per-address=9"],
                 "--web.max-requests-per-address=9 is more than --web.max-requests=8"),
                (["--web.max-connections=100", "--web.max-connections-per-address=101"],
                 "--web.max-connections-per-address=101 is more than --web.max-connections=100"),
                (["--web.max-connection-age=10ms"], "--web.max-connection-age: must be at least"),
                (["--web.max-connection-age=soon"], "--web.max-connection-age")):
            p = subprocess.run([BINARY, "--config.check"] + args, capture_output=True, text=True,
                               timeout=30)
            self.assertNotEqual(p.returncode, 0, args)  # 1, or CLI11's code for a range
            self.assertIn(message, p.stdout + p.stderr, args)
        # The default share of 64 connections shrinks with a smaller table.
        p = subprocess.run([BINARY, "--config.check", "--web.max-connections=8"],
                           capture_output=True, text=True, timeout=30)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)


if __name__ == "__main__":
    lwtest.main(verbosity=2)
