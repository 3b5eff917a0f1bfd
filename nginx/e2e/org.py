#!/usr/bin/env python3
"""End-to-end checks of the org pool (`attest-org`, docs/api.md "The operator console's
organization API") through `attestctl serve`, real nginx and a software device (attest-device):
what org.sh says. Ends with "org: N passed, M failed"."""
import os
import re
import sys
import urllib.parse

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "lib"))
from check import Tally  # noqa: E402
from stack import Stack, app_headers, run_suite  # noqa: E402

T = Tally()
A = app_headers()
APP = f"{A['X-Team-ID']}.{A['X-Bundle-ID']}"
KEYS = {}


def setup(s):
    s.ctl("org", "add", "acme", "--tier", "pro", "--rate-limit", "0")
    s.ctl("app", "add", "--org", "acme", "--team", A["X-Team-ID"], "--bundle", A["X-Bundle-ID"], "--env", "both")
    s.ctl("org", "add", "globex", "--tier", "pro", "--rate-limit", "0")
    s.ctl("app", "add", "--org", "globex", "--team", "ZZZZZ99999", "--bundle", "com.globex.app")
    s.ctl("config", "set", "rateLimits.validatePerIPPerMinute", "0")


def key(s, org):
    return re.search(r"aat_[A-Za-z0-9_-]+", s.ctl("apikey", "create", "--org", org).stdout).group(0)


def org(s, method, path, body=None, who="acme"):
    return s.http(method, path, {"Authorization": "Bearer " + KEYS[who]}, body)


def devices(s):
    KEYS["acme"], KEYS["globex"] = key(s, "acme"), key(s, "globex")
    state = s.state("d1")
    p = s.device(state, "--fingerprint", "fp-e2e-device", "enroll")
    T.check("a software device enrolls", p.returncode == 0, p.stdout + p.stderr)
    shown = s.device(state, "--json", "show")
    device_id = re.search(r'"deviceId"\s*:\s*"([^"]+)"', shown.stdout).group(1)
    r = org(s, "GET", "/api/v1/org/devices?q=" + urllib.parse.quote(device_id))
    found = (r.json or {}).get("devices") or []
    T.check("search by deviceId finds it through nginx (200, one device)", r.status == 200 and len(found) == 1, repr(r))
    if not found:
        return
    kid = found[0]["key_id"]
    KEYS["device"] = kid
    r = org(s, "GET", "/api/v1/org/devices?q=fp-e2e-device")
    T.check("search by fingerprint finds the same key", [d["key_id"] for d in r.json["devices"]] == [kid], repr(r))
    page = org(s, "GET", "/api/v1/org/devices/" + kid)
    T.check("its page: refresh would accept it", page.status == 200 and page.json["standing"]["refused"] is False,
            repr(page))
    p = s.device(state, "refresh")
    T.check("... and its refresh is accepted", p.returncode == 0, p.stdout + p.stderr)
    r = org(s, "POST", f"/api/v1/org/devices/{kid}/actions", {"action": "block", "reason": "e2e: fraud ring"})
    why = ((r.json or {}).get("standing") or {}).get("why", "")
    T.check("an admin blocks it with a reason: the page says refused, and why", r.status == 200
            and r.json["standing"]["refused"] is True and "e2e: fraud ring" in why, repr(r))
    p = s.device(state, "--json", "refresh")
    T.check("... and the device's own refresh is refused as the page says (403 forbidden)",
            p.returncode != 0 and "forbidden" in p.stdout + p.stderr, p.stdout + p.stderr)
    r = org(s, "POST", f"/api/v1/org/devices/{kid}/actions", {"action": "block"})
    T.check("an action without a reason: 400 naming it", r.status == 400 and "reason" in r.json.get("error", ""), repr(r))


