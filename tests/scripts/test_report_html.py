"""The HTML run report in a real browser (Debian's chromium, headless, through chromium-driver
and python3-selenium): the one file, opened over file:// with networking off, draws its charts
and its table, with the knee marked. Saves a screenshot under $LOADWATCH_BUILD_DIR/screenshots/."""
import html.parser
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
from browser import By, offline_browser, webdriver  # noqa: E402


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

# [scale, axis label, the scale's lower bound] of each value axis of each chart.
CHART_AXES = """
const out = {};
for (const [id, u] of Object.entries(window.loadwatchCharts)) {
  out[id] = u.axes.slice(1).map(a => [a.scale, a.label, u.scales[a.scale].min]);
}
return out;
"""

# How opaque the timeline's background is just above its bottom edge (where no line of phase 1
# runs) at two times: the canvas is transparent but for the bands drawn on it.
SHADE_AT = """
const u = window.loadwatchCharts.timeline, out = {};
const y = Math.round(u.bbox.top + u.bbox.height - 3);
for (const [k, t] of [['warmup', arguments[0]], ['stable', arguments[1]]]) {
  const x = Math.round(u.valToPos(t, 'x', true));
  out[k] = u.ctx.getImageData(x, y, 1, 1).data[3];
}
return out;
"""

# A run's time series beside the saved report, as the daemon writes it (reports/ID.timeline.json).
def timeline(report):
    series = {"RPS": [], "p95": [], "CPU app": []}
    t = []
    for p in report["phases"]:
        for i in range(10):
            t.append(p["start"] + i * (p["end"] - p["start"]) / 10)
            series["RPS"].append(p["rps"])
            series["p95"].append(p.get("p95_seconds", 0) * 1000)
            series["CPU app"].append(0.6)
    return {"series": [{"name": "RPS", "unit": "req/s", "t": t, "v": series["RPS"]},
                       {"name": "p95", "unit": "ms", "t": t, "v": series["p95"]},
                       {"name": "CPU app", "unit": "cores", "t": t, "v": series["CPU app"]}]}


# Names that end or blank a <script> element when written raw into it.
HOSTILE = "<!--<script> &amp; </b>"


