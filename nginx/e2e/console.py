#!/usr/bin/python3
"""The operator console (issue #43; docs/console.md) in a real browser: headless Chromium
through `attestctl serve` and real nginx, signed in with the one-time URL `attestctl console
login` prints, against software devices (attest-device).

- Static files: /console/ answers with the CSP (frame-ancestors 'none'), X-Frame-Options DENY,
  Referrer-Policy no-referrer, nosniff and Cache-Control no-cache; /console redirects there.
- Sign-in: the one-time URL lands on /console/ with the token gone from the address bar; the
  session cookie is HttpOnly, Secure, SameSite=Strict, Path=/ and unseen by the page's script.
- Overview: every number of the usage table (and the month's card) is the one GET
  /api/v1/org/usage answers.
- Devices: a device enrolled by attest-device is found by its deviceId and opened; blocked
  with a reason from the page, after which its next refresh (attest-device) is 403 and the page
  says why.
- Flags: a boolean flag flipped with its checkbox is what the device's next GET /api/v1/flags
  answers (false before it).
- Flags: a flag's rule and its override (loaded when its details open) are listed.
- API keys: a key made on the page is shown once and works; revoked on the page, it is refused.
- Tickets: the team's answer typed into the page is what the device that opened the ticket
  reads, as authorType admin.
- Webhooks: a test event sent from the page is queued, and the endpoint's deliveries list it.
- Audit: the page lists the block, the flip and the answer, each by the session's name and role.
- Refusals: no cookie → 401; a state change without X-CSRF-Token → 403 (fetch from the page;
  the same call with it → 200); a viewer's flag change → 403 and the flag unchanged; a session
  of another organization reading this one's app or device → 404 (this organization's session
  → 200); a used one-time URL → refused on the page and 401 to a direct POST; after `attestctl
  console logout --all` the page is sent to login; the Sign out button ends its session.
- Every page at 1280×900 and 390×844: a screenshot into the artifacts directory
  (ATTEST_E2E_ARTIFACTS, default .build/e2e-artifacts/console; also docs/console/ with
  ATTEST_CONSOLE_SCREENSHOTS_TO_DOCS=1), no JavaScript error, and the accessibility pass of
  lib/a11y.js (lang, one h1, a name for every control, no positive tabindex, contrast ≥ 4.5)
  plus Tab from the skip link reaching every control with a visible focus outline; at 390 px
  no sideways scrolling of the page (tables scroll in their own region) and the navigation
  behind a Menu button.
Ends with "console: N passed, M failed"."""
import json
import os
import re
import shutil
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "lib"))
from browser import Browser  # noqa: E402
from check import Tally  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402
from selenium.webdriver.support.ui import Select  # noqa: E402
from stack import ROOT, Stack, app_headers, run_suite  # noqa: E402

T = Tally()
A = app_headers()
APP = f"{A['X-Team-ID']}.{A['X-Bundle-ID']}"
B = app_headers(team="FGHIJ67890", bundle="com.example.other")  # organization "other"
B_APP = f"{B['X-Team-ID']}.{B['X-Bundle-ID']}"
ART = os.environ.get("ATTEST_E2E_ARTIFACTS") or os.path.join(ROOT, ".build", "e2e-artifacts", "console")
DOCS = os.path.join(ROOT, "docs", "console") if os.environ.get("ATTEST_CONSOLE_SCREENSHOTS_TO_DOCS") == "1" else None
A11Y = open(os.path.join(os.path.dirname(__file__), "lib", "a11y.js")).read()
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
       "font-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'")
X = {}  # what the steps share: devices, the API key, the ticket, the browser, URLs


def setup(s):
    s.ctl("org", "add", "acme", "--tier", "pro", "--rate-limit", "0", "--mad-limit", "50")
    s.ctl("app", "add", "--org", "acme", "--team", A["X-Team-ID"], "--bundle", A["X-Bundle-ID"], "--env", "both")
    s.ctl("org", "add", "other", "--tier", "pro", "--rate-limit", "0")
    s.ctl("app", "add", "--org", "other", "--team", B["X-Team-ID"], "--bundle", B["X-Bundle-ID"])
    s.ctl("config", "set", "rateLimits.validatePerIPPerMinute", "0")
    s.ctl("flags", "add", "--app", APP, "--key", "beta", "--type", "bool", "--value", "false")
    s.ctl("flags", "add", "--app", APP, "--key", "color", "--type", "string", "--value", '"green"')
    s.ctl("flags", "env", "add", "--app", APP, "staging")
    s.ctl("flags", "rule", "add", "--app", APP, "--key", "color", "--value", '"blue"', "--when", "riskScore lte 20",
          "--name", "trusted")
    s.ctl("notes", "add", "--app", APP, "--version", "2.1", "--title", "Dark mode", "--body", "Now at night too.")


