#!/usr/bin/python3
"""Mixed HTTP attack on loopback, with /metrics scrapes timed while it runs.

Against any HTTP/1.1 server on 127.0.0.1 (one this script starts with --server, or a running
one given by --port and --pid):
- N keep-alive clients, each sending one small valid request (GET /-/healthy) every 8 s;
- M slowloris clients trickling a header byte a second, reconnecting when dropped;
- K idle connections, reconnecting when dropped;
all from 127.0.0.2-127.0.0.9 (bound before connect, spread evenly), in a child process that
runs one asyncio loop (no thread per connection). Meanwhile this process scrapes /metrics from
127.0.0.1 on a fresh connection every 0.5 s for D seconds and reports the median, p99 and
worst latency, and the server's Threads and VmRSS (/proc/PID/status) before, during (the peak)
and after the attack. Also: --unloaded R (R requests on fresh connections, then R on one
keep-alive connection, unloaded) and --probe-framing (a request with both Content-Length and
Transfer-Encoding, then a second request on the same connection: RFC 9112 section 6.1 says
the server must close the connection after the 400).

Every loop is bounded in count and time; it ends only the processes it started, by PID.
Descriptors: the attacker needs N + M + K plus reconnect churn; it raises its soft
RLIMIT_NOFILE to the hard limit, and the server it starts inherits that limit (a server holding
every attack connection needs N + M + K + a few dozen).

  nice python3 bench/http_attack.py --server "build/bench/beast_server per_ip=64" \
      --keepalive 300 --slowloris 300 --idle 300 --seconds 30 --out beast.json
"""
import argparse
import asyncio
import json
import os
import random
import re
import resource
import signal
import socket
import ssl
import statistics
import subprocess
import sys
import tempfile
import time

SOURCES = [f"127.0.0.{i}" for i in range(2, 10)]
KEEPALIVE_PERIOD = 8.0
REQUEST = b"GET /-/healthy HTTP/1.1\r\nHost: bench\r\n\r\n"
SLOW_HEAD = b"GET /metrics HTTP/1.1\r\nHost: bench\r\nX-Slow: "
MAX_RECONNECT_DELAY = 8.0


def raise_nofile():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def pct(values, q):
    if not values:
        return None
    s = sorted(values)
    return s[min(len(s) - 1, int(round(q * (len(s) - 1))))]


def summary_ms(values):
    if not values:
        return {"count": 0}
    return {"count": len(values), "median_ms": round(1000 * statistics.median(values), 2),
            "p99_ms": round(1000 * pct(values, 0.99), 2), "max_ms": round(1000 * max(values), 2)}


# ---------------------------------------------------------------- the attacker (child process)

