"""Files, config and selectors against the real daemon: what a local user, an unlucky file
system or a half-written file can do must neither crash loadwatch, nor stall its sampler, nor
turn its monitoring, TLS or authentication off (docs/limits.md "Files, config and selectors").
Loopback only; every process started here is stopped by its PID."""
import os
import resource
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.error
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from lwtest import BINARY, Loadwatch, bcrypt, free_port, http_get, serve  # noqa: E402

MARK = "lwhard%d" % os.getpid()  # in the test processes' command lines: no stranger matches
GOOD_AUTH = "YWxpY2U6czNjcmV0"  # base64 of alice:s3cret, the web config's user


def run(args, timeout=10):
    return subprocess.run([BINARY] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, timeout=timeout)


def write(path, text):
    with open(path, "w") as f:
        f.write(text)
    return path


def replace(path, text):
    """Atomically, as config management tools do (the web config is polled by inode too)."""
    write(path + ".tmp", text)
    os.rename(path + ".tmp", path)


def spawn(argv0, *args):
    """`exec -a ARGV0 sleep ...`: a process with the command line we want."""
    return subprocess.Popen([argv0] + list(args or ["60"]), executable=shutil.which("sleep"))


def sample_time(lw):
    return lw.value("loadwatch_last_sample_timestamp_seconds")


def assert_keeps_sampling(test, lw, seconds=3.0):
    """/-/ready stays 200 and the sample timestamp moves on the whole time."""
    start = sample_time(lw)
    deadline = time.time() + seconds
    while time.time() < deadline:
        test.assertEqual(lw.get("/-/ready")[0], 200, lw.output()[-2000:])
        time.sleep(0.2)
    test.assertGreater(sample_time(lw), start + seconds / 2)


class Selectors(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="lw-hard-sel-")
        self.procs = []

    def tearDown(self):
        for p in self.procs:
            p.kill()
            p.wait()
        shutil.rmtree(self.dir)

    def test_long_cmdline_is_matched_without_a_crash(self):
        # A JVM-like 60,000-byte command line (std::regex overflowed the sampler's stack on it).
        self.procs.append(spawn("node " + "x" * 60000 + " " + MARK + "-server"))
        cfg = write(os.path.join(self.dir, "lw.yml"),
                    "targets:\n  - {name: long, match: {cmdline: 'node .*%s-server'}}\n"
                    "  - {name: prefix, match: {cmdline: '^node x{1000}'}}\n" % MARK)
        with Loadwatch(["--config.file=" + cfg, "--sample.interval=200ms"]) as lw:
            lw.wait_for(lambda s: lw.value("loadwatch_target_up", s, target="long") == 1,
                        what="the long command line matched")
            self.assertEqual(lw.value("loadwatch_target_processes", target="long"), 1)
            self.assertGreaterEqual(lw.value("loadwatch_target_processes", target="prefix"), 1)
            assert_keeps_sampling(self, lw, 1.5)

    def test_catastrophic_pattern_does_not_stall_the_sampler(self):
        # (a+)+$ backtracks exponentially on a's then '!': 7 s with std::regex at 26 a's.
        for n in (26, 40, 100000):
            self.procs.append(spawn("a" * n + "!"))
        cfg = write(os.path.join(self.dir, "lw.yml"),
                    "targets:\n  - {name: cat, match: {cmdline: '(a+)+$'}}\n"
                    "  - {name: self, match: {comm: loadwatch}, children: false}\n")
        with Loadwatch(["--config.file=" + cfg, "--sample.interval=200ms"]) as lw:
            assert_keeps_sampling(self, lw, 3)
            self.assertLess(lw.value("loadwatch_collector_duration_seconds", collector="targets"),
                            0.5)

    def test_nested_group_pattern_is_a_config_error_at_check_and_on_sighup(self):
        pattern = "(" * 20000 + "a" + ")" * 20000
        bad = write(os.path.join(self.dir, "bad.yml"),
                    "targets:\n  - name: deep\n    match: {cmdline: '%s'}\n" % pattern)
        p = run(["--config.file=" + bad, "--config.check"])
        self.assertEqual(p.returncode, 1)
        self.assertEqual(p.stderr.strip(),
                         bad + ":3:22: cmdline regex is 40001 bytes, longer than the 4096 allowed")
        cfg = write(os.path.join(self.dir, "lw.yml"),
                    "targets:\n  - {name: self, match: {comm: loadwatch}}\n")
        with Loadwatch(["--config.file=" + cfg, "--sample.interval=200ms"]) as lw:
            shutil.copy(bad, cfg)
            lw.proc.send_signal(signal.SIGHUP)
            lw.wait_for(lambda s: "config reload rejected" in lw.output(), what="rejection")
            self.assertIn("longer than the 4096 allowed", lw.output())
            self.assertEqual(lw.value("loadwatch_target_up", target="self"), 1)
            assert_keeps_sampling(self, lw, 1)
        # An ECMAScript-only construct names the syntax the pattern must follow.
        write(bad, "targets:\n  - {name: a, match: {cmdline: '(node)\\1'}}\n")
        p = run(["--config.file=" + bad, "--config.check"])
        self.assertEqual(p.returncode, 1)
        self.assertIn("RE2 syntax", p.stderr)


