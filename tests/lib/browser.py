"""Headless Chromium for the tests of the HTML pages (Debian's chromium, through
chromium-driver and python3-selenium), with networking off: a page must need nothing but
itself. `webdriver` is None when selenium is not installed."""
import os
import shutil

try:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By  # noqa: F401 (for the tests)
except ImportError:  # reported by the tests themselves
    webdriver = None
    By = None


def offline_browser():
    """Headless Chromium with networking off: the page must need nothing but itself."""
    opts = webdriver.ChromeOptions()
    opts.binary_location = shutil.which("chromium")
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
              "--window-size=1200,1400", "--hide-scrollbars", "--force-device-scale-factor=1"):
        opts.add_argument(a)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    d = webdriver.Chrome(service=Service(shutil.which("chromedriver")), options=opts)
    d.set_window_size(1200, 1400)
    d.execute_cdp_cmd("Network.enable", {})
    d.execute_cdp_cmd("Network.emulateNetworkConditions", {
        "offline": True, "latency": 0, "downloadThroughput": -1, "uploadThroughput": -1})
    return d


def severe_log(d):
    """The browser's SEVERE console entries (script errors, policy violations)."""
    return [e for e in d.get_log("browser") if e["level"] == "SEVERE"]


def save_screenshot(d, build_dir, name):
    """Saves the page under BUILD_DIR/screenshots/NAME for a person to look at."""
    shots = os.path.join(build_dir, "screenshots")
    os.makedirs(shots, exist_ok=True)
    d.save_screenshot(os.path.join(shots, name))
