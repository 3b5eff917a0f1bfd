#!/usr/bin/python3
"""The console's edge cases in a real browser, found by a review of issue #43 (each failed before
its fix): run by console_edges.sh like console.py (/usr/bin/python3, Debian chromium +
chromium-driver, the release build). It reuses console.py's helpers (setup, sign_in, goto).

- a11y.js itself: a <select> inside an empty <label> is reported unnamed (a select's options
  are not its label), and text at opacity .15 fails the contrast check.
- console.py's goto() waits for the page's data (main's aria-busy and data-route), shown with
  every API answer slowed by 1.5 s: the a11y pass and the API keys step see the real page.
- a second sign-in in another tab: the first tab, not reloaded, still flips a flag (api.js
  reads the new session's CSRF token once and tries again; another org or role reloads).
- a 404 inside /console/ carries the console's CSP and frame headers.
- login.html with a malformed %-escape in its fragment says so and clears the fragment.
Ends with "console_edges: N passed, M failed"."""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "lib"))
import console as C  # noqa: E402  (console.py: its helpers, not its main)
from browser import Browser  # noqa: E402
from check import Tally  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from stack import Stack, run_suite  # noqa: E402

T = Tally()
CSP = C.CSP


def a11y_fixture(s, b, body_markup):
    """Runs lib/a11y.js over /console/login.html with its <body> replaced by `body_markup`
    (built by script: execute_script is not bound by the page's CSP)."""
    b.d.get(f"{s.base}/console/login.html")
    b.wait(lambda d: C.alert_text(b))
    b.d.execute_script("document.body.innerHTML = arguments[0];", body_markup)
    return b.d.execute_script(C.A11Y)


def a11y_blind_spots(s):
    b = C.X["browser"]
    r = a11y_fixture(s, b, "<h1>Fixture</h1><label><select name=s><option>production</option></select></label>")
    T.check("a11y.js: a select in an empty label (no name but its options) is reported", bool(r["problems"]),
            f"problems={r['problems']} (accessibleName takes the wrapping label's textContent, options included)")
    r = a11y_fixture(s, b, "<h1>Fixture</h1><p class=x>faint text</p>")
    b.d.execute_script("document.querySelector('p.x').style.opacity = '0.15'")
    r = b.d.execute_script(C.A11Y)
    T.check("a11y.js: text drawn at opacity .15 (contrast about 1.3:1) is reported", bool(r["problems"]),
            f"problems={r['problems']} lowest={r['lowestContrast']:.2f} (opacity is not in the computation)")


def goto_waits_for_data(s):
    """console.py's goto(route) with no title, as every_page calls it, with every request 1.5 s slower."""
    b = C.X["browser"]
    ok, _, _ = C.sign_in(s, b, "acme", "admin")
    T.check("signed in (control)", ok, C.alert_text(b))
    b.d.execute_cdp_cmd("Network.enable", {})
    b.d.execute_cdp_cmd("Network.emulateNetworkConditions",
                        {"offline": False, "latency": 1500, "downloadThroughput": -1, "uploadThroughput": -1})
    try:
        title = C.goto(s, b, "#/tickets")
        loading = b.d.execute_script("return !!document.querySelector('#main p.muted') && "
                                     "document.querySelector('#main p.muted').textContent === 'Loading…'")
        result = b.d.execute_script(C.A11Y)
        controls = b.d.execute_script("return document.querySelectorAll('#main select, #main button, #main a').length")
        T.check("console.py goto(): returns only once the page's data is shown (API 1.5 s slower)", not loading,
                f"returned h1={title!r} while the page shows 'Loading…'; a11y.js problems={result['problems']} over "
                f"{controls} controls in #main: every_page would pass this page unseen (only settle(0.3) stands between)")
    finally:
        b.d.execute_cdp_cmd("Network.emulateNetworkConditions",
                            {"offline": False, "latency": 0, "downloadThroughput": -1, "uploadThroughput": -1})