class Files(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="lw-hard-files-")
        self.fds = []

    def tearDown(self):
        for fd in self.fds:
            os.close(fd)
        shutil.rmtree(self.dir)

    def fifo(self, name, writer=True):
        """A FIFO; with `writer`, held open by a writer that never writes (a read would block
        forever, not just an open)."""
        path = os.path.join(self.dir, name)
        os.mkfifo(path)
        if writer:
            self.fds.append(os.open(path, os.O_RDWR | os.O_NONBLOCK))
        return path

    def test_config_fifo_is_refused_at_once(self):
        path = self.fifo("lw.yml", writer=False)
        start = time.time()
        p = run(["--config.file=" + path, "--config.check"])
        self.assertEqual(p.returncode, 1)
        self.assertEqual(p.stderr.strip(),
                         path + ": cannot read config: is a FIFO, not a regular file")
        p = run(["--config.file=" + path, "--web.listen-address=127.0.0.1:%d" % free_port()])
        self.assertEqual(p.returncode, 1)
        self.assertLess(time.time() - start, 5)

    def test_config_swapped_for_a_fifo_neither_blocks_sighup_nor_sigterm(self):
        cfg = write(os.path.join(self.dir, "lw.yml"),
                    "targets:\n  - {name: self, match: {comm: loadwatch}}\n")
        with Loadwatch(["--config.file=" + cfg, "--sample.interval=200ms"]) as lw:
            os.remove(cfg)
            self.fifo("lw.yml")
            lw.proc.send_signal(signal.SIGHUP)
            lw.wait_for(lambda s: "is a FIFO, not a regular file" in lw.output(), what="rejection")
            self.assertEqual(lw.value("loadwatch_target_up", target="self"), 1)
            start = time.time()
            self.assertEqual(lw.stop(), 0)
            self.assertLess(time.time() - start, 3)

    def test_config_as_a_link_to_dev_zero_is_refused(self):
        path = os.path.join(self.dir, "zero.yml")
        os.symlink("/dev/zero", path)
        p = run(["--config.file=" + path, "--config.check"])
        self.assertEqual(p.returncode, 1)
        self.assertIn("is a character device, not a regular file", p.stderr)

    def test_textfiles_and_pidfiles_that_are_fifos_or_links_do_not_stall_the_sampler(self):
        tdir = os.path.join(self.dir, "textfile")
        os.mkdir(tdir)
        write(os.path.join(tdir, "good.prom"), "# TYPE lwhard_good gauge\nlwhard_good 1\n")
        os.mkfifo(os.path.join(tdir, "fifo.prom"))
        self.fds.append(os.open(os.path.join(tdir, "fifo.prom"), os.O_RDWR | os.O_NONBLOCK))
        os.symlink("/dev/zero", os.path.join(tdir, "zero.prom"))
        pid_fifo = self.fifo("fifo.pid")
        pid_zero = os.path.join(self.dir, "zero.pid")
        os.symlink("/dev/zero", pid_zero)
        cfg = write(os.path.join(self.dir, "lw.yml"),
                    "targets:\n  - {name: pf, match: {pidfile: '%s'}}\n"
                    "  - {name: pz, match: {pidfile: '%s'}}\n"
                    "  - {name: self, match: {comm: loadwatch}, children: false}\n"
                    % (pid_fifo, pid_zero))
        with Loadwatch(["--config.file=" + cfg, "--sample.interval=200ms",
                        "--collector.textfile.directory=" + tdir, "--log.level=debug"]) as lw:
            samples = lw.wait_for(lambda s: lw.value("lwhard_good", s) == 1, what="good textfile")
            self.assertEqual(lw.value("loadwatch_textfile_scrape_error", samples), 1)
            self.assertEqual(lw.value("loadwatch_target_up", samples, target="pf"), 0)
            self.assertEqual(lw.value("loadwatch_target_up", samples, target="pz"), 0)
            self.assertEqual(lw.value("loadwatch_target_up", samples, target="self"), 1)
            assert_keeps_sampling(self, lw, 2)
            out = lw.output()
            self.assertIn("fifo.prom: is a FIFO, not a regular file", out)
            self.assertIn("zero.prom: is a symlink, which is not followed here", out)
            # The good file swapped for a FIFO while running.
            os.remove(os.path.join(tdir, "good.prom"))
            os.mkfifo(os.path.join(tdir, "good.prom"))
            self.fds.append(os.open(os.path.join(tdir, "good.prom"), os.O_RDWR | os.O_NONBLOCK))
            lw.wait_for(lambda s: ("lwhard_good", frozenset()) not in s, what="FIFO skipped")
            assert_keeps_sampling(self, lw, 1)