def api_keys(s):
    r = org(s, "POST", "/api/v1/org/api-keys", {"name": "e2e console"})
    T.check("an API key is created (201, shown once, Cache-Control no-store)",
            r.status == 201 and r.json["key"].startswith("aat_") and "no-store" in r.headers.get("cache-control", ""),
            repr(r))
    new = r.json["key"]
    T.check("the new key reads the apps", s.http("GET", "/api/v1/org/apps", {"Authorization": "Bearer " + new}).status == 200)
    r = org(s, "DELETE", "/api/v1/org/api-keys/" + new[:12])
    T.check("it is revoked (200)", r.status == 200 and r.json == {"id": new[:12], "revoked": True}, repr(r))
    gone = s.http("GET", "/api/v1/org/apps", {"Authorization": "Bearer " + new})
    T.check("... and answers 401 at once", gone.status == 401, repr(gone))


def apps_and_flags(s):
    r = org(s, "GET", "/api/v1/org/apps")
    T.check("apps: acme's one app with its environments", r.status == 200
            and [a["id"] for a in r.json["apps"]] == [APP] and r.json["apps"][0]["environments"] == ["production", "development"],
            repr(r))
    r = org(s, "POST", f"/api/v1/org/apps/{APP}/claims-test", {"profile": {"appVersion": "2.0"}})
    T.check("claims test of a described profile (200)", r.status == 200 and "custom_claims" in r.json, repr(r))
    s.ctl("flags", "add", "--app", APP, "--key", "beta", "--type", "bool", "--value", "false")
    r = org(s, "GET", f"/api/v1/org/flag-evaluation?app_id={APP}&device_key_id={KEYS.get('device', '')}")
    T.check("the flags pool evaluates the device's flags, with why", r.status == 200
            and r.json["flags"] == {"beta": False} and "default" in r.json["why"]["beta"], repr(r))


def attacker(s):
    kid = KEYS.get("device", "x")
    checks = [("GET", "/api/v1/org/devices/" + kid, None),
              ("POST", f"/api/v1/org/devices/{kid}/actions", {"action": "clear", "reason": "mine now"}),
              ("POST", f"/api/v1/org/apps/{APP}/claims-test", None),
              ("DELETE", "/api/v1/org/api-keys/" + KEYS["acme"][:12], None),
              ("GET", f"/api/v1/org/flag-evaluation?app_id={APP}", None)]
    for method, path, body in checks:
        r = org(s, method, path, body, who="globex")
        T.check(f"another organization's key: {method} {path.split('?')[0]} is 404 not_found",
                r.status == 404 and (r.json or {}).get("code") == "not_found", repr(r))
    r = org(s, "GET", "/api/v1/org/devices?q=" + kid, who="globex")
    T.check("... and its search does not see the device", r.status == 200 and r.json["devices"] == [], repr(r))
    page = org(s, "GET", "/api/v1/org/devices/" + kid)
    T.check("the device is still blocked, acme's key still works", page.status == 200
            and page.json["status"] == "blocked", repr(page))


def audit_and_session(s):
    r = org(s, "GET", "/api/v1/org/audit?limit=500")
    entries = (r.json or {}).get("entries", [])
    blocks = [e for e in entries if e.get("action") == "device.block"]
    T.check("/api/v1/org/audit: the block made through the API is there, by its API key, with its reason",
            r.status == 200 and blocks and blocks[0]["actor"]["kind"] == "api_key" and blocks[0]["detail"],
            repr(r)[:400])
    T.check("... and the CLI's changes, by attestctl",
            any(e["actor"]["kind"] == "cli" for e in entries), repr(entries)[:400])
    r = org(s, "GET", "/api/v1/console/session")
    T.check("/api/v1/console/session without a cookie: 401 from the org pool", r.status == 401
            and (r.json or {}).get("code") == "unauthorized", repr(r))


def main():
    return run_suite(T, "org", Stack(setup=setup), [devices, api_keys, apps_and_flags, attacker, audit_and_session])


if __name__ == "__main__":
    sys.exit(main())
