"""Floods and bad bodies against the real daemon on loopback: a valid scrape gets through a
wrong-password flood and 1,000 idle or slowloris connections; idle Graphite connections do not
lock JMeter out; short or malformed request bodies are 400 and store nothing; a body on a
read-only route is 413; request bodies in flight are capped (503) and memory returns after a
burst. Every loop is bounded in count and time; clients use 127.0.0.2-250 as distinct
addresses."""
import http.client
import os
import resource
import selectors
import socket
import statistics
import sys
import tempfile
import threading
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from lwtest import Loadwatch, basic, bcrypt, free_port, http_get, parse_metrics  # noqa: E402

def status_of(port, request, source="127.0.0.1", shut_wr=False, timeout=10):
    """Sends raw bytes, reads one response; -> (status code or 0, response bytes)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout, source_address=(source, 0))
    try:
        try:
            s.sendall(request)
            if shut_wr:
                s.shutdown(socket.SHUT_WR)
        except OSError:
            pass  # the server may answer and close before the whole request is sent
        data = b""
        while b"\r\n\r\n" not in data or not complete(data):
            try:
                chunk = s.recv(65536)
            except OSError:
                break
            if not chunk:
                break
            data += chunk
    finally:
        s.close()
    parts = data.split(b" ", 2)
    return (int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else 0), data


def complete(data):
    head, _, body = data.partition(b"\r\n\r\n")
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return len(body) >= int(value)
    return True


def proc_status(pid):
    out = {}
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            key, _, value = line.partition(":")
            out[key] = value.strip()
    return out


def rss_kib(pid, field="VmRSS"):
    return int(proc_status(pid)[field].split()[0])


def raise_fd_limit(need):
    """Raises this process's soft RLIMIT_NOFILE (the daemon inherits it); False if the hard
    limit is too low."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = need if hard == resource.RLIM_INFINITY else min(hard, max(soft, need))
    if want < need:
        return False
    resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
    return True