class FailClosed(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="lw-hard-fail-")
        subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                        "ec_paramgen_curve:P-256", "-nodes", "-days", "2", "-subj", "/CN=localhost",
                        "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", "tls.key", "-out",
                        "tls.crt"], cwd=cls.dir, check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, timeout=30)
        cls.web = ("tls_server_config: {cert_file: tls.crt, key_file: tls.key}\n"
                   "basic_auth_users:\n  alice: '%s'\n" % bcrypt("s3cret", 4))

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir)

    def https_status(self, port, auth=None):
        ctx = ssl.create_default_context(cafile=os.path.join(self.dir, "tls.crt"))
        req = urllib.request.Request("https://127.0.0.1:%d/metrics" % port)
        if auth:
            req.add_header("Authorization", "Basic " + auth)
        try:
            with urllib.request.urlopen(req, context=ctx, timeout=5) as r:
                return r.status
        except urllib.error.HTTPError as e:
            return e.code

    def wait_for_https(self, port, auth, timeout=15):
        deadline = time.time() + timeout
        while time.time() < deadline:
            try:
                if self.https_status(port, auth) == 200:
                    return
            except OSError:
                pass
            time.sleep(0.1)
        self.fail("no HTTPS 200 on port %d in %ds" % (port, timeout))

    def plain_http_refused(self, port):
        try:
            http_get("http://127.0.0.1:%d/metrics" % port, timeout=3)
        except OSError:
            return True  # a TLS port does not answer plain HTTP
        return False

    def test_web_config_directory_or_empty_is_refused_at_start(self):
        empty = write(os.path.join(self.dir, "empty.yml"), "")
        cut = write(os.path.join(self.dir, "cut.yml"), "tls_server_config:\n")
        for path, why in ((self.dir, "is a directory, not a regular file"),
                          (empty, "the web config is empty"),
                          (cut, "tls_server_config is empty")):
            p = run(["--config.check", "--web.config.file=" + path])
            self.assertEqual(p.returncode, 1, path)
            self.assertIn(why, p.stderr)
            p = run(["--web.config.file=" + path, "--web.listen-address=127.0.0.1:%d" % free_port()])
            self.assertEqual(p.returncode, 1, path)
            self.assertIn(why, p.stdout + p.stderr)
        dup = write(os.path.join(self.dir, "dup.yml"), self.web + "basic_auth_users: {}\n")
        p = run(["--config.check", "--web.config.file=" + dup])
        self.assertEqual(p.returncode, 1)
        self.assertEqual(p.stderr.strip(), dup + ":4:1: duplicate key \"basic_auth_users\"")

    def test_web_config_emptied_or_truncated_while_running_keeps_tls_and_auth(self):
        path = write(os.path.join(self.dir, "web.yml"), self.web)
        with Loadwatch(["--web.config.file=" + path, "--target=self=comm:loadwatch"],
                       wait_ready=False) as lw:
            self.wait_for_https(lw.port, GOOD_AUTH)
            self.assertEqual(self.https_status(lw.port, GOOD_AUTH), 200)
            for text, why in (("", "the web config is empty"),
                              ("tls_server_config:\n", "tls_server_config is empty"),
                              ("basic_auth_users:\n  alice: $2b$04$abc", "not a bcrypt hash")):
                replace(path, text)
                deadline = time.time() + 10
                while why not in lw.output() and time.time() < deadline:
                    time.sleep(0.1)
                self.assertIn(why, lw.output())
                lw.proc.send_signal(signal.SIGHUP)
                time.sleep(0.5)
                self.assertEqual(self.https_status(lw.port), 401, text)
                self.assertEqual(self.https_status(lw.port, GOOD_AUTH), 200, text)
                self.assertTrue(self.plain_http_refused(lw.port), text)
            os.remove(path)
            os.mkdir(path)
            lw.proc.send_signal(signal.SIGHUP)
            time.sleep(0.5)
            self.assertEqual(self.https_status(lw.port), 401)
            self.assertIn("is a directory, not a regular file", lw.output())
            os.rmdir(path)

    def test_certificate_swapped_for_a_fifo_keeps_tls_and_sigterm_works(self):
        d = tempfile.mkdtemp(prefix="cert-", dir=self.dir)
        for f in ("tls.crt", "tls.key"):
            shutil.copy(os.path.join(self.dir, f), d)
        path = write(os.path.join(d, "web.yml"), self.web)
        with Loadwatch(["--web.config.file=" + path, "--target=self=comm:loadwatch"],
                       wait_ready=False) as lw:
            self.wait_for_https(lw.port, GOOD_AUTH)
            os.remove(os.path.join(d, "tls.crt"))
            os.mkfifo(os.path.join(d, "tls.crt"))
            writer = os.open(os.path.join(d, "tls.crt"), os.O_RDWR | os.O_NONBLOCK)
            self.addCleanup(os.close, writer)
            deadline = time.time() + 10
            while "is a FIFO, not a regular file" not in lw.output() and time.time() < deadline:
                time.sleep(0.1)
            self.assertIn("cannot load cert_file %s/tls.crt: is a FIFO" % d, lw.output())
            lw.proc.send_signal(signal.SIGHUP)
            time.sleep(0.5)
            self.assertEqual(self.https_status(lw.port, GOOD_AUTH), 200)
            self.assertEqual(self.https_status(lw.port), 401)
            start = time.time()
            self.assertEqual(lw.stop(), 0)
            self.assertLess(time.time() - start, 3)

    def test_empty_config_is_refused_by_check_and_sighup_unless_allowed(self):
        cfg = write(os.path.join(self.dir, "lw.yml"), "")
        p = run(["--config.file=" + cfg, "--config.check"])
        self.assertEqual(p.returncode, 1)
        self.assertIn("no targets and no sources", p.stderr)
        self.assertIn("allow_empty: true", p.stderr)
        write(cfg, "allow_empty: true\n")
        p = run(["--config.file=" + cfg, "--config.check"])
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("config OK: 0 targets, 0 sources", p.stdout)
        # A file that asks only for port monitoring or collector switches is not empty.
        for text in ("tcp: {ports: [9]}\n", "collectors:\n  conntrack: false\n"):
            write(cfg, text)
            p = run(["--config.file=" + cfg, "--config.check"])
            self.assertEqual(p.returncode, 0, text + p.stderr)

        write(cfg, "targets:\n  - {name: self, match: {comm: loadwatch}}\n")
        with Loadwatch(["--config.file=" + cfg, "--sample.interval=200ms"]) as lw:
            lw.wait_for(lambda s: lw.value("loadwatch_target_up", s, target="self") == 1,
                        what="self up")
            for text in ("", "targets:\n", "tcp:\n  ports: []\n"):  # empty, half-written
                write(cfg, text)
                lw.proc.send_signal(signal.SIGHUP)
                time.sleep(0.6)
                self.assertEqual(lw.value("loadwatch_target_up", target="self"), 1, text)
            self.assertEqual(lw.output().count("config reload rejected"), 3, lw.output())
            # Duplicate keys: the second `targets:` was silently ignored before.
            write(cfg, "targets:\n  - {name: self, match: {comm: loadwatch}}\n"
                       "targets:\n  - {name: other, match: {pid: 1}}\n")
            lw.proc.send_signal(signal.SIGHUP)
            lw.wait_for(lambda s: "lw.yml:3:1: duplicate key" in lw.output(),
                        what="duplicate key rejected")
            self.assertEqual(lw.value("loadwatch_target_up", target="self"), 1)
            # Allowed explicitly: applied.
            write(cfg, "allow_empty: true\n")
            lw.proc.send_signal(signal.SIGHUP)
            lw.wait_for(lambda s: not any(n == "loadwatch_target_up" for n, _ in s),
                        what="targets dropped on purpose")


