"""A headless Chromium for the browser suites (Debian's chromium and chromium-driver, driven by
Debian's python3-selenium: run with /usr/bin/python3). Desktop is a 1280×900 window; phone is
Chromium's device emulation at 390×844 (a mobile viewport, as a phone reports it)."""
import json
import time

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

# fetch() from the page: [status, body text]. `csrf` true: X-CSRF-Token from GET
# /api/v1/console/session first, as the console's api.js does.
FETCH = """
const [method, path, body, csrf, done] = arguments;
(async () => {
  const headers = {'Content-Type': 'application/json'};
  if (csrf) {
    const s = await fetch('/api/v1/console/session', {credentials: 'same-origin', cache: 'no-store'});
    headers['X-CSRF-Token'] = (await s.json()).session.csrf;
  }
  const r = await fetch(path, {method, headers, credentials: 'same-origin', cache: 'no-store',
                               body: body === null ? undefined : JSON.stringify(body)});
  done([r.status, await r.text()]);
})().catch(e => done([0, String(e)]));
"""


class Browser:
    def __init__(self):
        o = webdriver.ChromeOptions()
        o.binary_location = "/usr/bin/chromium"
        for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1280,900",
                  "--hide-scrollbars"):
            o.add_argument(a)
        o.set_capability("goog:loggingPrefs", {"browser": "ALL"})
        self.d = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=o)
        self.d.set_script_timeout(30)
        self.desktop()

    def quit(self):
        self.d.quit()

    def desktop(self):
        self.d.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
        self.d.set_window_size(1280, 900)
        # The window's outer size is 1280×900; the viewport inside it is what the page sees.
        w, h = self.d.execute_script("return [innerWidth, innerHeight]")
        if (w, h) != (1280, 900):
            self.d.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                                   {"width": 1280, "height": 900, "deviceScaleFactor": 1, "mobile": False})

    def phone(self):
        self.d.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                               {"width": 390, "height": 844, "deviceScaleFactor": 1, "mobile": True})

    def viewport(self):
        return tuple(self.d.execute_script("return [innerWidth, innerHeight]"))

    def wait(self, condition, timeout=10):
        """condition(driver) until truthy; its value, or None after `timeout` s. An exception
        while polling (an element replaced as the page re-renders) counts as not yet."""
        def poll(d):
            try:
                return condition(d)
            except Exception:  # noqa: BLE001 - stale or missing elements mid-render
                return None
        try:
            return WebDriverWait(self.d, timeout, poll_frequency=0.1).until(poll)
        except Exception:  # noqa: BLE001 - a timeout is a failed check, reported by the caller
            return None

    def text(self, css):
        found = self.d.find_elements(By.CSS_SELECTOR, css)
        return found[0].text if found else None

    def fetch(self, method, path, body=None, csrf=False):
        status, text = self.d.execute_async_script(FETCH, method, path, body, csrf)
        try:
            data = json.loads(text) if text else None
        except ValueError:
            data = None
        return status, data

    def errors(self):
        """The console's JavaScript errors since the last call (a refused fetch's network line is not one)."""
        return [e["message"] for e in self.d.get_log("browser")
                if e.get("level") == "SEVERE" and e.get("source") != "network"]

    def settle(self, seconds=0.2):
        time.sleep(seconds)