# --- helpers -----------------------------------------------------------------------------------

def device(s, name):
    """Enrolls a software device; {name, keyId, deviceId, token, state}."""
    p = s.device(s.state(name), "enroll")
    if p.returncode != 0:
        raise RuntimeError(f"enroll {name}: {p.stdout}{p.stderr}")
    return read_device(s, name)


def read_device(s, name):
    with open(s.state(name)) as f:
        st = json.load(f)
    return {"name": name, "keyId": st["keyId"], "deviceId": st["fields"]["deviceId"], "token": st["fields"]["token"],
            "state": s.state(name)}


def as_device(s, d, method, path, body=None):
    return s.http(method, path, {**A, "Authorization": "Bearer " + d["token"]}, body)


def api(s, method, path, body=None):
    return s.http(method, path, {"Authorization": "Bearer " + X["key"]}, body)


def b64url(key_id):
    return key_id.replace("+", "-").replace("/", "_").rstrip("=")


def login_url(s, org, role):
    """`attestctl console login`: (the URL it printed, the token in its fragment)."""
    p = s.ctl("console", "login", "--org", org, "--role", role, "--name", f"e2e {role}", check=False)
    m = re.search(r"(\S*/console/login\.html)#(\S+)", p.stdout)
    if p.returncode != 0 or not m:
        raise RuntimeError(f"attestctl console login --org {org} --role {role}: exit {p.returncode}: {p.stdout}{p.stderr}")
    return m.group(0), m.group(2)


def sign_in(s, b, org, role):
    """A fresh cookie jar, then the one-time URL; True when the console's Overview is shown."""
    printed, token = login_url(s, org, role)
    b.d.delete_all_cookies()
    b.d.get(f"{s.base}/console/login.html#{token}")
    ok = b.wait(lambda d: d.current_url.split("#")[0].endswith("/console/") and b.text("h1") == "Overview", 15)
    return bool(ok), printed, token


def goto(s, b, route, title=None, timeout=10):
    """Opens #/route and waits until its page has loaded: main says it rendered this route
    (data-route) and is no longer busy (the app sets aria-busy "true" while a page's data
    loads), and its h1 is the title; returns the h1."""
    b.d.get(f"{s.base}/console/{route}")
    want = (lambda t: t == title) if title else (lambda t: bool(t))
    def loaded(d):
        main = d.find_elements(By.ID, "main")
        if not main or main[0].get_attribute("aria-busy") != "false" or main[0].get_attribute("data-route") != route:
            return None
        t = b.text("h1")
        return t if want(t) else None
    return b.wait(loaded, timeout)


def alert_text(b):
    el = b.d.find_elements(By.ID, "alert")
    return el[0].text if el and el[0].is_displayed() else ""


# --- the checks -------------------------------------------------------------------------------

def static_files(s):
    r = s.http("GET", "/console/")
    T.check("GET /console/ is 200 text/html", r.status == 200 and r.headers.get("content-type", "").startswith("text/html"), repr(r))
    T.check("/console/: the CSP (self only, frame-ancestors 'none')", r.headers.get("content-security-policy") == CSP,
            r.headers.get("content-security-policy"))
    T.check("/console/: X-Frame-Options DENY, Referrer-Policy no-referrer, nosniff, Cache-Control no-cache",
            (r.headers.get("x-frame-options"), r.headers.get("referrer-policy"), r.headers.get("x-content-type-options"),
             r.headers.get("cache-control")) == ("DENY", "no-referrer", "nosniff", "no-cache"), repr(r.headers))
    r = s.http("GET", "/console/js/app.js")
    T.check("a module is served as JavaScript with the CSP", r.status == 200 and r.headers.get("content-type") == "text/javascript"
            and r.headers.get("content-security-policy") == CSP, repr(r.headers))
    r = s.http("GET", "/console")
    T.check("/console redirects to /console/", r.status == 301 and r.headers.get("location") == "/console/", repr(r.headers))
    r = s.http("GET", "/console/../nginx/site.conf")
    T.check("nothing outside console/ is served", r.status in (400, 404), repr(r))


def no_session(s):
    X["key"] = s.ctl_json("apikey", "create", "--org", "acme")["key"]
    r = s.http("GET", "/api/v1/org/usage")
    T.check("no cookie: GET /api/v1/org/usage is 401", r.status == 401, repr(r))
    r = s.http("GET", "/api/v1/console/session")
    T.check("no cookie: GET /api/v1/console/session is 401", r.status == 401, repr(r))
    b = X["browser"]
    b.d.get(f"{s.base}/console/#/flags")
    T.check("no cookie: the console sends the page to login", bool(b.wait(lambda d: d.current_url.split("#")[0].endswith("/console/login.html"))),
            b.d.current_url)


