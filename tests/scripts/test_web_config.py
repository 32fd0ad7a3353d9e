"""--web.config.file end to end: TLS, basic auth, mTLS, headers, reload without restart, against
curl and the real Prometheus. Certificates are made at test time with openssl; loopback only."""
import http.client
import json
import os
import selectors
import shutil
import signal
import socket
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from lwtest import BINARY, SOURCE_DIR, basic, bcrypt, free_port  # noqa: E402
import lwtest  # noqa: E402


def openssl(cwd, *args):
    subprocess.run(["openssl"] + list(args), cwd=cwd, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, timeout=30)


class Pki:
    """Two CAs; a server certificate from each (for localhost/127.0.0.1); client certificates
    from CA 1 (trusted) and CA 2 (not trusted by the server's client_ca_file)."""

    def __init__(self, d):
        self.dir = d
        ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"]
        with open(os.path.join(d, "san.ext"), "w") as f:
            f.write("subjectAltName=DNS:localhost,IP:127.0.0.1\n")
        for ca in ("ca1", "ca2"):
            openssl(d, "req", "-x509", *ec, "-days", "2", "-subj", "/CN=loadwatch test " + ca,
                    "-keyout", ca + ".key", "-out", ca + ".crt")
        for name, ca, ext in (("server1", "ca1", True), ("server2", "ca2", True),
                              ("client1", "ca1", False), ("client2", "ca2", False)):
            openssl(d, "req", *ec, "-subj", "/CN=" + name, "-keyout", name + ".key",
                    "-out", name + ".csr")
            openssl(d, "x509", "-req", "-in", name + ".csr", "-CA", ca + ".crt", "-CAkey",
                    ca + ".key", "-CAcreateserial", "-days", "2", "-out", name + ".crt",
                    *(["-extfile", "san.ext"] if ext else []))

    def path(self, name):
        return os.path.join(self.dir, name)


def curl(url, *opts):
    """-> (curl exit code, HTTP status (0 when none), headers lower-cased, body)."""
    p = subprocess.run(["curl", "-sS", "--max-time", "8", "-D", "-", "-o", "-", "-w",
                        "\n%{http_code}"] + list(opts) + [url],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=20)
    out = p.stdout.decode(errors="replace")
    out, _, code = out.rpartition("\n")
    head, _, body = out.partition("\r\n\r\n")
    headers = {}
    for line in head.split("\r\n")[1:]:
        k, _, v = line.partition(":")
        headers[k.strip().lower()] = v.strip()
    return p.returncode, int(code or 0), headers, body


