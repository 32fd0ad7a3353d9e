"""The live page at / in a real browser (Debian's chromium, headless, through chromium-driver
and python3-selenium), against a real daemon watching a real target (Mountebank) and real
sources (Mountebank and a Locust run driving it). Each test saves a screenshot under
$LOADWATCH_BUILD_DIR/screenshots/. The same peers (started once) also show that the whole
/metrics with real Mountebank 2.9.1 and Locust 2.12.1 sources passes `promtool check metrics`.
Loopback only; every peer is stopped by its PID."""
import base64
import datetime
import http.client
import http.server
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from lwtest import (SOURCE_DIR, Child, Loadwatch, find_mb, free_port, http_get,  # noqa: E402
                    parse_metrics, post_json, promtool_check)
import lwtest  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from test_web_config import Pki, bcrypt  # noqa: E402

try:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By
except ImportError:
    # Debian's python3-selenium lives in the system interpreter; a python3 earlier on PATH
    # (e.g. pyenv) does not see it.
    if os.path.exists("/usr/bin/python3") and \
            os.path.realpath(sys.executable) != os.path.realpath("/usr/bin/python3"):
        os.execv("/usr/bin/python3", ["/usr/bin/python3"] + sys.argv)
    webdriver = None  # reported by each test

BUILD_DIR = os.environ.get("LOADWATCH_BUILD_DIR", os.path.join(SOURCE_DIR, "build"))
SHOTS = os.path.join(BUILD_DIR, "screenshots")


def browser(width, height, auth=None):
    if webdriver is None:
        raise AssertionError("python3-selenium missing: run scripts/install-deps test")
    for tool in ("chromium", "chromedriver"):
        if shutil.which(tool) is None:
            raise AssertionError(tool + " missing: run scripts/install-deps test")
    opts = webdriver.ChromeOptions()
    opts.binary_location = shutil.which("chromium")
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
              "--ignore-certificate-errors", "--window-size=%d,%d" % (width, height),
              "--hide-scrollbars", "--force-device-scale-factor=1"):
        opts.add_argument(a)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    d = webdriver.Chrome(service=Service(shutil.which("chromedriver")), options=opts)
    d.set_window_size(width, height)
    if auth:
        d.execute_cdp_cmd("Network.enable", {})
        d.execute_cdp_cmd("Network.setExtraHTTPHeaders", {"headers": {
            "Authorization": "Basic " + base64.b64encode(auth.encode()).decode()}})
    return d


def shot(driver, name):
    os.makedirs(SHOTS, exist_ok=True)
    driver.save_screenshot(os.path.join(SHOTS, name + ".png"))


# Counts the canvas pixels that are drawn (not transparent, not white) per chart title.
DRAWN_PIXELS = """
const out = {};
for (const el of document.querySelectorAll('.live-chart')) {
  const c = el.querySelector('canvas');
  if (!c) continue;
  const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
  let n = 0;
  for (let i = 0; i < d.length; i += 4) {
    if (d[i + 3] > 0 && !(d[i] > 245 && d[i + 1] > 245 && d[i + 2] > 245)) n++;
  }
  out[el.dataset.title + ' / ' + el.closest('.live-group').querySelector('h3').textContent] = n;
}
return out;
"""
# The charts of the desktop and phone pages (title / group heading).
CHARTS = ("CPU (cores) / Target mb", "RSS / Target mb", "Open fds / Target mb",
          "Threads / Target mb", "Host CPU by mode (cores) / Host",
          "Host softirq (cores) / Host", "TCP connections by state / Host",
          "Ephemeral ports and listen overflows / Host",
          "Requests per second / Source locust", "Latency (s) / Source locust",
          "Errors per second / Source locust", "Users / Source locust",
          "Mock requests per second / Source mb")


def lines_drawn(d, titles):
    """The drawn pixels of each chart once every chart named has drawn a line (axes and grid
    alone draw some pixels, a line hundreds more); None before."""
    pixels = d.execute_script(DRAWN_PIXELS)
    return pixels if all(pixels.get(t, 0) > 500 for t in titles) else None