def api_keys_step_on_a_slow_api(s):
    """console.py's own api_keys step, unchanged, with every request of the page 1.5 s slower
    (a loaded CI machine): it types into the form right after the h1 shows, before the page's
    GET /api/v1/org/api-keys has answered and the form exists."""
    b = C.X["browser"]
    ok, _, _ = C.sign_in(s, b, "acme", "admin")
    C.goto(s, b, "#/flags", "Flags")  # a page before, as in the suite
    b.d.execute_cdp_cmd("Network.enable", {})
    b.d.execute_cdp_cmd("Network.emulateNetworkConditions",
                        {"offline": False, "latency": 1500, "downloadThroughput": -1, "uploadThroughput": -1})
    before, error = list(C.T.failed), None
    try:
        C.api_keys(s)
    except Exception as e:  # noqa: BLE001 - the finding: the step raises
        error = repr(e).splitlines()[0][:200]
    finally:
        b.d.execute_cdp_cmd("Network.emulateNetworkConditions",
                            {"offline": False, "latency": 0, "downloadThroughput": -1, "uploadThroughput": -1})
    T.check("console.py api_keys step survives a slower API (1.5 s a request)", ok and error is None and C.T.failed == before,
            f"raised {error}; its failed checks {C.T.failed[len(before):]}")


def stale_csrf_after_second_sign_in(s):
    b = C.X["browser"]
    ok, _, _ = C.sign_in(s, b, "acme", "admin")
    C.goto(s, b, "#/flags", "Flags")
    css = "input[data-flag=beta][data-env=staging]"
    box = b.wait(lambda d: d.find_elements(By.CSS_SELECTOR, css))
    T.check("tab 1: the Flags page with beta's staging checkbox (control)", ok and bool(box), C.alert_text(b))
    if not box:
        return
    first = b.d.current_window_handle
    b.d.switch_to.new_window("tab")
    _, token = C.login_url(s, "acme", "admin")
    b.d.get(f"{s.base}/console/login.html#{token}")
    signed = b.wait(lambda d: d.current_url.split("#")[0].endswith("/console/") and b.text("h1") == "Overview", 15)
    T.check("tab 2: a second sign-in, same browser (control)", bool(signed), C.alert_text(b))
    b.d.close()
    b.d.switch_to.window(first)
    box = b.d.find_element(By.CSS_SELECTOR, css)
    box.click()
    b.wait(lambda d: box.is_enabled() and (C.alert_text(b) or box.find_element(By.XPATH, "following-sibling::span").text == "on"))
    state = box.find_element(By.XPATH, "following-sibling::span").text
    T.check("tab 1 (not reloaded): the flag flips after a sign-in in another tab", state == "on",
            f"state={state!r} alert={C.alert_text(b)!r}: api.js keeps the first session's csrf, the cookie is the second's")


def not_found_has_csp(s):
    r = s.http("GET", "/console/no-such-page.html")
    T.check("a 404 inside /console/ is a 404 (control)", r.status == 404, repr(r))
    T.check("a 404 inside /console/ carries the console's CSP and X-Frame-Options",
            r.headers.get("content-security-policy") == CSP and r.headers.get("x-frame-options") == "DENY",
            f"csp={r.headers.get('content-security-policy')!r} xfo={r.headers.get('x-frame-options')!r} "
            f"type={r.headers.get('content-type')!r}")


def malformed_fragment(s):
    b = C.X["browser"]
    b.d.delete_all_cookies()
    b.d.get("about:blank")  # a fresh load, not a hash change of the page before
    b.d.get(f"{s.base}/console/login.html#abc%E0%A4%A")
    said = b.wait(lambda d: C.alert_text(b), 5)
    T.check("login.html: a malformed link is refused with a message and the fragment cleared",
            bool(said) and "#" not in b.d.current_url,
            f"alert={said!r} status={b.text('#status')!r} url={b.d.current_url!r} errors={b.errors()[:2]}")


def main():
    C.X["browser"] = Browser()
    try:
        stack = Stack(setup=C.setup)
        steps = [not_found_has_csp, a11y_blind_spots, malformed_fragment, goto_waits_for_data, api_keys_step_on_a_slow_api, stale_csrf_after_second_sign_in]

        def guarded(step):
            def run(s):
                try:
                    step(s)
                except Exception as e:  # noqa: BLE001 - one step's failure is a failed check
                    import traceback
                    traceback.print_exc()
                    T.check(f"{step.__name__} ran to the end", False, repr(e)[:300])
            return run
        return run_suite(T, "console_edges", stack, [guarded(x) for x in steps])
    finally:
        C.X["browser"].quit()


if __name__ == "__main__":
    sys.exit(main())