class Server:
    """loadwatch with a web config on a free loopback port; stopped by its PID."""

    def __init__(self, web_config, extra=()):
        self.port = free_port()
        self.args = [BINARY, "--web.listen-address=127.0.0.1:%d" % self.port,
                     "--web.config.file=" + web_config, "--sample.interval=500ms",
                     "--log.level=debug"] + list(extra)
        self.log = tempfile.TemporaryFile()
        self.proc = None

    def __enter__(self):
        self.proc = subprocess.Popen(self.args, stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.time() + 15
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("loadwatch exited %s:\n%s" % (self.proc.returncode, self.output()))
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return self
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("loadwatch did not listen in 15s:\n" + self.output())

    def __exit__(self, *exc):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()

    def output(self):
        self.log.seek(0)
        return self.log.read().decode(errors="replace")

    def https(self, path="/metrics"):
        return "https://127.0.0.1:%d%s" % (self.port, path)

    def http(self, path="/metrics"):
        return "http://127.0.0.1:%d%s" % (self.port, path)


def write(path, text):
    """Replaces the file atomically, as config management tools do."""
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.rename(tmp, path)


class WebConfigTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="lw-web-")
        cls.pki = Pki(cls.dir)
        # A cost that makes one bcrypt check take clearly longer than the 5 ms the timing test
        # allows between unknown users and wrong passwords (so skipping bcrypt would show).
        cls.cost = 6
        while cls.cost < 12:
            t = time.perf_counter()
            bcrypt("x", cls.cost)
            if time.perf_counter() - t >= 0.015:
                break
            cls.cost += 1
        cls.hash = bcrypt("s3cret", cls.cost)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir)

    def config(self, name, text):
        path = os.path.join(self.dir, name)
        write(path, text)
        return path

    def tls_auth_config(self, name="web.yml", extra_tls=""):
        return self.config(name, """tls_server_config:
  cert_file: server1.crt
  key_file: server1.key
%s
http_server_config:
  headers:
    X-Content-Type-Options: nosniff
    X-Frame-Options: deny
basic_auth_users:
  alice: '%s'
""" % (extra_tls, self.hash))

    def test_https_basic_auth_and_plain_http_to_the_tls_port(self):
        ca = ["--cacert", self.pki.path("ca1.crt")]
        with Server(self.tls_auth_config()) as lw:
            rc, code, headers, body = curl(lw.https(), *ca, "-u", "alice:s3cret")
            self.assertEqual((rc, code), (0, 200), body)
            self.assertIn("loadwatch_build_info", body)
            self.assertEqual(headers.get("x-content-type-options"), "nosniff")
            self.assertEqual(headers.get("x-frame-options"), "deny")
            for creds, what in ((["-u", "alice:wrong"], "wrong password"),
                                (["-u", "mallory:s3cret"], "unknown user"),
                                ([], "no credentials"),
                                (["-H", "Authorization: Bearer abc"], "not basic")):
                for path in ("/metrics", "/-/healthy", "/no/such/path"):
                    rc, code, headers, _ = curl(lw.https(path), *ca, *creds)
                    self.assertEqual(code, 401, "%s on %s" % (what, path))
                    self.assertEqual(headers.get("www-authenticate"), "Basic")
                    self.assertEqual(headers.get("x-content-type-options"), "nosniff")
            # Each 401 is counted, and only they (the readiness probe connected without a
            # request); the counters reach /metrics with the next sample.
            def unauthorized():
                body = curl(lw.https(), *ca, "-u", "alice:s3cret")[3]
                return lwtest.parse_metrics(body)[("loadwatch_http_rejected_requests_total",
                                                   frozenset({("reason", "unauthorized")}))]
            lwtest.eventually(lambda: unauthorized() >= 12, what="12 refusals counted")
            self.assertEqual(unauthorized(), 12)
            # Plain HTTP to the TLS port: the handshake fails and the connection is closed at
            # once, without a response (curl: 52 empty reply / 56 recv failure).
            t = time.time()
            rc, code, _, _ = curl(lw.http())
            self.assertIn(rc, (52, 56), "curl exit %d" % rc)
            self.assertEqual(code, 0)
            self.assertLess(time.time() - t, 3)
            # TLS below min_version (TLS12 by default) is refused.
            rc, code, _, _ = curl(lw.https(), *ca, "-u", "alice:s3cret", "--tlsv1.1", "--tls-max", "1.1")
            self.assertNotEqual(rc, 0)
            rc, code, _, _ = curl(lw.https(), *ca, "-u", "alice:s3cret")  # still serving
            self.assertEqual(code, 200)
            self.assertIsNone(lw.proc.poll())

    def test_max_version(self):
        path = self.tls_auth_config("max12.yml", "  max_version: TLS12")
        ca = ["--cacert", self.pki.path("ca1.crt"), "-u", "alice:s3cret"]
        with Server(path) as lw:
            self.assertEqual(curl(lw.https(), *ca, "--tlsv1.2", "--tls-max", "1.2")[1], 200)
            rc, code, _, _ = curl(lw.https(), *ca, "--tlsv1.3")
            self.assertNotEqual(rc, 0)
            self.assertEqual(code, 0)

    def test_cipher_suites(self):
        """TLS 1.2 offers only the configured suites (exporter-toolkit's Go names)."""
        path = self.tls_auth_config("ciphers.yml", "  max_version: TLS12\n"
                                    "  cipher_suites: [TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256]")
        ca = ["--cacert", self.pki.path("ca1.crt"), "-u", "alice:s3cret", "--tls-max", "1.2"]
        with Server(path) as lw:
            rc, code, _, _ = curl(lw.https(), *ca, "--ciphers", "ECDHE-ECDSA-AES128-GCM-SHA256")
            self.assertEqual((rc, code), (0, 200))
            rc, code, _, _ = curl(lw.https(), *ca, "--ciphers", "ECDHE-ECDSA-AES256-GCM-SHA384")
            self.assertNotEqual(rc, 0)
            self.assertEqual(code, 0)
            self.assertIsNone(lw.proc.poll())

    def test_unknown_user_costs_as_much_as_a_wrong_password(self):
        with Server(self.tls_auth_config("timing.yml")) as lw:
            ctx = ssl.create_default_context(cafile=self.pki.path("ca1.crt"))
            conn = http.client.HTTPSConnection("127.0.0.1", lw.port, context=ctx, timeout=10)

            def timed(header):
                for attempt in range(3):
                    try:
                        t = time.perf_counter()
                        conn.request("GET", "/-/healthy", headers={"Authorization": header})
                        r = conn.getresponse()
                        r.read()
                        return r.status, time.perf_counter() - t
                    except (http.client.HTTPException, OSError):
                        conn.close()  # reconnects on the next request
                raise AssertionError("no response")

            timed(basic("alice", "s3cret"))  # handshake and first bcrypt out of the way
            wrong, unknown, right = [], [], []
            for i in range(200):  # interleaved, so load changes hit both alike
                status, dt = timed(basic("alice", "wrong-%d" % i))
                self.assertEqual(status, 401)
                wrong.append(dt)
                status, dt = timed(basic("user-%d" % i, "wrong-%d" % i))
                self.assertEqual(status, 401)
                unknown.append(dt)
                if i % 20 == 0:
                    status, dt = timed(basic("alice", "s3cret"))
                    self.assertEqual(status, 200)
                    right.append(dt)
            conn.close()
            mw, mu, mr = (statistics.median(x) * 1000 for x in (wrong, unknown, right))
            print("bcrypt cost %d: median wrong password %.2f ms, unknown user %.2f ms, "
                  "difference %.2f ms; right password (cached) %.2f ms"
                  % (self.cost, mw, mu, abs(mw - mu), mr))
            # bcrypt ran for the wrong password: the comparison below can tell a skipped one.
            self.assertGreater(mw, 5.0)
            self.assertLess(abs(mw - mu), 5.0)
            self.assertLess(mr, mw / 2)  # successful checks are cached

    def test_stalled_handshakes_are_cut_and_do_not_delay_scrapes(self):
        """300 TLS connections from 127.0.0.2-9: half send nothing, half send a real ClientHello
        (the server does its share of the handshake) and never finish. Scrapes over fresh TLS
        connections meanwhile all answer within 1 s; the stalled ones are closed after the 5 s
        head deadline (handshake included), not before 4 s and within 9 s."""
        with Server(self.tls_auth_config("stall.yml")) as lw:
            hello_ctx = ssl.create_default_context(cafile=self.pki.path("ca1.crt"))
            sel = selectors.DefaultSelector()
            t0 = time.monotonic()
            for i in range(300):
                s = socket.create_connection(("127.0.0.1", lw.port), timeout=5,
                                             source_address=("127.0.0.%d" % (2 + i % 8), 0))
                if i % 2:
                    out = ssl.MemoryBIO()
                    tls = hello_ctx.wrap_bio(ssl.MemoryBIO(), out, server_hostname="localhost")
                    try:
                        tls.do_handshake()
                    except ssl.SSLWantReadError:
                        pass
                    s.sendall(out.read())
                s.setblocking(False)
                sel.register(s, selectors.EVENT_READ)
            opened = time.monotonic() - t0
            ctx = ssl.create_default_context(cafile=self.pki.path("ca1.crt"))
            auth = {"Authorization": basic("alice", "s3cret")}
            times = []
            for _ in range(10):  # within the first 4 s, while every stalled one is held
                t = time.monotonic()
                conn = http.client.HTTPSConnection("127.0.0.1", lw.port, context=ctx, timeout=5)
                conn.request("GET", "/metrics", headers=auth)
                r = conn.getresponse()
                body = r.read()
                conn.close()
                self.assertEqual(r.status, 200)
                self.assertIn(b"loadwatch_build_info", body)
                times.append(time.monotonic() - t)
                time.sleep(0.1)
            closed = []
            while sel.get_map() and time.monotonic() - t0 < 12:
                for key, _ in sel.select(0.2):
                    try:
                        data = key.fileobj.recv(65536)  # the server's half of a handshake
                    except OSError:
                        data = b""
                    if not data:
                        closed.append(time.monotonic() - t0)
                        sel.unregister(key.fileobj)
                        key.fileobj.close()
            for key in list(sel.get_map().values()):
                key.fileobj.close()
            print("300 stalled TLS handshakes (opened in %.1f s): scrapes median %.1f ms, worst "
                  "%.1f ms; stalled ones closed after %.1f-%.1f s" % (
                      opened, statistics.median(times) * 1000, max(times) * 1000,
                      min(closed or [0]), max(closed or [0])))
            self.assertLess(max(times), 1.0)
            self.assertEqual(len(closed), 300)
            self.assertGreaterEqual(min(closed), 4.0)
            self.assertLess(max(closed), 9.0 + opened)
            self.assertIsNone(lw.proc.poll())

    def test_mutual_tls(self):
        path = self.tls_auth_config("mtls.yml", """  client_auth_type: RequireAndVerifyClientCert
  client_ca_file: ca1.crt""")
        ca = ["--cacert", self.pki.path("ca1.crt"), "-u", "alice:s3cret"]
        good = ["--cert", self.pki.path("client1.crt"), "--key", self.pki.path("client1.key")]
        other = ["--cert", self.pki.path("client2.crt"), "--key", self.pki.path("client2.key")]
        with Server(path) as lw:
            self.assertEqual(curl(lw.https(), *ca, *good)[:2], (0, 200))
            rc, code, _, _ = curl(lw.https(), *ca)
            self.assertNotEqual(rc, 0, "a client without a certificate was let in")
            self.assertEqual(code, 0)
            rc, code, _, _ = curl(lw.https(), *ca, *other)
            self.assertNotEqual(rc, 0, "a certificate from an untrusted CA was let in")
            self.assertEqual(code, 0)
            self.assertEqual(curl(lw.https(), *ca, *good)[:2], (0, 200))
        path = self.tls_auth_config("optional.yml", """  client_auth_type: VerifyClientCertIfGiven
  client_ca_file: ca1.crt""")
        with Server(path) as lw:
            self.assertEqual(curl(lw.https(), *ca)[:2], (0, 200))
            self.assertEqual(curl(lw.https(), *ca, *good)[:2], (0, 200))
            self.assertNotEqual(curl(lw.https(), *ca, *other)[0], 0)
        path = self.tls_auth_config("any.yml", "  client_auth_type: RequireAnyClientCert")
        with Server(path) as lw:
            self.assertEqual(curl(lw.https(), *ca, *other)[:2], (0, 200))  # any certificate
            self.assertNotEqual(curl(lw.https(), *ca)[0], 0)               # but one is required

    def test_reload_on_change_without_restart(self):
        d = tempfile.mkdtemp(prefix="lw-reload-", dir=self.dir)
        for f in ("server1.crt", "server1.key"):
            shutil.copy(self.pki.path(f), os.path.join(d, "server.%s" % f.split(".")[1]))
        path = os.path.join(d, "web.yml")
        write(path, "basic_auth_users:\n  alice: '%s'\n" % self.hash)
        with Server(path) as lw:
            pid = lw.proc.pid
            self.assertEqual(curl(lw.http(), "-u", "alice:s3cret")[1], 200)
            # New password: in force within a couple of seconds, the old one refused.
            write(path, "basic_auth_users:\n  alice: '%s'\n" % bcrypt("n3w", 4))
            lwtest.eventually(lambda: curl(lw.http(), "-u", "alice:n3w")[1] == 200,
                              what="new password")
            self.assertEqual(curl(lw.http(), "-u", "alice:s3cret")[1], 401)
            # TLS switched on: same port, now HTTPS only.
            write(path, "tls_server_config: {cert_file: server.crt, key_file: server.key}\n"
                        "basic_auth_users:\n  alice: '%s'\n" % self.hash)
            ca1 = ["--cacert", self.pki.path("ca1.crt"), "-u", "alice:s3cret"]
            lwtest.eventually(lambda: curl(lw.https(), *ca1)[1] == 200, what="TLS on")
            self.assertEqual(curl(lw.http())[1], 0)
            # Certificate rotated in place (same paths, new CA): picked up without a signal.
            shutil.copy(self.pki.path("server2.crt"), os.path.join(d, "server.crt.new"))
            shutil.copy(self.pki.path("server2.key"), os.path.join(d, "server.key"))
            os.rename(os.path.join(d, "server.crt.new"), os.path.join(d, "server.crt"))
            ca2 = ["--cacert", self.pki.path("ca2.crt"), "-u", "alice:s3cret"]
            lwtest.eventually(lambda: curl(lw.https(), *ca2)[1] == 200, what="rotated certificate")
            self.assertNotEqual(curl(lw.https(), *ca1)[0], 0)
            # A broken file is refused; the running config stays, also through SIGHUP.
            write(path, "tls_server_config: {cert_file: server.crt}\n")
            lwtest.eventually(lambda: "web config reload rejected" in lw.output(),
                              what="rejection log")
            lwtest.sighup(lw, "web config reload rejected")
            self.assertEqual(curl(lw.https(), *ca2)[1], 200)
            self.assertIn("missing key_file", lw.output())
            self.assertEqual(lw.proc.pid, pid)
            self.assertIsNone(lw.proc.poll())

    def test_config_check_and_startup_reject_a_bad_file(self):
        path = self.config("bad.yml", "basic_auth_users:\n  alice: hunter2\n")
        p = subprocess.run([BINARY, "--config.check", "--web.config.file=" + path],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=10)
        self.assertEqual(p.returncode, 1)
        self.assertTrue(p.stderr.startswith(path + ":2:10: basic_auth_users:"), p.stderr)
        p = subprocess.run([BINARY, "--web.listen-address=127.0.0.1:%d" % free_port(),
                            "--web.config.file=" + path], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, timeout=10)
        self.assertEqual(p.returncode, 1)
        self.assertIn("not a bcrypt hash", p.stdout)

    def test_shipped_example_passes_promtool_and_loadwatch(self):
        d = tempfile.mkdtemp(prefix="lw-example-", dir=self.dir)
        example = os.path.join(d, "web-config.yml")
        shutil.copy(os.path.join(SOURCE_DIR, "config", "web-config.example.yml"), example)
        shutil.copy(self.pki.path("server1.crt"), os.path.join(d, "loadwatch.crt"))
        shutil.copy(self.pki.path("server1.key"), os.path.join(d, "loadwatch.key"))
        p = subprocess.run(["promtool", "check", "web-config", example], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, timeout=30)
        self.assertEqual(p.returncode, 0, p.stdout)
        self.assertIn("SUCCESS", p.stdout)
        p = subprocess.run([BINARY, "--config.check", "--web.config.file=" + example],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=10)
        self.assertEqual(p.returncode, 0, p.stdout)
        with Server(example) as lw:  # the documented example password works
            rc, code, headers, _ = curl(lw.https(), "--cacert", self.pki.path("ca1.crt"),
                                        "-u", "prometheus:change-me")
            self.assertEqual(code, 200)
            self.assertIn("max-age", headers.get("strict-transport-security", ""))

    def test_real_prometheus_scrapes_over_tls_with_basic_auth(self):
        with Server(self.tls_auth_config("prom.yml")) as lw:
            pdir = tempfile.mkdtemp(prefix="lw-prom-", dir=self.dir)
            with open(os.path.join(pdir, "pw"), "w") as f:
                f.write("s3cret")
            with open(os.path.join(pdir, "bad"), "w") as f:
                f.write("wrong")
            target = "127.0.0.1:%d" % lw.port

            def job(name, scheme, password_file):
                return {"job_name": name, "scheme": scheme, "scrape_interval": "1s",
                        "scrape_timeout": "1s",
                        "tls_config": {"ca_file": self.pki.path("ca1.crt")},
                        "basic_auth": {"username": "alice",
                                       "password_file": os.path.join(pdir, password_file)},
                        "static_configs": [{"targets": [target]}]}
            config = {"global": {"scrape_interval": "1s"},
                      "scrape_configs": [job("good", "https", "pw"), job("badpass", "https", "bad"),
                                         job("plain", "http", "pw")]}
            with open(os.path.join(pdir, "prometheus.yml"), "w") as f:
                json.dump(config, f)  # JSON is YAML
            port = free_port()
            prom = subprocess.Popen(
                ["prometheus", "--config.file=" + os.path.join(pdir, "prometheus.yml"),
                 "--storage.tsdb.path=" + os.path.join(pdir, "data"),
                 "--web.listen-address=127.0.0.1:%d" % port],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            try:
                def targets():
                    try:
                        with urllib.request.urlopen("http://127.0.0.1:%d/api/v1/targets" % port,
                                                    timeout=2) as r:
                            active = json.load(r)["data"]["activeTargets"]
                    except OSError:
                        return None
                    health = {t["labels"]["job"]: (t["health"], t["lastError"]) for t in active}
                    if len(health) == 3 and all(h != "unknown" for h, _ in health.values()):
                        return health
                    return None
                health = lwtest.eventually(targets, timeout=40, what="prometheus to scrape")
                print("prometheus targets:", health)
                self.assertEqual(health["good"][0], "up", health)
                self.assertEqual(health["badpass"][0], "down")
                self.assertIn("401", health["badpass"][1])
                self.assertEqual(health["plain"][0], "down")
            finally:
                prom.terminate()
                try:
                    prom.wait(10)
                except subprocess.TimeoutExpired:
                    prom.kill()
                    prom.wait()


if __name__ == "__main__":
    lwtest.main(verbosity=2)