class Holder(threading.Thread):
    """Keeps `count` connections open from 127.0.0.2..241, reopening each one the server drops.
    mode "silent": connect and send nothing; "slowloris": half a header, then one more header
    byte per connection every second."""

    def __init__(self, port, count, mode, seconds):
        super().__init__(daemon=True)
        self.port, self.count, self.mode, self.seconds = port, count, mode, seconds
        self.opened = self.dropped = 0
        self.stop = threading.Event()

    def open(self, sel, i):
        s = socket.socket()
        s.setblocking(False)
        s.bind(("127.0.0.%d" % (2 + i % 240), 0))
        s.connect_ex(("127.0.0.1", self.port))
        sel.register(s, selectors.EVENT_READ, [i, False])
        self.opened += 1

    def run(self):
        sel = selectors.DefaultSelector()
        for i in range(self.count):
            self.open(sel, i)
        end = time.time() + self.seconds
        last = time.time()
        while not self.stop.is_set() and time.time() < end:
            for key, _ in sel.select(0.1):
                try:
                    data = key.fileobj.recv(4096)
                except OSError:
                    data = b""
                if not data:  # dropped by the server: take its place again
                    sel.unregister(key.fileobj)
                    key.fileobj.close()
                    self.dropped += 1
                    self.open(sel, key.data[0])
            if self.mode == "slowloris" and time.time() - last >= 1:
                last = time.time()
                for key in list(sel.get_map().values()):
                    try:
                        if not key.data[1]:
                            key.fileobj.send(b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: ")
                            key.data[1] = True
                        else:
                            key.fileobj.send(b"x")
                    except OSError:
                        pass
        for key in list(sel.get_map().values()):
            key.fileobj.close()


def percentile(values, q):
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


class ScrapesUnderFlood(unittest.TestCase):
    def test_1000_idle_and_slowloris_connections(self):
        if not raise_fd_limit(8192):
            self.fail("hard RLIMIT_NOFILE below 8192: cannot hold 1,000 connections")
        with Loadwatch(["--sample.interval=500ms"]) as lw:
            holders = [Holder(lw.port, 500, "silent", 20), Holder(lw.port, 500, "slowloris", 20)]
            for h in holders:
                h.start()
            try:
                time.sleep(1.5)  # all connected and accepted
                times, statuses, held = [], [], 0
                end = time.time() + 12  # more than two header deadlines: the flood turns over
                while time.time() < end:
                    t = time.perf_counter()
                    status, _, body = http_get(lw.url + "/metrics", timeout=15)
                    times.append(time.perf_counter() - t)
                    statuses.append(status)
                    if status == 200:
                        held = max(held, parse_metrics(body.decode())[
                            ("loadwatch_http_connections", frozenset())])
                    time.sleep(0.1)
            finally:
                for h in holders:
                    h.stop.set()
                for h in holders:
                    h.join(10)
            print("1,000 idle+slowloris connections (%d reopened after being dropped), %d held "
                  "at most: %d scrapes, median %.1f ms, p99 %.1f ms, max %.1f ms"
                  % (sum(h.dropped for h in holders), held, len(times),
                     statistics.median(times) * 1000, percentile(times, 0.99) * 1000,
                     max(times) * 1000))
            self.assertEqual(set(statuses), {200})
            self.assertGreaterEqual(held, 950)  # the flood really held its connections
            self.assertGreater(sum(h.dropped for h in holders), 500)  # header deadline works
            self.assertLess(statistics.median(times), 1.0)
            self.assertLess(max(times), 10.0)

    def test_wrong_password_flood(self):
        d = tempfile.mkdtemp(prefix="lw-hard-")
        web = os.path.join(d, "web.yml")
        with open(web, "w") as f:  # cost 10: tens of ms per check, as htpasswd -B makes it
            f.write("basic_auth_users:\n  alice: '%s'\n  bob: '%s'\n"
                    % (bcrypt("s3cret", 10), bcrypt("hunter2", 10)))
        port = free_port()
        with Loadwatch(["--web.config.file=" + web, "--sample.interval=500ms"], port=port,
                       wait_ready=False) as lw:
            alice = {"Authorization": basic("alice", "s3cret")}
            deadline = time.time() + 15
            while time.time() < deadline:
                try:
                    if http_get(lw.url + "/-/ready", alice, timeout=2)[0] == 200:
                        break
                except OSError:
                    pass
                time.sleep(0.1)
            stop = threading.Event()
            seen = {}
            lock = threading.Lock()

            def attacker(n):
                # Every guess distinct (no failure cache); four attacking addresses.
                source = "127.0.0.%d" % (2 + n % 4)
                i = 0
                while not stop.is_set() and i < 2000:
                    i += 1
                    try:
                        c = http.client.HTTPConnection("127.0.0.1", port, timeout=10,
                                                       source_address=(source, 0))
                        c.request("GET", "/metrics", headers={
                            "Authorization": basic("alice", "guess-%d-%d" % (n, i))})
                        status = c.getresponse().status
                        c.close()
                    except OSError:
                        status = "error"
                    with lock:
                        seen[status] = seen.get(status, 0) + 1

            threads = [threading.Thread(target=attacker, args=(n,), daemon=True)
                       for n in range(80)]
            for t in threads:
                t.start()
            try:
                time.sleep(1)
                times, statuses = [], []
                end = time.time() + 6
                while time.time() < end:
                    t = time.perf_counter()
                    statuses.append(http_get(lw.url + "/metrics", alice, timeout=15)[0])
                    times.append(time.perf_counter() - t)
                    time.sleep(0.05)
                # A client whose credentials are not cached yet is checked within a few tries.
                t = time.perf_counter()
                bob = []
                for _ in range(20):
                    bob.append(http_get(lw.url + "/metrics",
                                        {"Authorization": basic("bob", "hunter2")}, timeout=15)[0])
                    if bob[-1] == 200:
                        break
                    time.sleep(0.2)
                bob_time = time.perf_counter() - t
            finally:
                stop.set()
                for t in threads:
                    t.join(15)
            text = http_get(lw.url + "/metrics", alice)[2].decode()
            busy = parse_metrics(text)[("loadwatch_http_rejected_requests_total",
                                        frozenset({("reason", "auth_busy")}))]
            print("80 wrong-password loops: attackers got %s; %d cached scrapes: median %.1f ms, "
                  "p99 %.1f ms, max %.1f ms; uncached login: %s in %.2f s"
                  % (seen, len(times), statistics.median(times) * 1000,
                     percentile(times, 0.99) * 1000, max(times) * 1000, bob, bob_time))
            self.assertEqual(set(statuses), {200})
            self.assertLess(statistics.median(times), 1.0)
            self.assertLess(max(times), 10.0)
            self.assertEqual(bob[-1], 200)
            self.assertTrue(set(bob) <= {200, 429}, bob)
            self.assertNotIn(503, seen)
            self.assertGreater(seen.get(429, 0), seen.get(401, 0))  # turned away, no bcrypt
            self.assertGreater(busy, 0)


class GraphiteLockout(unittest.TestCase):
    def test_idle_connections_do_not_lock_out_jmeter(self):
        gport = free_port()
        with Loadwatch(["--graphite.listen-address=127.0.0.1:%d" % gport,
                        "--sample.interval=200ms"]) as lw:
            # 100 from one address (it keeps 16), then 6 more addresses x 8: the listener's 64
            # places are all taken by connections that never send a line.
            idle = [socket.create_connection(("127.0.0.1", gport), source_address=("127.0.0.2", 0))
                    for _ in range(100)]
            for a in range(3, 9):
                idle += [socket.create_connection(("127.0.0.1", gport),
                                                  source_address=("127.0.0.%d" % a, 0))
                         for _ in range(8)]
            lw.wait_for(lambda m: m[("loadwatch_push_connections",
                                     frozenset({("protocol", "graphite")}))] == 64,
                        what="64 idle graphite connections")
            time.sleep(3.5)  # evictable: 3 s without a line
            jmeter = socket.create_connection(("127.0.0.1", gport), timeout=5)
            t0 = time.time()
            sent = 0
            while time.time() - t0 < 3:  # JMeter's Backend Listener: a batch every second
                jmeter.sendall(b"jmeter.all.a.count 5 %d\n" % int(time.time()))
                sent += 5
                time.sleep(0.5)
            m = lw.wait_for(lambda m: m.get(("loadwatch_generator_requests_total",
                                             frozenset({("source", "jmeter")}))) == sent,
                            what="JMeter's lines counted")
            closed = {dict(ls)["reason"]: v for (n, ls), v in m.items()
                      if n == "loadwatch_push_closed_connections_total"}
            print("graphite: connections closed by reason", closed)
            self.assertEqual(closed["per_address_limit"], 84)
            self.assertGreaterEqual(closed["evicted"], 1)
            jmeter.close()
            for s in idle:
                s.close()


    def connect_kept(self, gport, timeout=10):
        """JMeter reconnecting: a connection from 127.0.0.1 that the listener keeps (not
        closed at once), tried until `timeout`; None when every try was turned away."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            s = socket.create_connection(("127.0.0.1", gport), timeout=5)
            s.settimeout(0.1)
            try:
                closed = s.recv(1) == b""
            except socket.timeout:
                closed = False
            except ConnectionResetError:
                closed = True
            if not closed:
                s.settimeout(5)
                return s
            s.close()
        return None

    def sender_gets_in(self, lw, gport):
        jmeter = self.connect_kept(gport)
        self.assertIsNotNone(jmeter, "the sender was locked out")
        jmeter.sendall(b"jmeter.all.a.count 5 %d\n" % int(time.time()))
        lw.wait_for(lambda m: m.get(("loadwatch_generator_requests_total",
                                     frozenset({("source", "jmeter")}))) == 5,
                    what="the sender's line counted")
        jmeter.close()

    def test_silent_connections_from_the_senders_own_address_do_not_lock_it_out(self):
        gport = free_port()
        with Loadwatch(["--graphite.listen-address=127.0.0.1:%d" % gport,
                        "--sample.interval=200ms"]) as lw:
            # Its own address's share (16), all silent: JMeter's crashed pool, say.
            idle = [socket.create_connection(("127.0.0.1", gport)) for _ in range(16)]
            lw.wait_for(lambda m: m[("loadwatch_push_connections",
                                     frozenset({("protocol", "graphite")}))] == 16,
                        what="16 idle graphite connections")
            self.sender_gets_in(lw, gport)
            for s in idle:
                s.close()

    def test_junk_lines_from_four_addresses_do_not_lock_out_the_sender(self):
        gport = free_port()
        with Loadwatch(["--graphite.listen-address=127.0.0.1:%d" % gport,
                        "--sample.interval=200ms"]) as lw:
            junk = [socket.create_connection(("127.0.0.1", gport),
                                             source_address=("127.0.0.%d" % a, 0))
                    for a in range(2, 6) for _ in range(16)]
            lw.wait_for(lambda m: m[("loadwatch_push_connections",
                                     frozenset({("protocol", "graphite")}))] == 64,
                        what="64 junk graphite connections")
            stop = threading.Event()

            def send_junk():  # one junk line a second on each, bounded: 30 rounds
                for _ in range(30):
                    for s in junk:
                        try:
                            s.sendall(b"not graphite\n")
                        except OSError:
                            pass  # evicted
                    if stop.wait(1):
                        return

            t = threading.Thread(target=send_junk)
            t.start()
            try:
                self.sender_gets_in(lw, gport)
            finally:
                stop.set()
                t.join()
            m = lw.metrics()
            self.assertGreaterEqual(m[("loadwatch_push_closed_connections_total",
                                       frozenset({("protocol", "graphite"),
                                                  ("reason", "evicted")}))], 1)
            for s in junk:
                s.close()


WRITE = b"POST /write?db=hard HTTP/1.1\r\nHost: x\r\n"
LINE = b"jmeter,application=hard,transaction=%s,statut=all count=5\n"


class Bodies(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.lw = Loadwatch(["--sample.interval=200ms"]).__enter__()

    @classmethod
    def tearDownClass(cls):
        cls.lw.__exit__(None, None, None)

    def stored(self, name):
        time.sleep(0.5)  # two samples
        return ('name="%s"' % name) in self.lw.metrics_text()

    def test_short_body_is_400_and_stores_nothing(self):
        body = LINE % b"short"
        for shut in (True, False):  # half-closed, or silent until the read times out
            t = time.time()
            status, data = status_of(self.lw.port, WRITE + b"Content-Length: %d\r\n\r\n"
                                     % (len(body) + 10) + body, shut_wr=shut)
            self.assertEqual(status, 400, data)
            self.assertIn(b"of its %d bytes (Content-Length)" % (len(body) + 10), data)
            self.assertLess(time.time() - t, 9)
        self.assertFalse(self.stored("short"))
        # The same body with its true length is taken.
        status, _ = status_of(self.lw.port, WRITE + b"Content-Length: %d\r\n\r\n" % len(body)
                              + body.replace(b"short", b"whole"))
        self.assertEqual(status, 204)
        self.assertTrue(self.stored("whole"))

    def test_malformed_chunked_body_is_400_and_stores_nothing(self):
        line = LINE % b"chunked"
        chunk = b"%x\r\n%s\r\n" % (len(line), line)
        bad = [b"zz\r\n" + line + b"\r\n0\r\n\r\n",        # not a hex size
               b"4\r\n" + line + b"\r\n0\r\n\r\n",         # more data than the size says
               chunk[:-5],                                 # cut off inside the chunk
               chunk]                                      # no last chunk
        for body in bad:
            status, data = status_of(self.lw.port, WRITE + b"Transfer-Encoding: chunked\r\n\r\n"
                                     + body, shut_wr=True)
            self.assertEqual(status, 400, body)
            self.assertIn(b"malformed chunked request body", data)
        status, _ = status_of(self.lw.port, WRITE + b"Transfer-Encoding: chunked\r\n"
                              b"Content-Length: %d\r\n\r\n" % len(chunk) + chunk + b"0\r\n\r\n")
        self.assertEqual(status, 400)
        self.assertFalse(self.stored("chunked"))
        status, _ = status_of(self.lw.port, WRITE + b"Transfer-Encoding: chunked\r\n\r\n"
                              + chunk.replace(b"chunked", b"chunkok") + b"0\r\n\r\n")
        self.assertEqual(status, 204)
        self.assertTrue(self.stored("chunkok"))

    def test_read_only_routes_take_no_body(self):
        for path in (b"/metrics", b"/", b"/-/healthy", b"/-/ready", b"/api/v1/targets"):
            for method in (b"GET", b"POST"):
                status, data = status_of(self.lw.port, method + b" " + path +
                                         b" HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello")
                self.assertEqual(status, 413, path)
                self.assertIn(b"takes no request body", data)
        status, _ = status_of(self.lw.port, b"GET /metrics HTTP/1.1\r\nHost: x\r\n"
                              b"Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n")
        self.assertEqual(status, 413)
        status, _ = status_of(self.lw.port, b"GET /metrics HTTP/1.1\r\nHost: x\r\n"
                              b"Content-Length: 0\r\nConnection: close\r\n\r\n")
        self.assertEqual(status, 200)
        # The Influx routes keep their 16 MiB.
        status, _ = status_of(self.lw.port, WRITE + b"Content-Length: %d\r\n\r\n"
                              % ((16 << 20) + 1))
        self.assertEqual(status, 413)
        self.lw.wait_for(lambda m: m[("loadwatch_http_rejected_requests_total",
                                      frozenset({("reason", "body_not_allowed")}))] >= 11,
                         what="body_not_allowed counted")


class BodyMemory(unittest.TestCase):
    def test_bodies_in_flight_are_capped_and_memory_comes_back(self):
        with Loadwatch(["--sample.interval=200ms"]) as lw:
            for _ in range(5):
                lw.metrics_text()
            time.sleep(0.5)
            base = rss_kib(lw.proc.pid)
            line = LINE % b"big"
            size = (16 << 20) - 1
            body = line * (size // len(line))
            body += b"#" * (size - len(body) - 1) + b"\n"  # a comment fills it up exactly
            results = []
            lock = threading.Lock()
            heads_sent = threading.Barrier(41)

            def client(n):
                status = 0
                try:
                    s = socket.create_connection(("127.0.0.1", lw.port), timeout=30,
                                                 source_address=("127.0.0.%d" % (2 + n), 0))
                    s.sendall(WRITE + b"Content-Length: %d\r\n\r\n" % size)
                    heads_sent.wait(10)
                    time.sleep(0.5)  # the server has reserved (or refused) every body by now
                    s.setblocking(False)
                    try:
                        early = s.recv(65536)
                    except BlockingIOError:
                        early = b""
                    s.setblocking(True)
                    if not early:
                        s.sendall(body)
                        early = s.recv(65536)
                    status = int(early.split(b" ", 2)[1]) if early.startswith(b"HTTP/") else 0
                    if status == 503:
                        self.assertIn(b"Retry-After: 1", early)
                    s.close()
                except OSError as e:
                    status = type(e).__name__
                with lock:
                    results.append(status)

            threads = [threading.Thread(target=client, args=(n,)) for n in range(40)]
            for t in threads:
                t.start()
            heads_sent.wait(10)
            peak = 0
            while any(t.is_alive() for t in threads):
                peak = max(peak, rss_kib(lw.proc.pid))
                time.sleep(0.02)
            for t in threads:
                t.join()
            hwm = rss_kib(lw.proc.pid, "VmHWM")
            after = rss_kib(lw.proc.pid)
            deadline = time.time() + 5
            while after > base + 24 * 1024 and time.time() < deadline:
                time.sleep(0.2)
                after = rss_kib(lw.proc.pid)
            counts = {s: results.count(s) for s in set(results)}
            time.sleep(0.5)  # a sample after the burst
            m = lw.metrics()
            print("40 concurrent 16 MiB POSTs: %s; RSS %d MiB before, peak %d MiB (VmHWM), "
                  "%d MiB after" % (counts, base // 1024, hwm // 1024, after // 1024))
            self.assertEqual(counts.get(204), 4)   # 4 x (16 MiB - 1) fit in 64 MiB
            self.assertEqual(counts.get(503), 36)
            self.assertEqual(m[("loadwatch_http_rejected_requests_total",
                                frozenset({("reason", "body_memory")}))], 36)
            self.assertEqual(m[("loadwatch_http_request_body_bytes", frozenset())], 0)
            self.assertLess(hwm - base, 160 * 1024)  # 64 MiB of bodies plus their parsing
            self.assertLess(after - base, 24 * 1024)


if __name__ == "__main__":
    unittest.main(verbosity=2)