class CountingServer:
    """A Prometheus-format endpoint on loopback that counts its requests and their paths."""

    def __init__(self):
        hits = self.hits = []

        def answer(path):
            hits.append(path)
            return b"# TYPE up_thing gauge\nup_thing 1\n"

        self.server = serve(answer, "text/plain; version=0.0.4")
        self.port = self.server.server_address[1]

    def close(self):
        self.server.shutdown()
        self.server.server_close()


class QuickForms(unittest.TestCase):
    def test_source_url_is_a_value_not_yaml(self):
        srv = CountingServer()
        self.addCleanup(srv.close)
        url = "http://127.0.0.1:%d/m?q='x'" % srv.port
        injected = "http://127.0.0.1:%d/i', interval: 1ms, x: '" % srv.port
        p = run(["--source=q=prometheus," + url, "--source=i=prometheus," + injected,
                 "--config.check"])
        self.assertEqual(p.returncode, 0, p.stderr)
        with Loadwatch(["--source=q=prometheus," + url, "--source=i=prometheus," + injected,
                        "--sample.interval=200ms"]) as lw:
            lw.wait_for(lambda s: lw.value("loadwatch_source_up", s, source="q") == 1,
                        what="the source with a quote in its URL up")
            self.assertIn("/m?q='x'", srv.hits)
            time.sleep(2)
            # The injected URL is one (unfetchable: it has spaces) URL, scraped at the default
            # 5 s interval: one or two attempts, not a thousand a second.
            attempts = sum(v for (n, ls), v in lw.metrics().items()
                           if n == "loadwatch_source_errors_total" and ("source", "i") in ls)
            self.assertGreaterEqual(attempts, 1)
            self.assertLessEqual(attempts, 2)
            self.assertIn("interval: 1ms, x: '", lw.output())  # in the URL of its error
        p = run(["--target=a=cmdline:x', children: false", "--config.check"])
        self.assertEqual(p.returncode, 0, p.stderr)