def devices_and_data(s):
    X["d1"], X["d2"] = device(s, "d1"), device(s, "d2")
    s.ctl("flags", "override", "set", "--app", APP, "--key", "color", "--device", X["d2"]["keyId"], "--value", '"red"',
          "--note", "QA")
    r = as_device(s, X["d2"], "POST", "/api/v1/support/tickets",
                  {"subject": "Cannot log in", "body": "The login button does nothing.", "submitterId": "u2", "deviceHash": "h2"})
    T.check("device 2 opens a ticket (201)", r.status == 201, repr(r))
    X["ticket"] = (r.json or {}).get("id")
    r = as_device(s, X["d2"], "POST", "/api/v1/feedback/features",
                  {"title": "Dark mode", "description": "Please add a dark mode to the app.", "submitterId": "u2", "deviceHash": "h2"})
    X["request"] = (r.json or {}).get("id")
    r = api(s, "POST", "/api/v1/org/webhooks", {"url": "https://127.0.0.1:9/hook", "description": "nobody listens"})
    T.check("a webhook endpoint (201)", r.status == 201, repr(r))
    X["hook"] = (r.json or {}).get("id")


def signs_in(s):
    b = X["browser"]
    ok, printed, token = sign_in(s, b, "acme", "admin")
    X["used"] = token
    T.check("attestctl console login prints <base>/console/login.html#<token>", printed.startswith("http")
            and "/console/login.html#" in printed, printed)
    T.check("the one-time URL signs in: the console's Overview", ok, f"{b.d.current_url} h1={b.text('h1')!r} alert={alert_text(b)!r}")
    T.check("the token is gone from the address bar", token not in b.d.current_url, b.d.current_url)
    who = b.wait(lambda d: b.text("#who"))
    T.check("the header names the organization and the role", who == "acme · admin", repr(who))
    cookies = {c["name"]: c for c in b.d.get_cookies()}
    c = cookies.get("__Host-attestedge_console", {})
    T.check("the session cookie: HttpOnly, Secure, SameSite=Strict, Path=/",
            (c.get("httpOnly"), c.get("secure"), c.get("sameSite"), c.get("path")) == (True, True, "Strict", "/"), repr(c))
    T.check("the page's script cannot read the cookie", "attestedge_console" not in b.d.execute_script("return document.cookie"))


def usage_numbers(s):
    b = X["browser"]
    goto(s, b, "#/overview", "Overview")
    rows = b.wait(lambda d: [[td.text for td in tr.find_elements(By.TAG_NAME, "td")]
                             for tr in d.find_elements(By.CSS_SELECTOR, "#usage-daily tbody tr")] or None)
    u = api(s, "GET", "/api/v1/org/usage").json or {}
    want = [[d["date"], str(d["activeDevices"]), str(d["newDevices"]), str(d["attestations"]), str(d["refreshes"])]
            for d in u.get("daily", [])]
    T.check("overview: the per-day table (active, new, attestations, refreshes) is GET /api/v1/org/usage's daily numbers",
            rows == want and len(want) >= 1, f"page {rows} api {want}")
    T.check("overview: today counts the two enrollments as 2 attestations", want and want[-1][3] == "2", repr(want[-1:]))
    T.check("overview: this month's devices (2) on the page and in the API",
            b.text("[data-usage=activeDevices]") == str(u.get("activeDevices")) == "2", f"{b.text('[data-usage=activeDevices]')} {u}")
    # The chart's bars against the API: one per day and kind, each as tall as its number on one
    # scale (height ÷ value the same for every bar; zero days flat).
    heights = b.d.execute_script(
        "return ['bar-active', 'bar-new'].map(c => [...document.querySelectorAll('svg.chart rect.' + c)]"
        ".map(r => r.height.baseVal.value))")
    values = [[d["activeDevices"] for d in u.get("daily", [])], [d["newDevices"] for d in u.get("daily", [])]]
    scales = {round(h / v, 6) for hs, vs in zip(heights, values) for h, v in zip(hs, vs) if v}
    T.check("overview: the chart draws each day's active and new devices as bars on one scale (the API's numbers)",
            [len(h) for h in heights] == [len(want)] * 2 and len(scales) == 1
            and all(h == 0 for hs, vs in zip(heights, values) for h, v in zip(hs, vs) if not v),
            f"heights {heights} values {values}")