class BusyProxy:
    """A loopback proxy in front of the daemon, for the page's 503 retry. The daemon answers a
    history read 503 with Retry-After when its answer builders are busy; nothing sizes them (no
    flag: 2 builders, 1 waiting read), and their builds take under a millisecond on a young
    history, so readers from a test fill them only by chance: 6 readers for 4 s turned 45 % of
    a probe's requests away and burnt 5 s of CPU. Here the page's next history read is answered
    503 as the daemon words it, once per Retry-After given to refuse(), and everything else is
    forwarded. Every history read it sees is logged: [monotonic time, path, status, newest
    time of a forwarded answer]."""
    BUSY = (b'{"status":"error","error":"the answer builders are busy with other reads; '
            b'retry later"}\n')

    def __init__(self, port):
        self.port = port
        self.lock = threading.Lock()
        self.waits, self.refused_path, self.log = [], None, []
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self):
                proxy.answer(self)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = "http://127.0.0.1:%d" % self.server.server_address[1]

    def stop(self):
        self.server.shutdown()
        self.server.server_close()

    def refuse(self, waits):
        """The next history read (and its retries: the same path) is refused len(waits) times,
        the i-th with Retry-After waits[i]."""
        with self.lock:
            self.waits, self.refused_path = list(waits), None

    def reads(self):
        with self.lock:
            return list(self.log)

    def answer(self, h):
        data = h.path.startswith("/api/v1/history?")
        wait = None
        with self.lock:
            if data and self.waits and self.refused_path in (None, h.path):
                self.refused_path, wait = h.path, self.waits.pop(0)
        if wait is not None:
            status, headers, body = 503, [("Content-Type", "application/json"),
                                          ("Retry-After", str(wait))], self.BUSY
        else:
            conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
            try:
                conn.request("GET", h.path)
                r = conn.getresponse()
                status, body = r.status, r.read()
                headers = [(k, v) for k, v in r.getheaders()
                           if k.lower() not in ("connection", "keep-alive", "content-length",
                                                "transfer-encoding")]
            finally:
                conn.close()
        if data:
            newest = None
            if status == 200:
                times = json.loads(body)["data"][0]
                newest = times[-1] if times else None
            with self.lock:
                self.log.append([time.monotonic(), h.path, status, newest])
        h.send_response(status)
        for k, v in headers:
            h.send_header(k, v)
        h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        h.wfile.write(body)


# Records every change of the page's status line (its text, "" once removed) with the time
# (performance.now()), so that a line shown for a moment is seen.
WATCH_STATUS = """
window.lwStatus = [];
function statusText() {
  const p = document.getElementById('live-status');
  return p ? p.textContent : '';
}
let shown = statusText();
new MutationObserver(function () {
  const text = statusText();
  if (text !== shown) window.lwStatus.push({text: text, at: performance.now()});
  shown = text;
}).observe(document.getElementById('charts'), {childList: true, subtree: true,
                                               characterData: true});
"""
# The page's history reads as the browser saw them: path, status, start and end times.
HISTORY_READS = """
return performance.getEntriesByType('resource')
  .filter(e => new URL(e.name).pathname === '/api/v1/history')
  .map(e => {const u = new URL(e.name);
             return [u.pathname + u.search, e.responseStatus, e.startTime, e.responseEnd];});
"""


