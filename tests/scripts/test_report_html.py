"""The HTML run report in a real browser (Debian's chromium, headless, through chromium-driver
and python3-selenium): the one file, opened over file:// with networking off, draws its charts
and its table, with the knee marked. Saves a screenshot under $LOADWATCH_BUILD_DIR/screenshots/."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from lwtest import BINARY, SOURCE_DIR  # noqa: E402
import lwtest  # noqa: E402

try:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
except ImportError:  # reported by the test itself
    webdriver = None

BUILD_DIR = os.environ.get("LOADWATCH_BUILD_DIR", os.path.join(SOURCE_DIR, "build"))
SHOTS = os.path.join(BUILD_DIR, "screenshots")

# Gunther's SPEC SDM91 figures, with a p95 (ms) that grows past the peak: a knee and a USL fit.
CSV = ("users,throughput,p95\n1,64.9,15\n18,995.9,18\n36,1652.4,22\n72,1853.2,39\n"
       "108,1828.9,59\n144,1775.0,81\n216,1702.2,127\n")

DRAWN_PIXELS = """
const out = {};
for (const id of ['scaling', 'timeline']) {
  const c = document.querySelector('#' + id + ' canvas');
  if (!c) { out[id] = -1; continue; }
  const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
  let n = 0;
  for (let i = 0; i < d.length; i += 4) {
    if (d[i + 3] > 0 && !(d[i] > 245 && d[i + 1] > 245 && d[i + 2] > 245)) n++;
  }
  out[id] = n;
}
return out;
"""

# A run's time series beside the saved report, as the daemon writes it (reports/ID.timeline.json).
def timeline(report):
    series = {"RPS": [], "p95": []}
    t = []
    for p in report["phases"]:
        for i in range(10):
            t.append(p["start"] + i * (p["end"] - p["start"]) / 10)
            series["RPS"].append(p["rps"])
            series["p95"].append(p.get("p95_seconds", 0) * 1000)
    return {"series": [{"name": "RPS", "unit": "req/s", "t": t, "v": series["RPS"]},
                       {"name": "p95", "unit": "ms", "t": t, "v": series["p95"]}]}


class ReportHtml(unittest.TestCase):
    def setUp(self):
        if webdriver is None:
            self.fail("python3-selenium missing: run scripts/install-deps test")
        for tool in ("chromium", "chromedriver"):
            self.assertTrue(shutil.which(tool), tool + " missing: run scripts/install-deps test")
        self.dir = tempfile.mkdtemp(prefix="lw-report-html-")

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def run_lw(self, *args):
        p = subprocess.run([BINARY] + list(args), capture_output=True, text=True, timeout=30)
        self.assertEqual(p.returncode, 0, p.stderr)
        return p.stdout

    def test_report_file_offline(self):
        csv = os.path.join(self.dir, "steps.csv")
        with open(csv, "w") as f:
            f.write(CSV)
        report = json.loads(self.run_lw("capacity", csv, "--format", "json"))
        # Phases from a CSV have no times: give them one step each so the time chart has bands.
        for i, p in enumerate(report["phases"]):
            p["start"], p["end"] = 1e9 + 60 * i, 1e9 + 60 * (i + 1)
        saved = os.path.join(self.dir, "run.json")
        with open(saved, "w") as f:
            json.dump(report, f)
        with open(os.path.join(self.dir, "run.timeline.json"), "w") as f:
            json.dump(timeline(report), f)
        page = os.path.join(self.dir, "report.html")
        self.run_lw("report", "--file", saved, "--format", "html", "-o", page)
        with open(page) as f:
            text = f.read()
        self.assertNotIn("http://", text.replace("http://www.w3.org", ""))

        opts = webdriver.ChromeOptions()
        opts.binary_location = shutil.which("chromium")
        for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                  "--window-size=1200,1400", "--hide-scrollbars", "--force-device-scale-factor=1"):
            opts.add_argument(a)
        opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
        d = webdriver.Chrome(service=Service(shutil.which("chromedriver")), options=opts)
        try:
            d.set_window_size(1200, 1400)
            d.execute_cdp_cmd("Network.enable", {})
            d.execute_cdp_cmd("Network.emulateNetworkConditions", {
                "offline": True, "latency": 0, "downloadThroughput": -1, "uploadThroughput": -1})
            d.get("file://" + page)
            drawn = d.execute_script("return document.body.getAttribute('data-drawn')")
            self.assertEqual(drawn, "1", d.get_log("browser"))
            pixels = d.execute_script(DRAWN_PIXELS)
            self.assertGreater(pixels["scaling"], 2000, pixels)
            self.assertGreater(pixels["timeline"], 2000, pixels)
            knee = report["knee"]["users"]
            self.assertEqual(d.find_element(By.ID, "scaling").get_attribute("data-knee-users"),
                             str(knee))
            rows = d.find_elements(By.CSS_SELECTOR, "#phases tr")
            self.assertEqual(len(rows), len(report["phases"]) + 1)
            marked = d.find_elements(By.CSS_SELECTOR, "#phases tr.knee")
            self.assertEqual(len(marked), 1)
            self.assertIn("knee", marked[0].text)
            self.assertIn("USL", d.find_element(By.ID, "summary").text)
            errors = [e for e in d.get_log("browser") if e["level"] == "SEVERE"]
            self.assertEqual(errors, [])
            os.makedirs(SHOTS, exist_ok=True)
            d.save_screenshot(os.path.join(SHOTS, "report.png"))
        finally:
            d.quit()


if __name__ == "__main__":
    lwtest.main()
