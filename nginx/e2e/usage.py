#!/usr/bin/env python3
"""End-to-end for monthly-active-device accounting (issue #8) through real nginx with
attest-device. Prints PASS/FAIL per check and a summary; exits 1 on a failure."""
import concurrent.futures
import json
import os
import sys
import threading

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "lib"))
from check import Tally  # noqa: E402
from stack import run_suite, within_one_rate_window, Stack, app_headers  # noqa: E402

T = Tally()
METERED = ("METERED001", "com.example.metered")
RACE = ("RACETEAM01", "com.example.race")
BUCKET = ("BUCKETTEAM", "com.example.bucket")
BEATS = ("BEATSTEAM1", "com.example.beats")


def setup(s):
    s.ctl("config", "set", "rateLimits.validatePerIPPerMinute", "0")
    s.ctl("config", "set", "rateLimits.refreshPerIPPerMinute", "0")
    s.ctl("org", "add", "metered", "--tier", "pro", "--mad-limit", "2", "--grace-days", "0", "--rate-limit", "0",
          "--upgrade-url", "https://example.com/upgrade")
    s.ctl("app", "add", "--org", "metered", "--team", METERED[0], "--bundle", METERED[1])
    s.ctl("org", "add", "racers", "--tier", "pro", "--mad-limit", "10", "--grace-days", "0", "--rate-limit", "0")
    s.ctl("app", "add", "--org", "racers", "--team", RACE[0], "--bundle", RACE[1])
    s.ctl("org", "add", "bucket", "--tier", "pro", "--rate-limit", "5")
    s.ctl("app", "add", "--org", "bucket", "--team", BUCKET[0], "--bundle", BUCKET[1])
    s.ctl("org", "add", "beats", "--tier", "pro", "--rate-limit", "0")
    s.ctl("app", "add", "--org", "beats", "--team", BEATS[0], "--bundle", BEATS[1])


def dev(s, name, *args, app=METERED):
    return s.device(s.state(name), *args, team=app[0], bundle=app[1])


def limits(s):
    for name, fp in [("d1", "fp-1"), ("d2", "fp-2")]:
        p = dev(s, name, "--fingerprint", fp, "enroll")
        T.check(f"device {name} enrolls within the limit of 2", p.returncode == 0, p.stderr)
    p = dev(s, "d3", "--fingerprint", "fp-3", "--json", "enroll")
    body = json.loads(p.stdout or "{}")
    T.check("the third device is refused: 402 quota_exceeded", p.returncode == 1 and body.get("code") == "quota_exceeded", p.stdout + p.stderr)
    T.check("402 carries limit, current and upgradeUrl", body.get("limit") == 2 and body.get("current") == 2
            and body.get("upgradeUrl") == "https://example.com/upgrade", json.dumps(body))
    p = dev(s, "d1-new-key", "--fingerprint", "fp-1", "enroll")
    T.check("a new key on a counted fingerprint is admitted", p.returncode == 0, p.stderr)
    for name in ["d1", "d2"]:
        r = dev(s, name, "refresh")
        h = dev(s, name, "heartbeat")
        T.check(f"counted device {name} keeps refreshing and heartbeating", r.returncode == 0 and h.returncode == 0, r.stderr + h.stderr)
    h = dev(s, "d3", "heartbeat")
    T.check("a device without a token cannot heartbeat", h.returncode != 0)


def repeated_heartbeats(s):
    """A device sends the same token with every heartbeat; each worker checks its signature
    once (server.tokenCacheEntries) and the device on every heartbeat."""
    p = dev(s, "beat", "enroll", app=BEATS)
    T.check("a device enrolls for the heartbeat checks", p.returncode == 0, p.stderr)
    state = json.load(open(s.state("beat")))
    headers = {**app_headers(*BEATS), "Authorization": "Bearer " + state["fields"]["token"]}
    codes = [s.http("POST", "/api/v1/heartbeat", headers, {"sdkVersion": "2.1.0", "appState": "active"}).status for _ in range(8)]
    T.check("8 heartbeats with the same token over 2 workers: all 200", codes == [200] * 8, str(codes))
    other = {**app_headers(*METERED), "Authorization": headers["Authorization"]}
    r = s.http("POST", "/api/v1/heartbeat", other, {})
    T.check("the same token with another app's headers: 401", r.status == 401, repr(r))
    s.ctl("device", "revoke", state["keyId"])
    codes = [s.http("POST", "/api/v1/heartbeat", headers, {}).status for _ in range(6)]
    T.check("after attestctl device revoke, its token is 401 on every worker at once", codes == [401] * 6, str(codes))


def bucket(s):
    within_one_rate_window()
    dev(s, "b1", "enroll", app=BUCKET)  # 1 of the organization's 5 a minute
    c = s.http("GET", "/api/v1/attestation/challenge", app_headers(*BUCKET)).json["challenge"]
    r = s.http("POST", "/api/v1/attestation/refresh", app_headers(*BUCKET),
               json.loads(dev(s, "b1", "body", "refresh", "--challenge", c, app=BUCKET).stdout))
    T.check("a 200 carries X-RateLimit-Limit 5, Remaining 3 and a Reset", r.status == 200 and r.headers.get("x-ratelimit-limit") == "5"
            and r.headers.get("x-ratelimit-remaining") == "3" and 0 < int(r.headers.get("x-ratelimit-reset", "0")) <= 60, repr(r) + str(r.headers))
    seen = []
    for _ in range(5):
        p = dev(s, "b1", "--json", "refresh", app=BUCKET)
        seen.append(json.loads(p.stdout or "{}").get("code", "?") if p.returncode else "ok")
    T.check("the organization's bucket (5/min) answers 429 rate_limited once spent", seen == ["ok"] * 3 + ["rate_limited"] * 2, str(seen))
    c = s.http("GET", "/api/v1/attestation/challenge", app_headers(*BUCKET)).json["challenge"]
    body = json.loads(dev(s, "b1", "body", "refresh", "--challenge", c, app=BUCKET).stdout)
    r = s.http("POST", "/api/v1/attestation/refresh", app_headers(*BUCKET), body)
    h = r.headers
    T.check("the 429 has Retry-After and X-RateLimit-Limit/Remaining/Reset", r.status == 429 and h.get("x-ratelimit-limit") == "5"
            and h.get("x-ratelimit-remaining") == "0" and int(h.get("retry-after", "0")) > 0 and int(h.get("x-ratelimit-reset", "0")) > 0, repr(r) + str(h))