class ScriptData(html.parser.HTMLParser):
    """The text of <script id="report-data"> as an HTML parser reads it."""

    def __init__(self):
        super().__init__()
        self.inside, self.text = False, ""

    def handle_starttag(self, tag, attrs):
        self.inside = tag == "script" and ("id", "report-data") in attrs

    def handle_endtag(self, tag):
        self.inside = False

    def handle_data(self, data):
        if self.inside:
            self.text += data


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

    def test_names_that_would_end_the_script_do_not_blank_the_report(self):
        csv = os.path.join(self.dir, "steps.csv")
        with open(csv, "w") as f:
            f.write(CSV)
        report = json.loads(self.run_lw("capacity", csv, "--format", "json"))
        report["run"] = {"id": "r1", "name": HOSTILE}
        renamed = {p["name"]: HOSTILE + str(i) for i, p in enumerate(report["phases"])}

        def rename(v):  # every mention of a phase (the knees name theirs)
            if isinstance(v, dict):
                return {k: rename(x) for k, x in v.items()}
            if isinstance(v, list):
                return [rename(x) for x in v]
            return renamed.get(v, v) if isinstance(v, str) else v

        report = rename(report)
        for i, p in enumerate(report["phases"]):
            p["start"], p["end"] = 1e9 + 60 * i, 1e9 + 60 * (i + 1)
        saved = os.path.join(self.dir, "run.json")
        with open(saved, "w") as f:
            json.dump(report, f, ensure_ascii=False)  # "<" and "&" written as they are
        tl = timeline(report)
        tl["series"][0]["name"] = HOSTILE
        with open(os.path.join(self.dir, "run.timeline.json"), "w") as f:
            json.dump(tl, f, ensure_ascii=False)
        page = os.path.join(self.dir, "report.html")
        self.run_lw("report", "--file", saved, "--format", "html", "-o", page)
        with open(page) as f:
            text = f.read()
        # Parsed as a browser's tokenizer would, the data element holds all the JSON, and the
        # JSON gives back the same names.
        parser = ScriptData()
        parser.feed(text)
        data = json.loads(parser.text)
        self.assertEqual(data["report"]["run"]["name"], HOSTILE)
        self.assertEqual([p["name"] for p in data["report"]["phases"]],
                         [HOSTILE + str(i) for i in range(len(report["phases"]))])
        self.assertEqual(data["timeline"]["series"][0]["name"], HOSTILE)

        d = offline_browser()
        try:
            d.get("file://" + page)
            self.assertEqual(d.execute_script("return document.body.getAttribute('data-drawn')"),
                             "1", d.get_log("browser"))
            self.assertEqual(d.find_element(By.ID, "title").text, "Run report: " + HOSTILE)
            rows = d.find_elements(By.CSS_SELECTOR, "#phases tr")
            self.assertEqual(len(rows), len(report["phases"]) + 1)
            self.assertIn(HOSTILE + "0", rows[1].text)
            errors = [e for e in d.get_log("browser") if e["level"] == "SEVERE"]
            self.assertEqual(errors, [])
        finally:
            d.quit()
        # Python's parser has no "double-escaped" script state, a browser's has: the page must
        # not depend on it.
        for raw in ("<!--", "<script>", "&amp;"):
            self.assertNotIn(raw, parser.text)

    def test_report_file_offline(self):
        csv = os.path.join(self.dir, "steps.csv")
        with open(csv, "w") as f:
            f.write(CSV)
        report = json.loads(self.run_lw("capacity", csv, "--format", "json"))
        # Phases from a CSV have no times: give them one step each so the time chart has bands.
        for i, p in enumerate(report["phases"]):
            p["start"], p["end"] = 1e9 + 60 * i, 1e9 + 60 * (i + 1)
            p["stable_start"], p["stable_seconds"] = p["start"] + 20, 40
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

        d = offline_browser()
        try:
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
            # Each unit on its own labelled axis, every value axis from 0.
            axes = d.execute_script(CHART_AXES)
            self.assertEqual(axes["timeline"], [["req/s", "req/s", 0], ["ms", "ms", 0],
                                                ["cores", "cores", 0]], axes)
            self.assertEqual([a[2] for a in axes["scaling"]], [0, 0], axes)
            # The stable window is shaded darker than the phase's warm-up.
            p = report["phases"][1]
            shade = d.execute_script(SHADE_AT, (p["start"] + p["stable_start"]) / 2,
                                     (p["stable_start"] + p["end"]) / 2)
            self.assertGreater(shade["stable"], shade["warmup"] + 10, shade)
            # The knee's phase is the one marked row of the phase table, and the sentences the
            # text report writes are on the page (written once, in C++).
            marked = d.find_elements(By.CSS_SELECTOR, "#phases tr.knee")
            self.assertEqual(len(marked), 1)
            self.assertEqual(marked[0].find_elements(By.TAG_NAME, "td")[0].text,
                             report["knee"]["phase"])
            text = self.run_lw("report", "--file", saved, "--format", "table")
            for line in ("Throughput knee:", "Latency knee:", "What saturated first"):
                sentence = next(l.strip("- ") for l in text.splitlines() if line in l)
                self.assertIn(sentence, d.find_element(By.ID, "summary").text)
            self.assertIn("Universal Scalability Law", d.find_element(By.ID, "summary").text)
            errors = [e for e in d.get_log("browser") if e["level"] == "SEVERE"]
            self.assertEqual(errors, [])
            os.makedirs(SHOTS, exist_ok=True)
            d.save_screenshot(os.path.join(SHOTS, "report.png"))
        finally:
            d.quit()

    def test_capacity_html_from_a_csv(self):
        """`capacity --format html`: the same page from a CSV of steps, with no empty section
        for the time series a CSV does not have. The throughput is flat (saturated from the
        first step, within +-4 %): its axis still starts at 0, so the noise stays small."""
        csv = os.path.join(self.dir, "steps.csv")
        with open(csv, "w") as f:
            f.write("users,throughput,p95\n1,208,5\n2,200,10\n4,204,20\n8,196,41\n"
                    "16,201,80\n")
        report = json.loads(self.run_lw("capacity", csv, "--format", "json"))
        page = os.path.join(self.dir, "capacity.html")
        with open(page, "w") as f:
            f.write(self.run_lw("capacity", csv, "--format", "html"))
        d = offline_browser()
        try:
            d.get("file://" + page)
            drawn = d.execute_script("return document.body.getAttribute('data-drawn')")
            self.assertEqual(drawn, "1", d.get_log("browser"))
            pixels = d.execute_script(DRAWN_PIXELS)
            self.assertGreater(pixels["scaling"], 2000, pixels)
            self.assertEqual(pixels["timeline"], -1, "a CSV has no time series to draw")
            self.assertEqual(d.find_elements(By.ID, "timeline-section"), [])
            knee = (report.get("knee") or {}).get("users")
            self.assertEqual(d.find_element(By.ID, "scaling").get_attribute("data-knee-users"),
                             "" if knee is None else str(knee))
            axes = d.execute_script(CHART_AXES)
            self.assertEqual([a[2] for a in axes["scaling"]], [0, 0], axes)
            rows = d.find_elements(By.CSS_SELECTOR, "#phases tr")
            self.assertEqual(len(rows), len(report["phases"]) + 1)
            errors = [e for e in d.get_log("browser") if e["level"] == "SEVERE"]
            self.assertEqual(errors, [])
        finally:
            d.quit()


if __name__ == "__main__":
    lwtest.main()