class LivePage(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="lw-live-")
        cls.children = []
        cls.lw = None
        try:
            cls.start_peers()
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def start_peers(cls):
        mb = find_mb()
        if mb is None:
            raise AssertionError("Mountebank not found: run scripts/install-deps test")
        if shutil.which("locust") is None:
            raise AssertionError("locust not found: run scripts/install-deps test")
        admin_port, cls.imposter_port = free_port(), free_port()
        admin = "http://127.0.0.1:%d" % admin_port
        cls.child([mb, "--port", str(admin_port), "--host", "127.0.0.1", "--pidfile",
                   os.path.join(cls.dir, "mb.pid"), "--logfile", os.path.join(cls.dir, "mb.log"),
                   "--loglevel", "warn"], "mb.out")
        lwtest.eventually(lambda: http_get(admin + "/", timeout=1)[0] == 200, 60, what="mountebank")
        # /ok matches a stub; anything else is unmatched (Mountebank's default answer, 200).
        assert post_json(admin + "/imposters", {
            "protocol": "http", "port": cls.imposter_port, "name": "orders api",
            "stubs": [{"predicates": [{"equals": {"path": "/ok"}}],
                       "responses": [{"is": {"statusCode": 200, "body": "ok"}}]}]}) == 201
        web_port = free_port()
        locustfile = os.path.join(cls.dir, "locustfile.py")
        with open(locustfile, "w") as f:
            f.write("from locust import HttpUser, task, constant\n"
                    "class U(HttpUser):\n"
                    "    wait_time = constant(0.05)\n"
                    "    @task(3)\n"
                    "    def ok(self):\n"
                    "        self.client.get('/ok')\n"
                    "    @task\n"
                    "    def nomatch(self):\n"
                    "        self.client.get('/nomatch')\n")
        cls.child(["locust", "-f", locustfile, "--host", "http://127.0.0.1:%d" % cls.imposter_port,
                   "--autostart", "-u", "3", "-r", "3", "-t", "300s", "--web-host", "127.0.0.1",
                   "--web-port", str(web_port), "--loglevel", "WARNING"], "locust.log")
        cls.config = os.path.join(cls.dir, "lw.yml")
        with open(cls.config, "w") as f:
            f.write("targets:\n  - {name: mb, match: 'port:%d'}\n" % cls.imposter_port)
            f.write("sources:\n  - {name: mb, kind: mountebank, url: '%s', interval: 500ms}\n"
                    "  - {name: locust, kind: locust, url: 'http://127.0.0.1:%d', "
                    "interval: 500ms}\n" % (admin, web_port))
        cls.lw = Loadwatch(["--config.file=" + cls.config, "--web.enable-run-api"])
        cls.lw.__enter__()
        cls.lw.wait_for(lambda s: cls.lw.value("loadwatch_generator_users", s, source="locust")
                        == 3 and cls.lw.value("loadwatch_mock_requests_total", s, source="mb",
                                              imposter="http:%d" % cls.imposter_port) > 0,
                        timeout=60, what="locust and mountebank metrics")

    @classmethod
    def child(cls, args, log):
        c = Child(args, os.path.join(cls.dir, log))
        cls.children.append(c)
        return c

    @classmethod
    def tearDownClass(cls):
        if cls.lw:
            cls.lw.__exit__(None, None, None)
        for c in reversed(cls.children):
            c.stop()
        shutil.rmtree(cls.dir)

    def open(self, width, height, url=None, auth=None):
        d = browser(width, height, auth)
        self.addCleanup(d.quit)
        d.get(url or self.lw.url + "/")
        # Charts for the target, the host and both sources, each with a few points drawn.
        lwtest.eventually(lambda: d.execute_script(
            "return document.querySelectorAll('.live-chart canvas').length") >= 12, 20,
            what="charts")
        lwtest.eventually(lambda: lines_drawn(d, CHARTS), 20, what="a line in every chart")
        return d

    def check_clean(self, d, origin):
        severe = [e for e in d.get_log("browser") if e["level"] == "SEVERE"]
        self.assertEqual(severe, [], "console errors")
        origins = d.execute_script(
            "return performance.getEntriesByType('resource').map(e => new URL(e.name).origin)"
            ".concat([location.origin])")
        self.assertEqual(set(origins), {origin}, "requests outside the loadwatch origin")

    def check_drawn(self, d):
        pixels = d.execute_script(DRAWN_PIXELS)
        for title in CHARTS:
            self.assertIn(title, pixels)
            # Axes and grid alone draw some pixels: a drawn line adds hundreds more.
            self.assertGreater(pixels[title], 500, title)
        return pixels

    def test_metrics_with_real_mountebank_and_locust_pass_promtool(self):
        lw, label = self.lw, "http:%d" % self.imposter_port
        samples = lw.wait_for(
            lambda s: lw.value("loadwatch_generator_requests_total", s, source="locust") > 0
            and lw.value("loadwatch_mock_requests_total", s, source="mb", imposter=label) > 0
            and lw.value("loadwatch_mock_unmatched_requests_total", s, source="mb",
                         imposter=label) > 0
            and lw.value("mb_request_total", s, source="mb", imposter=label) > 0,
            timeout=90, what="mountebank and locust metrics")
        self.assertEqual(lw.value("loadwatch_generator_running", samples, source="locust"), 1)
        names = {n for (n, _) in samples}
        self.assertFalse([n for n in names if n.startswith(("mb_process_", "mb_nodejs_"))])
        text = lw.metrics_text()
        ok, out = promtool_check(text)
        self.assertTrue(ok, out)
        self.assertIn('loadwatch_generator_latency_seconds{source="locust",quantile="0.5"}',
                      text)

    def test_desktop_charts_drawn_clean_and_same_origin(self):
        d = self.open(1280, 800)
        pixels = self.check_drawn(d)
        headers = http_get(self.lw.url + "/")[1]
        self.assertIn("default-src 'self'", headers.get("Content-Security-Policy", ""))
        self.assertNotIn("unsafe-inline", headers.get("Content-Security-Policy", ""))
        shot(d, "live_1280x800")
        d.set_window_size(1280, 2400)
        time.sleep(1)  # a screenshot only, nothing asserted: the charts' redraw at the new size
        shot(d, "live_1280_full")
        # The README's picture (docs/img/live.png): the tables and the target's and host's charts.
        box = d.execute_script("""
          const top = document.querySelector('h2').getBoundingClientRect().top + scrollY - 8;
          const host = document.querySelectorAll('.live-group')[1].getBoundingClientRect();
          return [top, host.bottom + scrollY + 8 - top];""")
        png = d.execute_cdp_cmd("Page.captureScreenshot", {
            "format": "png", "captureBeyondViewport": True,
            "clip": {"x": 0, "y": box[0], "width": 1280, "height": box[1], "scale": 0.75}})
        with open(os.path.join(SHOTS, "live_readme.png"), "wb") as f:
            f.write(base64.b64decode(png["data"]))
        self.check_clean(d, self.lw.url)
        self.assertTrue(pixels)

    def test_phone_width(self):
        d = self.open(390, 844)
        self.check_drawn(d)
        widths = d.execute_script(
            "return [...document.querySelectorAll('.live-chart canvas')]"
            ".map(c => c.getBoundingClientRect().right)")
        self.assertLessEqual(max(widths), 390, "a chart overflows a 390 px wide screen")
        self.assertLessEqual(d.execute_script("return document.documentElement.scrollWidth"), 390,
                             "the page scrolls sideways on a 390 px wide screen")
        shot(d, "live_390x844")
        self.check_clean(d, self.lw.url)

    def test_legend_under_cursor_agrees_with_metrics(self):
        # /metrics is read every 100 ms meanwhile: (sample timestamp -> value) per series.
        seen = {}
        stop = threading.Event()
        wanted = {
            "RSS": ("loadwatch_process_resident_memory_bytes", {"target": "mb"}),
            "Open fds": ("loadwatch_process_open_fds", {"target": "mb"}),
            "Users": ("loadwatch_generator_users", {"source": "locust"}),
        }

        def poll():
            while not stop.is_set():
                m = parse_metrics(http_get(self.lw.url + "/metrics")[2].decode())
                ts = m[("loadwatch_last_sample_timestamp_seconds", frozenset())]
                for title, (name, labels) in wanted.items():
                    v = m.get((name, frozenset(labels.items())))
                    if v is not None:
                        seen.setdefault(title, {})[round(ts, 3)] = v
                time.sleep(0.1)

        t = threading.Thread(target=poll)
        t.start()
        try:
            d = self.open(1280, 800)
            for title in wanted:
                group = "Target mb" if title != "Users" else "Source locust"
                el = d.execute_script(
                    "return [...document.querySelectorAll('.live-chart')].find(e => "
                    "e.dataset.title === arguments[0] && e.closest('.live-group')"
                    ".querySelector('h3').textContent === arguments[1])", title, group)
                over = el.find_element(By.CSS_SELECTOR, ".u-over")
                w = over.size["width"]
                # Hover near the right edge: the newest points.
                ActionChains(d).move_to_element_with_offset(over, w // 2 - 3, 0).perform()
                time.sleep(0.2)
                cells = [c.text for c in el.find_elements(By.CSS_SELECTOR, ".u-legend .u-value")]
                when, value = cells[0], cells[1]
                m = re.match(r"(\d{4})-(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)$", when)
                self.assertTrue(m, "legend time %r" % when)
                at = datetime.datetime(*map(int, m.groups())).timestamp()
                # The point's time t is in [at, at + 1) (the legend shows whole seconds): every
                # /metrics value of the samples within one interval (1 s) of it.
                near = [v for ts, v in seen.get(title, {}).items() if at - 1 <= ts < at + 2]
                self.assertTrue(near, "no /metrics sample near %s" % when)
                if title == "RSS":
                    num, unit = value.split()
                    scale = {"B": 1, "KiB": 1024, "MiB": 1 << 20, "GiB": 1 << 30}[unit]
                    shown = float(num) * scale
                    ok = any(abs(shown - v) <= 0.05 * scale + 1 for v in near)
                else:
                    ok = any(float(value) == v for v in near)
                self.assertTrue(ok, "%s: legend %s at %s, /metrics near it: %s"
                                % (title, value, when, near))
            shot(d, "live_legend")
            self.check_clean(d, self.lw.url)
        finally:
            stop.set()
            t.join()

    def test_phase_band_within_2s(self):
        d = self.open(1280, 800)
        post_json(self.lw.url + "/api/v1/runs", {"name": "live page"})
        post_json(self.lw.url + "/api/v1/runs/current/phases", {"name": "step 1", "users": 7})
        t0 = time.time()
        lwtest.eventually(lambda: "7 users" in d.execute_script(
            "return document.getElementById('live-run').textContent") or
            d.execute_script("return document.getElementById('live-run').textContent")
            .endswith("step 1"), 2.0, what="the phase on the page")
        band_pixels = """
          const c = document.querySelector('.live-chart canvas');
          const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
          let n = 0;
          for (let i = 0; i < d.length; i += 4)
            if (Math.abs(d[i] - 70) < 6 && Math.abs(d[i+1] - 130) < 6 && Math.abs(d[i+2] - 180) < 6) n++;
          return n;"""
        # The band is drawn once a sample falls inside the phase: within one interval (1 s).
        lwtest.eventually(lambda: d.execute_script(band_pixels) > 100, 2.0 - (time.time() - t0),
                   what="the phase's band")
        self.assertLess(time.time() - t0, 2.0)
        shot(d, "live_phase")
        post_json(self.lw.url + "/api/v1/runs/current/stop", {})
        self.check_clean(d, self.lw.url)


    def test_busy_history_retried_then_shown(self):
        """A history read answered 503 is asked again after its Retry-After, up to 3 tries;
        the retried answer is drawn, and only a third 503 shows the failure, which goes once
        an update succeeds again."""
        proxy = BusyProxy(self.lw.port)
        self.addCleanup(proxy.stop)
        d = self.open(1280, 800, url=proxy.url + "/")
        d.execute_script(WATCH_STATUS)
        d.execute_script("performance.setResourceTimingBufferSize(1000); "
                         "performance.clearResourceTimings()")

        def browser_reads(path):
            """The browser's reads of `path` from its first 503 on (the same path may have been
            read before, when no new sample had been taken)."""
            seen = [r for r in d.execute_script(HISTORY_READS) if r[0] == path]
            return seen[[r[1] for r in seen].index(503):]

        def after(waits, reads_after):
            """Refuses the next read len(waits) times; returns the proxy's log from the first
            refusal on, once it holds `reads_after` reads after the refusals."""
            start = len(proxy.reads())
            proxy.refuse(waits)

            def settled():
                log = proxy.reads()[start:]
                refused = [i for i, r in enumerate(log) if r[2] == 503]
                log = log[refused[0]:] if refused else []
                return log if len(log) >= len(waits) + reads_after else None
            return lwtest.eventually(settled, 10, what="%d refusals and %d reads after"
                                     % (len(waits), reads_after))

        # Two refusals: the third try is answered and drawn, and no failure is shown.
        log = after([2, 1], 2)
        path = log[0][1]
        self.assertEqual([(r[1], r[2]) for r in log[:3]], [(path, 503), (path, 503), (path, 200)],
                         "the same read, asked three times")
        self.assertGreaterEqual(log[1][0] - log[0][0], 1.95, "Retry-After: 2 not waited")
        self.assertGreaterEqual(log[2][0] - log[1][0], 0.95, "Retry-After: 1 not waited")
        self.assertLess(log[2][0] - log[1][0], 1.9, "a fixed wait, not Retry-After: 1")
        newest = log[2][3]
        self.assertIsNotNone(newest, "the retried answer held no new point")
        # The page took the retried answer's points: its next read asks for what follows them.
        self.assertIn("&since=%s&" % json.dumps(newest), log[3][1])
        seen = browser_reads(path)
        self.assertEqual([r[1] for r in seen], [503, 503, 200], "what the browser got")
        self.assertEqual(d.execute_script("return window.lwStatus"), [], "a failure was shown")

        # Three refusals exhaust the tries: the failure is shown, and goes with the next read.
        d.execute_script("window.lwStatus = []; performance.clearResourceTimings()")
        log = after([1, 1, 1], 1)
        path = log[0][1]
        self.assertEqual([(r[1], r[2]) for r in log[:4]], [(path, 503)] * 3 + [(path, 200)])
        shown = lwtest.eventually(lambda: d.execute_script("return window.lwStatus")[1:], 5,
                                  what="the failure shown, then gone")
        failure = d.execute_script("return window.lwStatus")[0]
        self.assertEqual(failure["text"], "Update failed (%s: HTTP 503); retrying." % path)
        self.assertEqual(shown[0]["text"], "", "the failure line stayed after a good update")
        seen = browser_reads(path)
        self.assertEqual([r[1] for r in seen if r[3] <= failure["at"]], [503] * 3,
                         "the failure shown before the third refusal")
        self.assertEqual([r[1] for r in seen if r[2] >= failure["at"]], [200],
                         "the next update's read")
        self.check_drawn(d)
        shot(d, "live_busy_retried")
        severe = [e["message"] for e in d.get_log("browser") if e["level"] == "SEVERE"]
        self.assertEqual([m for m in severe if "status of 503" not in m], [], "console errors")
        self.assertEqual(len(severe), 5, "one console line per refused read: %s" % severe)


class LivePageTlsAuth(unittest.TestCase):
    def test_tls_and_basic_auth(self):
        d = tempfile.mkdtemp(prefix="lw-live-tls-")
        self.addCleanup(shutil.rmtree, d)
        pki = Pki(d)
        web = os.path.join(d, "web.yml")
        with open(web, "w") as f:
            f.write("tls_server_config:\n  cert_file: %s\n  key_file: %s\n"
                    "basic_auth_users:\n  alice: '%s'\n"
                    % (pki.path("server1.crt"), pki.path("server1.key"), bcrypt("s3cret", 4)))
        lw = Loadwatch(["--web.config.file=" + web, "--target=self=comm:loadwatch"],
                       wait_ready=False)
        with lw:
            origin = "https://127.0.0.1:%d" % lw.port
            lwtest.eventually(lambda: subprocess.run(
                ["curl", "-sfk", "-u", "alice:s3cret", origin + "/-/ready"],
                stdout=subprocess.DEVNULL, timeout=10).returncode == 0, 15, what="TLS daemon")
            self.assertIn("401", subprocess.run(
                ["curl", "-sk", "-o", "/dev/null", "-w", "%{http_code}", origin + "/"],
                stdout=subprocess.PIPE, timeout=10).stdout.decode())
            drv = browser(1280, 800, auth="alice:s3cret")
            self.addCleanup(drv.quit)
            drv.get(origin + "/")
            lwtest.eventually(lambda: drv.execute_script(
                "return document.querySelectorAll('.live-chart canvas').length") >= 8, 20,
                what="charts over TLS")
            pixels = lwtest.eventually(lambda: lines_drawn(drv, ["Threads / Target self"]), 20,
                                       what="a line in the threads chart")
            self.assertGreater(pixels["Threads / Target self"], 500)
            shot(drv, "live_tls_auth")
            severe = [e for e in drv.get_log("browser") if e["level"] == "SEVERE"]
            self.assertEqual(severe, [])


if __name__ == "__main__":
    lwtest.main(verbosity=2)