def usage_agrees(s):
    key = s.ctl("apikey", "create", "--org", "metered").stdout.strip()
    T.check("attestctl apikey create prints an aat_ key", key.startswith("aat_") and len(key) == 36, key)
    r = s.http("GET", "/api/v1/org/usage", {"Authorization": "Bearer " + key})
    api = r.json or {}
    cli = s.ctl_json("usage", "--org", "metered")
    T.check("GET /api/v1/org/usage answers 200", r.status == 200, repr(r))
    T.check("the usage API and attestctl usage --json agree", api == cli, f"{api} != {cli}")
    devices = [d for d in s.ctl_json("device", "list") if d.get("appId") == ".".join(METERED)]
    fingerprints = {d.get("fingerprint") for d in devices}
    T.check("activeDevices (2) is the store's distinct fingerprints", api.get("activeDevices") == 2 == len(fingerprints), f"{api.get('activeDevices')} {fingerprints}")
    T.check("the month is at its limit with grace over: onboarding paused", api.get("onboardingPaused") is True and api.get("limit") == 2)
    T.check("per app and per day figures", api.get("apps") == [{"appId": ".".join(METERED), "activeDevices": 2}]
            and sum(d["newDevices"] for d in api.get("daily", [])) == 2, json.dumps(api))
    text = s.ctl("usage", "--org", "metered").stdout
    T.check("attestctl usage prints a table with a bar", "metered" in text and "2 active devices of 2" in text and "█" in text, text)
    csv = s.ctl("usage", "--csv").stdout.splitlines()
    T.check("attestctl usage --csv has a header and a line per org and day", csv[0] == "org,date,new_devices,active_devices,attestations,refreshes" and len(csv) > 3, str(csv[:3]))
    r = s.http("GET", "/api/v1/org/usage", {"Authorization": "Bearer aat_nottherightkeynottherightkey00"})
    T.check("a wrong API key is 401 unauthorized", r.status == 401 and (r.json or {}).get("code") == "unauthorized", repr(r))
    other = s.ctl("apikey", "create", "--org", "racers").stdout.strip()
    r = s.http("GET", "/api/v1/org/usage", {"Authorization": "Bearer " + other})
    T.check("another organization's key sees only its own figures", r.status == 200 and r.json.get("apps", []) in ([], [{"appId": ".".join(RACE), "activeDevices": 10}]), repr(r))
    key_id = key[:12]
    s.ctl("apikey", "revoke", key_id)
    r = s.http("GET", "/api/v1/org/usage", {"Authorization": "Bearer " + key})
    T.check("a revoked key is 401 at once", r.status == 401, repr(r))
    p = s.device(s.state("sim"), "heartbeat", "--api-key", other, "--device-id", "simulator-1")
    T.check("an API-key heartbeat (simulator build) is accepted", p.returncode == 0, p.stderr)
    sdk = s.ctl_json("apikey", "create", "--org", "racers", "--scope", "heartbeat")
    p = s.device(s.state("sim"), "heartbeat", "--api-key", sdk["key"], "--device-id", "simulator-1")
    T.check("a heartbeat-scoped key sends heartbeats", p.returncode == 0 and sdk.get("scope") == "heartbeat", p.stderr + json.dumps(sdk))
    r = s.http("GET", "/api/v1/org/usage", {"Authorization": "Bearer " + sdk["key"]})
    T.check("a heartbeat-scoped key is 403 forbidden on the usage API", r.status == 403 and (r.json or {}).get("code") == "forbidden", repr(r))
    racers = s.ctl_json("usage", "--org", "racers")
    T.check("the API-key device is counted apart, not billed", racers.get("apiKeyDevices") == 1, json.dumps(racers))


def race(s):
    bodies = []
    for i in range(50):
        c = s.http("GET", "/api/v1/attestation/challenge", app_headers(*RACE)).json["challenge"]
        bodies.append(json.loads(dev(s, f"race{i}", "body", "validate", "--challenge", c, app=RACE).stdout))
    barrier = threading.Barrier(len(bodies))

    def send(b):
        barrier.wait()
        return s.http("POST", "/api/v1/attestation/validate", app_headers(*RACE), b)

    with concurrent.futures.ThreadPoolExecutor(len(bodies)) as pool:
        results = list(pool.map(send, bodies))
    codes = sorted(r.status for r in results)
    T.check("50 new devices racing at a limit of 10 (grace 0): exactly 10 admitted", codes.count(200) == 10 and codes.count(402) == 40, str(codes))
    api = s.ctl_json("usage", "--org", "racers")
    T.check("the store counts exactly 10", api.get("activeDevices") == 10, json.dumps(api))


def main():
    return run_suite(T, "usage", Stack(setup=setup), [limits, repeated_heartbeats, bucket, race, usage_agrees])


if __name__ == "__main__":
    sys.exit(main())