def find_and_block(s):
    b, d1 = X["browser"], X["d1"]
    p = s.device(d1["state"], "refresh")
    T.check("device 1 refreshes before the block (control)", p.returncode == 0, p.stdout + p.stderr)
    goto(s, b, "#/devices", "Devices")
    box = b.d.find_element(By.CSS_SELECTOR, "input[name=q]")
    box.send_keys(d1["deviceId"], Keys.ENTER)
    def searched(d):
        main = d.find_element(By.ID, "main")
        done = main.get_attribute("aria-busy") == "false" and (main.get_attribute("data-route") or "").startswith("#/devices/search/")
        return d.find_elements(By.CSS_SELECTOR, "#main tbody a") if done else None
    link = b.wait(searched)
    T.check("devices: the search by deviceId finds device 1 (one result)", link and len(link) == 1, alert_text(b))
    if not link:
        return
    link[0].click()
    shown = b.wait(lambda d: b.text("h1") == "Device" and b.text("#main dd code"))
    T.check("devices: the device page shows device 1's key", shown == b64url(d1["keyId"]) or shown == d1["keyId"], repr(shown))
    X["device_route"] = b.d.current_url.split("/console/", 1)[1]
    Select(b.d.find_element(By.CSS_SELECTOR, "#device-action select[name=action]")).select_by_value("block")
    b.d.find_element(By.CSS_SELECTOR, "#device-action textarea[name=reason]").send_keys("console e2e: token seen on a forum")
    b.d.find_element(By.CSS_SELECTOR, "#device-action button[type=submit]").click()
    why = b.wait(lambda d: (lambda t: t if t and t.startswith("Refused") else None)(b.text("#device-standing")))
    T.check("devices: after the block the page says refused, with the reason", why and "token seen on a forum" in why,
            f"{why!r} alert={alert_text(b)!r}")
    p = s.device(d1["state"], "refresh")
    T.check("devices: the blocked device's next refresh is 403 (attest-device)", p.returncode != 0 and "HTTP 403" in p.stdout + p.stderr,
            p.stdout + p.stderr)
    # Without an identifier: the app's devices, the refused one first.
    goto(s, b, "#/devices", "Devices")
    first = [td.text for td in b.d.find_elements(By.CSS_SELECTOR, "#main tbody tr:first-child td")]
    T.check("devices: the list without a search shows the app's devices, the blocked one first",
            len(first) >= 6 and first[2] == "blocked" and first[5] == d1["deviceId"]
            and len(b.d.find_elements(By.CSS_SELECTOR, "#main tbody tr")) == 2, repr(first))


def flip_flag(s):
    b, d2 = X["browser"], X["d2"]
    before = as_device(s, d2, "GET", "/api/v1/flags")
    T.check("flags: device 2 reads beta false before the flip", (before.json or {}).get("flags", {}).get("beta") is False, repr(before))
    goto(s, b, "#/flags", "Flags")
    css = "input[data-flag=beta][data-env=production]"
    box = b.wait(lambda d: d.find_elements(By.CSS_SELECTOR, css))
    T.check("flags: one checkbox per environment for the boolean flag",
            len(b.d.find_elements(By.CSS_SELECTOR, "input[data-flag=beta]")) == 2 and box)
    if not box:
        return
    # By keyboard: focus the checkbox and press Space, as someone without a mouse would.
    box[0].send_keys(Keys.SPACE)
    said = b.wait(lambda d: (lambda el: el.text if el.text == "on" and box[0].is_enabled() else None)(
        box[0].find_element(By.XPATH, "following-sibling::span")))
    T.check("flags: the page says on after the click", said == "on", alert_text(b))
    # LMDB: the next call. PostgreSQL: a flags worker may answer from what it cached for about a
    # second more (the hosts suite allows another host's GET 2 s), so poll briefly.
    started, after = time.time(), None
    while time.time() - started < 3:
        after = as_device(s, d2, "GET", "/api/v1/flags")
        if (after.json or {}).get("flags", {}).get("beta") is True:
            break
        time.sleep(0.1)
    T.check("flags: device 2's flags call shows beta true (within 3 s; LMDB: the next call)",
            (after.json or {}).get("flags", {}).get("beta") is True, repr(after))
    print(f"  the flip reached the device's flags call after {time.time() - started:.2f} s", flush=True)
    staging = (api(s, "GET", f"/api/v1/org/flags/beta?app_id={APP}").json or {}).get("values", {})
    T.check("flags: only production changed (staging has no value)", staging == {"production": True}, repr(staging))
    # What would this device get: device 2 by its keyId.
    b.d.find_element(By.CSS_SELECTOR, "#what-would input[name=device]").send_keys(d2["keyId"])
    b.d.find_element(By.CSS_SELECTOR, "#what-would button").click()
    rows = b.wait(lambda d: [[td.text for td in tr.find_elements(By.TAG_NAME, "td")]
                             for tr in d.find_elements(By.CSS_SELECTOR, "#evaluation tbody tr")] or None)
    got = {r[0]: r[1] for r in rows or [] if len(r) >= 2}
    real = (as_device(s, d2, "GET", "/api/v1/flags").json or {}).get("flags", {})
    T.check("flags: what device 2 would get is what it gets (beta true, color its override red)",
            got.get("beta") == "true" and got.get("color") == '"red"' and real == {"beta": True, "color": "red"}
            and "override" in " ".join(r[2] for r in rows if r[0] == "color"), f"{rows} device {real} alert={alert_text(b)!r}")


