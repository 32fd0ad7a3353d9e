#!/usr/bin/env python3
"""A misbehaving HTTP server for the pull-source tests (stdlib only, loopback only).

Prints its port on stdout once listening (bind to port 0), then serves (routed by the
first path segment):
  /hang          accepts, reads the request, never answers (until the client gives up)
  /404           404 Not Found
  /garbage       200 application/json whose body is not JSON
  /big           200 with a 100 MiB body, streamed
  /gzipbomb      200 Content-Encoding: gzip, ~260 KiB that inflate to 256 MiB of zeros
  /prom          200 a small valid Prometheus text exposition
  /prom_bad      200 a text exposition with a malformed line 3
  /clash         200 a family named like a loadwatch gauge but typed counter, and a fine one
  /slow_prom     /prom after 300 ms
Exits when stdin closes (the test that started it is gone) or on SIGTERM.
"""
import http.server
import socketserver
import struct
import sys
import threading
import time
import zlib

BIG = 100 << 20
BOMB_INFLATED = 256 << 20

PROM = (b"# HELP demo_requests_total Requests.\n# TYPE demo_requests_total counter\n"
        b"demo_requests_total{path=\"/a\",source=\"upstream\"} 42\n"
        b"# TYPE demo_temperature gauge\ndemo_temperature -1.5\n")


def make_bomb():
    # 1 MiB of zeros deflated once, ending in a full flush so the block needs no history:
    # the same bytes repeated N times inflate to N MiB (~1 KiB each), built in O(1) work
    # apart from the CRC of the trailer.
    zeros = bytes(1 << 20)
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    block = c.compress(zeros) + c.flush(zlib.Z_FULL_FLUSH)
    n = BOMB_INFLATED >> 20
    crc = 0
    for _ in range(n):
        crc = zlib.crc32(zeros, crc)
    return (b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\x03" + block * n + b"\x03\x00" +
            struct.pack("<II", crc, (n << 20) & 0xFFFFFFFF))


BOMB = None
BOMB_READY = threading.Event()


def build_bomb():
    global BOMB
    BOMB = make_bomb()
    BOMB_READY.set()


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def send_body(self, status, body, ctype="text/plain", extra=()):
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for k, v in extra:
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        try:
            self.route()
        except (BrokenPipeError, ConnectionResetError):
            pass

    def route(self):
        # Routed by the first path segment, so a source kind that appends its own path
        # (locust: /stats/requests) still reaches the misbehaviour: /garbage/stats/requests.
        p = "/" + self.path.split("?")[0].split("/")[1]
        if p == "/hang":
            # Hold the connection open without a byte of answer, bounded by a minute.
            self.connection.settimeout(60)
            try:
                while self.connection.recv(1024):
                    pass
            except OSError:
                pass
            self.close_connection = True
        elif p == "/404":
            self.send_body(404, b"not found\n")
        elif p == "/garbage":
            self.send_body(200, b"{\"stats\": [1, 2,, garbage \x00\xff", "application/json")
        elif p == "/big":
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(BIG))
            self.end_headers()
            chunk = b"x" * (1 << 20)
            for _ in range(BIG >> 20):
                self.wfile.write(chunk)
        elif p == "/big_chunked":
            # No Content-Length: the limit must stop it while streaming.
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Connection", "close")
            self.end_headers()
            chunk = b"y" * (1 << 20)
            for _ in range(BIG >> 20):
                self.wfile.write(chunk)
            self.close_connection = True
        elif p == "/gzipbomb":
            BOMB_READY.wait(60)
            self.send_body(200, BOMB, "application/json", [("Content-Encoding", "gzip")])
        elif p == "/prom":
            self.send_body(200, PROM)
        elif p == "/slow_prom":
            time.sleep(0.3)
            self.send_body(200, PROM)
        elif p == "/clash":
            # loadwatch_source_up is loadwatch's own gauge: as a counter it cannot be exported.
            self.send_body(200, b"# HELP loadwatch_source_up clash\n# TYPE loadwatch_source_up counter\n"
                                b"loadwatch_source_up 1\n# HELP ok_family fine\n# TYPE ok_family gauge\n"
                                b"ok_family 2\n")
        elif p == "/prom_bad":
            self.send_body(200, b"ok_metric 1\n# TYPE x gauge\nx{a=\"1\" 2\n")
        else:
            self.send_body(404, b"no route\n")


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


def main():
    srv = Server(("127.0.0.1", 0), Handler)
    threading.Thread(target=build_bomb, daemon=True).start()
    print(srv.server_address[1], flush=True)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        sys.stdin.read()  # returns when the parent closes our stdin or dies
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