class FdLimit(unittest.TestCase):
    def test_starts_and_serves_at_ulimit_n_128(self):
        # 200 processes in a target (the tcp collector kept a /proc/PID/fd fd for each) and a
        # port selector, under a hard and soft fd limit of 128.
        parent = subprocess.Popen(["bash", "-c", "for i in $(seq 200); do sleep 60 & done; wait"],
                                  start_new_session=True)  # its own group: stopped together

        def stop_parent():
            os.killpg(parent.pid, signal.SIGKILL)
            parent.wait()
        self.addCleanup(stop_parent)
        listener = socket.socket()
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        self.addCleanup(listener.close)
        lport = listener.getsockname()[1]

        def limit():
            resource.setrlimit(resource.RLIMIT_NOFILE, (128, 128))

        port = free_port()
        lw = subprocess.Popen([BINARY, "--web.listen-address=127.0.0.1:%d" % port,
                               "--target=many=pid:%d" % parent.pid,
                               "--target=listener=port:%d" % lport, "--sample.interval=200ms"],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              preexec_fn=limit)
        try:
            deadline = time.time() + 15
            samples = {}
            while time.time() < deadline:
                self.assertIsNone(lw.poll(), lw.stdout.read().decode() if lw.poll() else "")
                try:
                    status, _, body = http_get("http://127.0.0.1:%d/metrics" % port, timeout=2)
                except OSError:
                    time.sleep(0.1)
                    continue
                text = body.decode()
                if 'loadwatch_target_processes{target="many"} 201' in text and \
                        'loadwatch_target_up{target="listener"} 1' in text:
                    break
                time.sleep(0.2)
            else:
                self.fail("not serving the targets at ulimit -n 128:\n" + text[-2000:])
            self.assertEqual(http_get("http://127.0.0.1:%d/-/ready" % port)[0], 200)
            with open("/proc/%d/limits" % lw.pid) as f:
                self.assertRegex(f.read(), r"Max open files\s+128\s+128")
            self.assertLess(len(os.listdir("/proc/%d/fd" % lw.pid)), 64)
        finally:
            lw.terminate()
            out = lw.communicate(timeout=10)[0].decode()
        self.assertEqual(lw.returncode, 0, out)
        self.assertIn("kept fds in use", out)


if __name__ == "__main__":
    unittest.main()