def flag_details(s):
    """A flag's rules and (loaded when opened) overrides."""
    b = X["browser"]
    goto(s, b, "#/flags", "Flags")
    [summary] = [x for x in b.d.find_elements(By.CSS_SELECTOR, "#main details summary") if x.text.startswith("color:")] or [None]
    if summary is None:
        T.check("flags: the color flag has its details", False, alert_text(b))
        return
    summary.click()
    details = summary.find_element(By.XPATH, "..")
    rows = b.wait(lambda d: details.find_element(By.CSS_SELECTOR, "[data-overrides] tbody").text)
    rules = details.find_element(By.CSS_SELECTOR, "table tbody").text
    T.check("flags: opened, a flag shows its rule and its override", "trusted" in rules and "riskScore lte 20" in rules
            and rows and "device:" + X["d2"]["deviceId"] in rows and '"red"' in rows, f"rules {rules!r} overrides {rows!r}")


def set_value(s):
    """A string flag's value set in another environment with its field (plain text is a string)."""
    b = X["browser"]
    goto(s, b, "#/flags", "Flags")
    css = "input[data-flag=color][data-env=staging]"
    field = b.wait(lambda d: d.find_elements(By.CSS_SELECTOR, css))
    T.check("flags: a field per environment for the string flag", bool(field), alert_text(b))
    if not field:
        return
    field[0].clear()
    field[0].send_keys("purple")
    field[0].find_element(By.XPATH, "following-sibling::button").click()
    values = None
    for _ in range(30):
        values = (api(s, "GET", f"/api/v1/org/flags/color?app_id={APP}").json or {}).get("values", {})
        if values.get("staging") == "purple":
            break
        time.sleep(0.1)
    T.check("flags: the field set color in staging to \"purple\" (production stays green)",
            values == {"production": "green", "staging": "purple"}, f"{values} alert={alert_text(b)!r}")


def api_keys(s):
    """A key made on the page is shown once and works; revoked on the page, it is refused."""
    b = X["browser"]
    goto(s, b, "#/api-keys", "API keys")
    b.d.find_element(By.CSS_SELECTOR, "#main input[name=name]").send_keys("console e2e")
    [create] = [x for x in b.d.find_elements(By.CSS_SELECTOR, "#main button") if x.text == "Create key"]
    create.click()
    key = b.wait(lambda d: b.text("#new-key"))
    T.check("api keys: a new key is shown (aat_…)", bool(key) and key.startswith("aat_"), f"{key!r} alert={alert_text(b)!r}")
    if not key:
        return
    r = s.http("GET", "/api/v1/org/usage", {"Authorization": "Bearer " + key})
    T.check("api keys: the new key reads the usage (200)", r.status == 200, repr(r))
    b.d.refresh()
    b.wait(lambda d: b.text("h1") == "API keys" and d.find_elements(By.CSS_SELECTOR, "#main tbody tr"))
    T.check("api keys: the key is not shown again after a reload", key not in b.d.find_element(By.TAG_NAME, "body").text)
    button = b.wait(lambda d: d.find_element(By.CSS_SELECTOR, f"button[aria-label='Revoke key {key[:12]}']"))
    button.click()
    b.d.switch_to.alert.accept()
    b.wait(lambda d: not d.find_elements(By.CSS_SELECTOR, f"button[aria-label='Revoke key {key[:12]}']"))
    r = s.http("GET", "/api/v1/org/usage", {"Authorization": "Bearer " + key})
    T.check("api keys: revoked from the page, the key is refused (401)", r.status == 401, repr(r))


def answer_ticket(s):
    b, d2, tid = X["browser"], X["d2"], X.get("ticket")
    goto(s, b, "#/tickets", "Tickets")
    link = b.wait(lambda d: [a for a in d.find_elements(By.CSS_SELECTOR, "#main tbody a") if a.text == "Cannot log in"])
    T.check("tickets: the inbox lists device 2's ticket", bool(link), alert_text(b))
    if not link:
        return
    link[0].click()
    b.wait(lambda d: b.text("h1") == "Cannot log in")
    answer = "Thanks: update to 2.1, the button works there."
    b.d.find_element(By.CSS_SELECTOR, "#ticket-reply textarea").send_keys(answer)
    b.d.find_element(By.CSS_SELECTOR, "#ticket-reply button").click()
    shown = b.wait(lambda d: answer in (b.text("#ticket-messages") or ""))
    T.check("tickets: the answer shows in the thread", bool(shown), alert_text(b))
    r = as_device(s, d2, "GET", f"/api/v1/support/tickets/{tid}")
    last = ((r.json or {}).get("messages") or [{}])[-1]
    T.check("tickets: device 2 reads the team's answer (authorType admin) and the ticket awaits its reply",
            (last.get("authorType"), last.get("body"), (r.json or {}).get("status")) == ("admin", answer, "awaiting_reply"), repr(r))


