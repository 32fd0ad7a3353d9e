"""The report of a run across hosts as HTML, in a real browser (headless Chromium, networking
off, over file://): a synthetic fleet from Prometheus (tests/lib/synthetic_fleet.py) whose
generator hosts are named like markup (`<img src=x onerror=...>`). The page must show those
names as text and run nothing (it has no script, and its policy allows none), carry the
verdict the JSON report gives, word for word (written once, in C++), and a row per host.
Saves a screenshot under $LOADWATCH_BUILD_DIR/screenshots/."""
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
from browser import By, offline_browser, save_screenshot, severe_log, webdriver  # noqa: E402
from synthetic_fleet import Fleet  # noqa: E402

BUILD_DIR = os.environ.get("LOADWATCH_BUILD_DIR", os.path.join(SOURCE_DIR, "build"))
HOSTILE = "<img src=x onerror=document.title='owned'>&amp;gen"


class FleetHtml(unittest.TestCase):
    def setUp(self):
        for tool in ("prometheus", "promtool", "chromium", "chromedriver"):
            if not shutil.which(tool):
                self.skipTest(tool + " missing: run scripts/install-deps test")
        if webdriver is None:
            self.skipTest("python3-selenium missing: run scripts/install-deps test")
        self.dir = tempfile.mkdtemp(prefix="lw-fleet-html-")

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def report(self, url, fleet, fmt):
        p = subprocess.run([BINARY, "report", "--prometheus", url, "--run", fleet.run_id,
                            "--format", fmt], capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        return p.stdout

    def test_fleet_report_as_html(self):
        fleet = Fleet(generators=3, targets=2, phases=3, phase_seconds=30, scrape_seconds=2,
                      gen_prefix=HOSTILE)
        with fleet.prometheus(self.dir) as url:
            rep = json.loads(self.report(url, fleet, "json"))
            text = self.report(url, fleet, "html")
        page = os.path.join(self.dir, "fleet.html")
        with open(page, "w") as f:
            f.write(text)
        self.assertNotIn("<img", text)
        self.assertNotIn("<script", text)
        d = offline_browser()
        try:
            d.get("file://" + page)
            self.assertEqual(d.execute_script("return document.images.length"), 0)
            self.assertEqual(d.title, "Run across 5 hosts: " + fleet.run_id)
            self.assertEqual(d.find_element(By.ID, "verdict").text, "Verdict: " + rep["summary"])
            self.assertIn(fleet.saturated_host.instance, rep["summary"])
            hosts = d.find_elements(By.CSS_SELECTOR, "#sections table")[0]
            rows = [r.find_elements(By.TAG_NAME, "td") for r in
                    hosts.find_elements(By.TAG_NAME, "tr")[1:]]
            self.assertEqual([(r[0].text, r[1].text) for r in rows],
                             [(h.instance, h.role) for h in fleet.hosts])
            # A section per host, its name as text.
            headings = [e.text for e in d.find_elements(By.TAG_NAME, "h3")]
            for h in fleet.hosts:
                self.assertIn("%s (%s)" % (h.instance, h.role), headings)
            self.assertEqual(severe_log(d), [])
            save_screenshot(d, BUILD_DIR, "fleet-report.png")
        finally:
            d.quit()


if __name__ == "__main__":
    lwtest.main()
