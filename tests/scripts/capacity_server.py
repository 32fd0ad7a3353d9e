"""A test server whose capacity is known by construction.

    python3 capacity_server.py PORT K SERVICE_MS [sleep|cpu]

$CAPACITY_SERVER_BIND is the address to listen on (default 127.0.0.1); with
$CAPACITY_SERVER_LOG, the time each answer leaves is appended there, one a line: the server's
own count of what it served. The time is taken just before the body is written: after the
write the thread must win the GIL back from the CPU-burning ones, which under a CPU quota
took up to 1 s.

At most K requests are in service at once; each takes SERVICE_MS, sleeping (so throughput
flattens at K / SERVICE_MS per second) or burning CPU (one Python process: the GIL caps it
at one core, so the CPU saturates first). More requests wait for a slot.
"""
import collections
import os
import http.server
import sys
import threading
import time

PORT, K, SERVICE = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]) / 1000.0
MODE = sys.argv[4] if len(sys.argv) > 4 else "sleep"
BIND = os.environ.get("CAPACITY_SERVER_BIND", "127.0.0.1")
LOG = open(os.environ["CAPACITY_SERVER_LOG"], "a", buffering=1) if os.environ.get(
    "CAPACITY_SERVER_LOG") else None
LOG_LOCK = threading.Lock()


class FifoSlots:
    """K slots handed out in arrival order. A threading.Semaphore lets a new request barge past
    the ones waiting, so the wait, and with it the latency quantiles, would vary from run to
    run; in order, a request waits exactly for the ones ahead of it."""

    def __init__(self, k):
        self.free = k
        self.waiting = collections.deque()
        self.lock = threading.Lock()

    def __enter__(self):
        with self.lock:
            if self.free > 0:
                self.free -= 1
                return
            turn = threading.Event()
            self.waiting.append(turn)
        turn.wait()

    def __exit__(self, *exc):
        with self.lock:
            if self.waiting:
                self.waiting.popleft().set()  # the slot passes straight to the oldest waiter
            else:
                self.free += 1


SLOTS = FifoSlots(K)


def cpu_for(seconds):
    end = time.thread_time() + seconds
    x = 0
    while time.thread_time() < end:
        for i in range(200):
            x += i * i
    return x


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # The headers and the body leave in two writes: with Nagle's algorithm the body waits for
    # the client's delayed ACK of the headers (40 ms on Linux), a delay outside the slots that
    # a request's latency would carry on top of SERVICE_MS.
    disable_nagle_algorithm = True

    def do_GET(self):
        with SLOTS:
            if MODE == "cpu":
                cpu_for(SERVICE)
            else:
                time.sleep(SERVICE)
        body = b"ok\n"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        leaves = time.time()
        self.wfile.write(body)
        if LOG:
            with LOG_LOCK:
                LOG.write("%.6f\n" % leaves)

    def log_message(self, *args):
        pass


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 512

    def handle_error(self, request, client_address):
        pass  # a generator stopping its users mid-request is expected


Server((BIND, PORT), Handler).serve_forever()