def webhook_test(s):
    b = X["browser"]
    goto(s, b, f"#/webhooks/{X['hook']}", f"Webhook {X['hook']}")
    [btn] = [x for x in b.d.find_elements(By.CSS_SELECTOR, "#main button") if x.text == "Send test event"] or [None]
    if btn is None:
        T.check("webhooks: the endpoint page has Send test event", False, alert_text(b))
        return
    btn.click()
    said = b.wait(lambda d: "Queued webhook.test" in (b.text("#main .notice") or ""))
    T.check("webhooks: Send test event queues webhook.test", bool(said), alert_text(b))
    deadline = time.time() + 10
    while time.time() < deadline:
        log = api(s, "GET", f"/api/v1/org/webhooks/{X['hook']}/deliveries").json or {}
        if any(d["event"] == "webhook.test" and d["attempts"] for d in log.get("deliveries", [])):
            break
        time.sleep(0.3)
    b.d.refresh()
    rows = b.wait(lambda d: [tr.text for tr in d.find_elements(By.CSS_SELECTOR, "#main tbody tr") if "webhook.test" in tr.text])
    T.check("webhooks: the page lists the test delivery with its attempt (connection refused)",
            bool(rows) and ("no answer" in rows[0]), repr(rows))


def audit_trail(s):
    """The audit page lists the changes made from the console, each with the session's name and role."""
    b = X["browser"]
    goto(s, b, "#/audit", "Audit")
    rows = b.wait(lambda d: [[td.text for td in tr.find_elements(By.TAG_NAME, "td")]
                             for tr in d.find_elements(By.CSS_SELECTOR, "#main tbody tr")] or None) or []
    actions = {r[2] for r in rows if len(r) > 2 and "e2e admin" in r[1] and "(admin)" in r[1]}
    T.check("audit: the block, the flag flip and the ticket answer, each by the admin's session",
            {"device.block", "flag.set", "ticket.reply"} <= actions, f"{actions} alert={alert_text(b)!r}")


def csrf_refusal(s):
    b = X["browser"]
    path = f"/api/v1/org/flags/beta?app_id={APP}"
    status, body = b.fetch("PUT", path, {"value": True, "environment": "production"})
    T.check("a state change without X-CSRF-Token is 403", status == 403 and (body or {}).get("code") == "forbidden", f"{status} {body}")
    status, body = b.fetch("PUT", path, {"value": True, "environment": "production"}, csrf=True)
    T.check("the same change with X-CSRF-Token is 200 (control)", status == 200, f"{status} {body}")
    status, body = b.fetch("GET", f"/api/v1/org/flags?app_id={APP}")
    T.check("a read needs no X-CSRF-Token (200)", status == 200, f"{status}")
    # A refusal reaches the alert region with the envelope's message.
    b.d.execute_script("window.location.hash = '#/devices/key/AAAA'")
    said = b.wait(lambda d: alert_text(b))
    T.check("an error answer's message shows in the alert region (role=alert)",
            bool(said) and b.d.find_element(By.ID, "alert").get_attribute("role") == "alert", repr(said))


PAGES = [  # (screenshot name, route: {…} filled from what the steps made)
    ("overview", "#/overview"), ("devices", "#/devices/search/{d1}"), ("device", "{device_route}"), ("apps", "#/apps"),
    ("flags", "#/flags"), ("notes", "#/notes"), ("feedback", "#/feedback"), ("feedback-request", "#/feedback/{request}"),
    ("tickets", "#/tickets"), ("ticket", "#/tickets/{ticket}"), ("webhooks", "#/webhooks"), ("webhook", "#/webhooks/{hook}"),
    ("api-keys", "#/api-keys"), ("audit", "#/audit"),
]