class Client(asyncio.Protocol):
    """One attacking connection slot: reconnects (with backoff) whenever it is dropped."""

    def __init__(self, attack, kind, index):
        self.attack, self.kind, self.index = attack, kind, index
        self.source = SOURCES[index % len(SOURCES)]
        self.transport = None
        self.backoff = 0.5
        self.opened = 0.0
        self.buf = b""
        self.sent_at = None
        self.slow_pos = 0

    # asyncio.Protocol
    def connection_made(self, transport):
        self.transport, self.opened, self.buf, self.sent_at = transport, time.monotonic(), b"", None
        self.slow_pos = 0
        self.attack.open[self.kind] += 1
        if self.kind == "keepalive":
            self.schedule_request(random.uniform(0, KEEPALIVE_PERIOD))

    def data_received(self, data):
        st = self.attack.stats[self.kind]
        st["bytes_in"] += len(data)
        if self.kind != "keepalive":
            return
        self.buf += data
        while True:  # complete responses (Content-Length framed) in the buffer
            end = self.buf.find(b"\r\n\r\n")
            if end < 0:
                return
            head = self.buf[:end].decode("latin-1").split("\r\n")
            length = 0
            for line in head[1:]:
                name, _, value = line.partition(":")
                if name.strip().lower() == "content-length":
                    length = int(value.strip())
            if len(self.buf) < end + 4 + length:
                return
            self.buf = self.buf[end + 4 + length:]
            status = head[0].split(" ")[1] if " " in head[0] else "?"
            st["status"][status] = st["status"].get(status, 0) + 1
            if self.sent_at is not None:
                st["latencies"].append(time.monotonic() - self.sent_at)
                self.sent_at = None

    def connection_lost(self, exc):
        now = time.monotonic()
        self.attack.open[self.kind] -= 1
        self.transport = None
        if self.attack.stopping:  # our own close at the end
            return
        st = self.attack.stats[self.kind]
        st["drops"] += 1
        st["lifetimes"].append(now - self.opened)
        self.backoff = 0.5 if now - self.opened >= 2 else min(2 * self.backoff,
                                                              MAX_RECONNECT_DELAY)
        self.attack.reconnect_later(self, self.backoff)

    # requests
    def schedule_request(self, delay):
        self.attack.loop.call_later(delay, self.send_request, self.transport)

    def send_request(self, transport):
        if transport is not self.transport or transport is None or self.attack.stopping:
            return
        if self.sent_at is None:
            self.sent_at = time.monotonic()
            transport.write(REQUEST)
            self.attack.stats["keepalive"]["requests"] += 1
        else:
            self.attack.stats["keepalive"]["unanswered_at_next"] += 1
        self.schedule_request(KEEPALIVE_PERIOD)

    def trickle(self):
        if self.transport is None or self.transport.is_closing():
            return
        byte = SLOW_HEAD[self.slow_pos:self.slow_pos + 1] or b"a"
        self.slow_pos += 1
        self.transport.write(byte)
        self.attack.stats["slowloris"]["bytes_out"] += 1


class Attack:
    def __init__(self, args):
        self.args, self.loop, self.stopping = args, asyncio.get_running_loop(), False
        self.open = {"keepalive": 0, "slowloris": 0, "idle": 0}
        self.stats = {k: {"target": n, "connects": 0, "connect_failures": 0, "drops": 0,
                          "lifetimes": [], "bytes_in": 0, "open_samples": []}
                      for k, n in (("keepalive", args.keepalive), ("slowloris", args.slowloris),
                                   ("idle", args.idle))}
        self.stats["keepalive"].update(requests=0, unanswered_at_next=0, status={}, latencies=[])
        self.stats["slowloris"]["bytes_out"] = 0
        self.gate = asyncio.Semaphore(256)  # connects in flight at once
        self.tasks = set()
        self.clients = [Client(self, kind, i) for kind in ("idle", "slowloris", "keepalive")
                        for i in range(self.stats[kind]["target"])]

    async def connect(self, client):
        async with self.gate:
            if self.stopping:
                return
            try:
                await asyncio.wait_for(self.loop.create_connection(
                    lambda: client, "127.0.0.1", self.args.port,
                    local_addr=(client.source, 0)), 5)
                self.stats[client.kind]["connects"] += 1
            except (OSError, asyncio.TimeoutError):
                self.stats[client.kind]["connect_failures"] += 1
                client.backoff = min(2 * client.backoff, MAX_RECONNECT_DELAY)
                self.reconnect_later(client, client.backoff)

    def spawn(self, client):
        task = self.loop.create_task(self.connect(client))
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    def reconnect_later(self, client, delay):
        if not self.stopping:
            self.loop.call_later(delay, lambda: None if self.stopping else self.spawn(client))

    async def trickler(self, deadline):
        slow = [c for c in self.clients if c.kind == "slowloris"]
        tick = 0
        while time.monotonic() < deadline:  # a tenth of them every 0.1 s: a byte a second each
            for c in slow[tick % 10::10]:
                c.trickle()
            tick += 1
            await asyncio.sleep(0.1)

    async def run(self):
        start = time.monotonic()
        deadline = start + self.args.ramp + self.args.seconds
        random.shuffle(self.clients)
        for c in self.clients:
            self.spawn(c)
        trickler = self.loop.create_task(self.trickler(deadline))
        ramp_end = start + self.args.ramp
        target = len(self.clients)
        while time.monotonic() < ramp_end and sum(self.open.values()) < target:
            await asyncio.sleep(0.1)
        print(json.dumps({"ready": round(time.monotonic() - start, 2),
                          "open": dict(self.open)}), flush=True)
        while time.monotonic() < deadline:
            for kind, n in self.open.items():
                self.stats[kind]["open_samples"].append(n)
            await asyncio.sleep(1)
        self.stopping = True
        await trickler
        for c in self.clients:
            if c.transport is not None:
                c.transport.abort()
        for t in list(self.tasks):
            t.cancel()
        await asyncio.sleep(0.2)
        out = {}
        for kind, st in self.stats.items():
            o = {k: v for k, v in st.items() if k not in ("lifetimes", "latencies",
                                                           "open_samples")}
            samples = st["open_samples"]
            o["open_median"] = statistics.median(samples) if samples else None
            o["open_min"] = min(samples) if samples else None
            life = st["lifetimes"]
            o["lifetime_median_s"] = round(statistics.median(life), 2) if life else None
            if kind == "keepalive":
                o["latency"] = summary_ms(st["latencies"])
            out[kind] = o
        print(json.dumps({"done": out}), flush=True)