def tab_walk(b):
    """Tab from the skip link through the page: (controls never reached, reached without a
    visible focus indicator, the count of controls)."""
    n = b.d.execute_script("""
      document.querySelectorAll('[data-tab-idx]').forEach(e => delete e.dataset.tabIdx);  // an earlier walk's
      const vis = e => { const s = getComputedStyle(e), r = e.getBoundingClientRect();
        return s.display !== 'none' && s.visibility !== 'hidden' && r.width > 0 && r.height > 0 && !e.closest('[hidden]')
          && !e.closest('details:not([open]) > :not(summary)'); };
      const els = [...document.querySelectorAll('a[href], button, input, select, textarea, summary, [tabindex]')]
        .filter(e => e.getAttribute('tabindex') !== '-1' && !e.disabled && vis(e));
      els.forEach((e, i) => e.dataset.tabIdx = i);
      document.querySelector('.skip').focus();
      return els.length;""")
    reached, unseen = set(), []
    for _ in range(n * 4 + 10):
        idx, visible_focus, desc = b.d.execute_script("""
          const e = document.activeElement, s = getComputedStyle(e);
          const ring = (s.outlineStyle !== 'none' && parseFloat(s.outlineWidth) >= 2) || s.boxShadow !== 'none';
          return [e.dataset ? e.dataset.tabIdx : undefined, ring, e.tagName + ' ' + (e.textContent || e.name || '').trim().slice(0, 30)];""")
        if idx is None:
            break
        if idx in reached and idx == "0":
            break
        if reached and not visible_focus:  # the first is focused by script, not by Tab
            unseen.append(desc)
        reached.add(idx)
        b.d.switch_to.active_element.send_keys(Keys.TAB)
    missing = b.d.execute_script("""return [...document.querySelectorAll('[data-tab-idx]')]
        .filter(e => !arguments[0].includes(e.dataset.tabIdx)).map(e => e.tagName + ' ' + (e.textContent || e.name || '').trim().slice(0, 30));""",
                                 sorted(reached))
    return missing, sorted(set(unseen)), n


def shoot(b, name):
    os.makedirs(ART, exist_ok=True)
    path = os.path.join(ART, name + ".png")
    b.d.save_screenshot(path)
    if DOCS:
        os.makedirs(DOCS, exist_ok=True)
        shutil.copy(path, os.path.join(DOCS, name + ".png"))


def judge(b, name, a11y, tabbing):
    """The accessibility pass and the Tab walk of the page as shown now: their problems are added
    to `a11y` and `tabbing` under `name`; returns the lowest text contrast measured."""
    result = b.d.execute_script(A11Y)
    if result["problems"]:
        a11y.append(f"{name}: {result['problems'][:5]}")
    missing, unseen, n = tab_walk(b)
    if missing or unseen or n == 0:
        tabbing.append(f"{name}: not reached {missing[:5]}, no visible focus {unseen[:5]} ({n} controls)")
    return result["lowestContrast"]


def every_page(s):
    b = X["browser"]
    names = {"d1": X["d1"]["deviceId"], "device_route": X.get("device_route", ""), "request": X.get("request"),
             "ticket": X.get("ticket"), "hook": X.get("hook")}
    b.errors()
    loaded, a11y, tabbing, phone_ok, lowest = [], [], [], [], 21.0
    for name, route in PAGES:
        r = route.format(**names)
        b.desktop()
        title = goto(s, b, r)
        b.settle(0.3)
        failed = b.d.find_elements(By.XPATH, "//p[contains(., 'could not be loaded')]")
        if not title or failed:
            loaded.append(f"{name}: h1={title!r} alert={alert_text(b)!r}")
        shoot(b, f"{name}-desktop")
        lowest = min(lowest, judge(b, name, a11y, tabbing))
        b.phone()
        b.d.execute_script("window.scrollTo(0, 0)")
        b.settle(0.3)
        shoot(b, f"{name}-phone")
        width, view = b.d.execute_script("return [document.documentElement.scrollWidth, innerWidth]")
        if view != 390 or width > view:
            phone_ok.append(f"{name}: page {width} px wide in a {view} px viewport")
        lowest = min(lowest, judge(b, f"{name} (phone)", a11y, tabbing))
    T.check(f"every page loads ({len(PAGES)} pages)", not loaded, "; ".join(loaded))
    T.check(f"screenshots of {len(PAGES)} pages at 1280×900 and 390×844 in {ART}",
            all(os.path.getsize(os.path.join(ART, f"{n}-{k}.png")) > 5000 for n, _ in PAGES for k in ("desktop", "phone")))
    T.check("accessibility: lang, one h1, every control named, no positive tabindex, contrast ≥ 4.5 (both widths)",
            not a11y, "; ".join(a11y))
    print(f"  lowest text contrast measured: {lowest:.2f}", flush=True)
    T.check("keyboard: Tab from the skip link reaches every control, each with a visible focus ring (both widths)",
            not tabbing, "; ".join(tabbing))
    T.check("phone: 390 px viewport, no page wider than it", not phone_ok, "; ".join(phone_ok))
    errors = b.errors()
    T.check("no JavaScript error on any page", not errors, repr(errors[:5]))
    # The navigation behind Menu at 390 px.
    b.phone()
    goto(s, b, "#/overview", "Overview")
    nav = b.d.find_element(By.ID, "nav")
    menu = b.d.find_element(By.ID, "menu-button")
    hidden_first = not nav.is_displayed() and menu.is_displayed()
    menu.click()
    T.check("phone: the navigation is behind the Menu button (aria-expanded follows)",
            hidden_first and nav.is_displayed() and menu.get_attribute("aria-expanded") == "true")
    b.desktop()