async def tls_flood(args):
    """args.tls_flood TLS handshakes, args.tls_concurrency at a time, then each closed."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
    gate, done, failed, times = asyncio.Semaphore(args.tls_concurrency), 0, 0, []
    deadline = time.monotonic() + args.seconds
    print(json.dumps({"ready": 0}), flush=True)
    start = time.monotonic()

    async def one(i):
        nonlocal done, failed
        async with gate:
            if time.monotonic() > deadline:
                failed += 1
                return
            t0 = time.monotonic()
            try:
                _, w = await asyncio.wait_for(asyncio.open_connection(
                    "127.0.0.1", args.port, ssl=ctx, local_addr=(SOURCES[i % len(SOURCES)], 0)),
                    10)
                times.append(time.monotonic() - t0)
                done += 1
                w.transport.abort()
            except (OSError, asyncio.TimeoutError, ssl.SSLError):
                failed += 1

    await asyncio.gather(*(one(i) for i in range(args.tls_flood)))
    print(json.dumps({"done": {"tls_flood": {
        "handshakes": done, "failed": failed, "seconds": round(time.monotonic() - start, 2),
        "concurrency": args.tls_concurrency, "handshake": summary_ms(times)}}}), flush=True)


def attacker_main(args):
    raise_nofile()

    async def run():
        if args.tls_flood:
            await tls_flood(args)
        else:
            await Attack(args).run()

    asyncio.run(run())


# ---------------------------------------------------------------- the scraper (this process)

def http_get(sock, path, keep_alive, timeout):
    """Sends GET path on sock and reads one Content-Length framed response: (status, size)."""
    sock.settimeout(timeout)
    conn = "keep-alive" if keep_alive else "close"
    sock.sendall(f"GET {path} HTTP/1.1\r\nHost: bench\r\nConnection: {conn}\r\n\r\n".encode())
    buf = b""
    while b"\r\n\r\n" not in buf:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError("closed before the head")
        buf += chunk
    end = buf.index(b"\r\n\r\n")
    head = buf[:end].decode("latin-1").split("\r\n")
    length = next(int(l.split(":", 1)[1]) for l in head[1:]
                  if l.lower().startswith("content-length:"))
    body = len(buf) - end - 4
    while body < length:
        chunk = sock.recv(262144)
        if not chunk:
            raise ConnectionError("closed in the body")
        body += len(chunk)
    return int(head[0].split(" ")[1]), length


TLS_CLIENT = None  # an ssl.SSLContext when the server speaks TLS (--tls)


def connect(port, timeout):
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return TLS_CLIENT.wrap_socket(s) if TLS_CLIENT else s


def fresh_scrape(port, timeout):
    t0 = time.monotonic()
    with connect(port, timeout) as s:
        status, _ = http_get(s, "/metrics", False, timeout)
    return time.monotonic() - t0, status


def proc_status(pid):
    out = {}
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key in ("Threads", "VmRSS", "VmHWM"):
                    out[key] = int(value.split()[0])
    except OSError:
        return None
    return {"threads": out.get("Threads"), "rss_kib": out.get("VmRSS"),
            "hwm_kib": out.get("VmHWM")}


def unloaded(port, count):
    fresh, kept = [], []
    for _ in range(count):
        fresh.append(fresh_scrape(port, 5)[0])
    # A server may end a keep-alive connection after so many requests: reopen it (counted).
    s, reopened = connect(port, 5), 0
    try:
        for _ in range(count):
            t0 = time.monotonic()
            try:
                http_get(s, "/metrics", True, 5)
            except (ConnectionError, BrokenPipeError):
                s.close()
                s, reopened = connect(port, 5), reopened + 1
                http_get(s, "/metrics", True, 5)
            kept.append(time.monotonic() - t0)
    finally:
        s.close()
    return {"fresh": summary_ms(fresh), "keepalive": dict(summary_ms(kept), reopened=reopened)}


def probe_framing(port):
    """CL + TE on one request, then a second request on the same connection."""
    req = (b"GET /-/healthy HTTP/1.1\r\nHost: bench\r\nContent-Length: 5\r\n"
           b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n"
           b"GET /-/healthy HTTP/1.1\r\nHost: bench\r\n\r\n")
    got, closed = b"", False
    with socket.create_connection(("127.0.0.1", port), timeout=3) as s:
        s.sendall(req)
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline:
            try:
                chunk = s.recv(65536)
            except socket.timeout:
                break
            except ConnectionResetError:
                closed = True
                break
            if not chunk:
                closed = True
                break
            got += chunk
    statuses = re.findall(r"HTTP/1\.[01] (\d{3}) ", got.decode("latin-1"))
    return {"statuses": statuses, "closed_after_first": closed and len(statuses) <= 1}


def wait_listening(proc, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        if line.startswith("listening"):
            return int(line.split()[1])
    raise RuntimeError("server did not report its port")


def stop(proc, grace=5):
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(grace)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(grace)


def attack(args, port, pid):
    result = {"size": {"keepalive": args.keepalive, "slowloris": args.slowloris,
                       "idle": args.idle, "seconds": args.seconds, "tls_flood": args.tls_flood}}
    time.sleep(0.5)
    result["before"] = proc_status(pid)
    cmd = [sys.executable, os.path.abspath(__file__), "--attacker", "--port", str(port),
           "--keepalive", str(args.keepalive), "--slowloris", str(args.slowloris),
           "--idle", str(args.idle), "--seconds", str(args.seconds), "--ramp", str(args.ramp),
           "--tls-flood", str(args.tls_flood), "--tls-concurrency", str(args.tls_concurrency)]
    child = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    try:
        ready = json.loads(child.stdout.readline() or "{}")
        if "ready" not in ready:
            raise RuntimeError("the attacker failed to start (see its stderr)")
        result["ramp"] = ready
        scrapes, failures, samples = [], [], []
        t_end = time.monotonic() + args.seconds
        next_at = time.monotonic()
        while time.monotonic() < t_end and (not args.tls_flood or child.poll() is None):
            now = time.monotonic()
            if now < next_at:
                time.sleep(next_at - now)
            next_at += 0.5
            try:
                latency, status = fresh_scrape(port, args.scrape_timeout)
                scrapes.append(latency)
                if status != 200:
                    failures.append(f"status {status}")
            except (OSError, ConnectionError, StopIteration) as e:
                failures.append(type(e).__name__)
            s = proc_status(pid)
            if s:
                samples.append(s)
            next_at = max(next_at, time.monotonic())
        result["scrapes"] = summary_ms(scrapes)
        result["scrapes"]["over_10s"] = sum(1 for x in scrapes if x > 10)
        result["scrape_failures"] = failures
        if samples:
            result["during"] = {"threads": max(s["threads"] for s in samples),
                                "rss_kib": max(s["rss_kib"] for s in samples)}
        tail = child.stdout.read()  # the child ends at its own deadline
        for line in tail.splitlines():
            if line.startswith('{"done"'):
                result["attacker"] = json.loads(line)["done"]
        child.wait(30)
        if "attacker" not in result:
            raise RuntimeError("the attacker ended without its summary")
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(5)
    # After: threads settle (pools shrink, connections time out), bounded at 15 s.
    last, stable_since, deadline = None, time.monotonic(), time.monotonic() + 15
    while time.monotonic() < deadline:
        s = proc_status(pid)
        if s is None:
            break
        if last and s["threads"] == last["threads"]:
            if time.monotonic() - stable_since >= 2:
                break
        else:
            stable_since = time.monotonic()
        last = s
        time.sleep(0.25)
    result["after"] = proc_status(pid)
    return result


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--server", help="command line of a server that prints 'listening PORT'")
    ap.add_argument("--port", type=int)
    ap.add_argument("--pid", type=int, help="server PID for /proc (with --port)")
    ap.add_argument("--keepalive", type=int, default=300)
    ap.add_argument("--slowloris", type=int, default=300)
    ap.add_argument("--idle", type=int, default=300)
    ap.add_argument("--seconds", type=float, default=30)
    ap.add_argument("--ramp", type=float, default=20, help="at most this long to open them all")
    ap.add_argument("--scrape-timeout", type=float, default=25)
    ap.add_argument("--unloaded", type=int, default=0, help="requests for the unloaded p99")
    ap.add_argument("--probe-framing", action="store_true")
    ap.add_argument("--no-attack", action="store_true")
    ap.add_argument("--tls", action="store_true",
                    help="give the server a fresh self-signed certificate (tls_cert= tls_key=)"
                    " and scrape over TLS")
    ap.add_argument("--tls-flood", type=int, default=0,
                    help="instead of the mixed attack: this many TLS handshakes (with --tls)")
    ap.add_argument("--tls-concurrency", type=int, default=100)
    ap.add_argument("--out")
    ap.add_argument("--attacker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    for n in (args.keepalive, args.slowloris, args.idle):
        if not 0 <= n <= 5000:
            ap.error("at most 5,000 clients of each kind")
    if not 0 < args.seconds <= 300 or not 0 <= args.unloaded <= 20000:
        ap.error("--seconds in (0, 300], --unloaded at most 20,000")
    if not 0 <= args.tls_flood <= 20000 or not 1 <= args.tls_concurrency <= 1000:
        ap.error("--tls-flood at most 20,000, --tls-concurrency in [1, 1000]")
    if args.attacker:
        return attacker_main(args)
    nofile = raise_nofile()
    need = args.keepalive + args.slowloris + args.idle + 64
    result = {"nofile_soft": nofile, "nofile_needed_by_server": need}
    proc = None
    try:
        if args.tls:
            global TLS_CLIENT
            TLS_CLIENT = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
            TLS_CLIENT.check_hostname, TLS_CLIENT.verify_mode = False, ssl.CERT_NONE
        if args.server:
            command = args.server.split()
            if args.tls:
                tmp = tempfile.mkdtemp(prefix="http_attack_")
                cert, key = os.path.join(tmp, "cert.pem"), os.path.join(tmp, "key.pem")
                subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                                "ec_paramgen_curve:P-256", "-nodes", "-days", "1", "-subj",
                                "/CN=127.0.0.1", "-keyout", key, "-out", cert],
                               check=True, capture_output=True, timeout=30)
                command += [f"tls_cert={cert}", f"tls_key={key}"]
            proc = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
            port, pid = wait_listening(proc, 10), proc.pid
            result["server"] = args.server
        else:
            port, pid = args.port, args.pid
        result["idle"] = proc_status(pid)
        if args.probe_framing:
            result["framing"] = probe_framing(port)
        if args.unloaded:
            result["unloaded"] = unloaded(port, args.unloaded)
        if not args.no_attack:
            result["attack"] = attack(args, port, pid)
    finally:
        if proc is not None:
            stop(proc)
    text = json.dumps(result, indent=1)
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