def cli_logout(s):
    b = X["browser"]
    listed = s.ctl("console", "sessions", "--org", "acme", check=False)
    T.check("attestctl console sessions lists the session", listed.returncode == 0 and "admin" in listed.stdout,
            listed.stdout + listed.stderr)
    p = s.ctl("console", "logout", "--org", "acme", "--all", check=False)
    T.check("attestctl console logout --org acme --all succeeds", p.returncode == 0, p.stdout + p.stderr)
    goto(s, b, "#/flags")
    T.check("after the logout the page is sent to login",
            bool(b.wait(lambda d: d.current_url.split("#")[0].endswith("/console/login.html"))), b.d.current_url)


def used_url(s):
    b = X["browser"]
    b.d.delete_all_cookies()
    b.d.get(f"{s.base}/console/login.html#{X['used']}")
    said = b.wait(lambda d: alert_text(b))
    T.check("a used one-time URL is refused on the page (the page says it was used)", bool(said) and "used" in said
            and b.d.current_url.split("#")[0].endswith("/console/login.html")
            and not b.d.get_cookies(), repr(said))
    r = s.http("POST", "/api/v1/console/session", body={"token": X["used"]})
    T.check("a used one-time token is 401 to a direct POST", r.status == 401, repr(r))


def viewer(s):
    b = X["browser"]
    ok, _, _ = sign_in(s, b, "acme", "viewer")
    T.check("a viewer signs in", ok, alert_text(b))
    status, _ = b.fetch("GET", f"/api/v1/org/flags?app_id={APP}")
    T.check("a viewer reads the flags (200)", status == 200, str(status))
    status, body = b.fetch("PUT", f"/api/v1/org/flags/beta?app_id={APP}", {"value": False, "environment": "production"}, csrf=True)
    T.check("a viewer's flag change is 403", status == 403, f"{status} {body}")
    value = (api(s, "GET", f"/api/v1/org/flags/beta?app_id={APP}").json or {}).get("values", {}).get("production")
    T.check("the viewer's refused change changed nothing (beta still true)", value is True, repr(value))
    goto(s, b, "#/api-keys", "API keys")
    said = b.wait(lambda d: alert_text(b))
    T.check("a viewer's API keys page shows the server's refusal (403 forbidden) in the alert region",
            bool(said) and "403 forbidden" in said, repr(said))
    goto(s, b, "#/overview", "Overview")
    b.d.find_element(By.ID, "logout").click()
    T.check("Sign out sends the page to login", bool(b.wait(lambda d: d.current_url.split("#")[0].endswith("/console/login.html"))),
            b.d.current_url)
    status, _ = b.fetch("GET", "/api/v1/console/session")
    T.check("after Sign out the session is gone (401)", status == 401, str(status))


def other_org(s):
    b = X["browser"]
    key = b64url(X["d1"]["keyId"])
    ok, _, _ = sign_in(s, b, "acme", "admin")
    own = [b.fetch("GET", f"/api/v1/org/flags?app_id={APP}")[0], b.fetch("GET", f"/api/v1/org/devices/{key}")[0]]
    T.check("acme's session reads its app's flags and its device (200, 200: control)", own == [200, 200], repr(own))
    ok, _, _ = sign_in(s, b, "other", "admin")
    T.check("organization other signs in", ok, alert_text(b))
    theirs = [b.fetch("GET", f"/api/v1/org/flags?app_id={APP}")[0], b.fetch("GET", f"/api/v1/org/devices/{key}")[0]]
    T.check("other's session gets 404 for acme's app and acme's device", theirs == [404, 404], repr(theirs))
    status, _ = b.fetch("GET", f"/api/v1/org/flags?app_id={B_APP}")
    T.check("other's session reads its own app (200)", status == 200, str(status))


def main():
    X["browser"] = Browser()
    try:
        with_stack = Stack(setup=setup, serve_args=["--allow-private-webhooks"])
        steps = [static_files, no_session, devices_and_data, signs_in, usage_numbers, find_and_block, flip_flag, set_value,
                 flag_details, api_keys, answer_ticket, webhook_test, audit_trail, csrf_refusal, every_page, cli_logout, used_url, viewer, other_org]

        def guarded(step):
            def run(s):
                try:
                    step(s)
                except Exception as e:  # noqa: BLE001 - one step's failure is a failed check; the rest still run
                    import traceback
                    traceback.print_exc()
                    T.check(f"{step.__name__} ran to the end", False, repr(e)[:300])
            return run
        return run_suite(T, "console", with_stack, [guarded(x) for x in steps])
    finally:
        X["browser"].quit()


if __name__ == "__main__":
    sys.exit(main())
