#!/usr/bin/env python3
"""End-to-end for issue 40 items 3 and 5(c): attest-receipts redeems receipts at a local HTTPS
stand-in for Apple (lib/apple_standin.py), which checks every provider token with the
registered key's public half. Prints PASS/FAIL per check and a summary; exits 1 on a failure."""
import base64
import glob
import json
import os
import sys
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "lib"))
from check import Tally  # noqa: E402
from stack import run_suite, Stack  # noqa: E402
from apple_standin import AppleStandIn  # noqa: E402
from receiver import Receiver  # noqa: E402
from cryptography.hazmat.primitives import serialization  # noqa: E402
from cryptography.hazmat.primitives.asymmetric import ec  # noqa: E402

T = Tally()
TEAM, BUNDLE, KEY_ID = "RCPTTEAM01", "com.example.receipts", "RCPTKEY001"
APEX = {}


def setup(s):
    key = ec.generate_private_key(ec.SECP256R1())
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    APEX["key_pem"] = pem
    p8 = os.path.join(s.dir, f"AuthKey_{KEY_ID}.p8")
    fd = os.open(p8, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    os.write(fd, pem)
    os.close(fd)
    APEX["p8"] = p8
    public = key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    apple = AppleStandIn(os.path.join(s.data, "test-ca", "receipts.pem"), TEAM, KEY_ID, public)
    APEX["apple"] = apple
    s.ctl("org", "add", "rcpt-org", "--tier", "pro", "--rate-limit", "0")
    s.ctl("app", "add", "--org", "rcpt-org", "--team", TEAM, "--bundle", BUNDLE)
    for k, v in [("receipts.firstDelaySeconds", "1"), ("receipts.intervalHours", "1"), ("receipts.requestsPerSecond", "20"),
                 ("receipts.appleURL", json.dumps(apple.url)), ("receipts.appleCAFile", json.dumps(apple.ca_file)),
                 ("rateLimits.validatePerIPPerMinute", "0"), ("webhooks.allowPrivateDestinations", "true")]:
        s.ctl("config", "set", k, v)
    # The threshold webhook: Apple's metric above 1 is a crossing (the stand-in answers 2).
    s.ctl("app", "set", "--app", f"{TEAM}.{BUNDLE}", "--apple-risk-metric-threshold", "1")
    rx = Receiver()
    APEX["rx"] = rx
    s.ctl("webhooks", "add", "--org", "rcpt-org", f"http://127.0.0.1:{rx.port}/hook", "--events", "device.risk_metric_changed")
    add = s.ctl("apple", "key", "add", "--team", TEAM, "--key-id", KEY_ID, "--p8", p8, check=False)
    T.check("apple key add stores the DeviceCheck key", add.returncode == 0, add.stdout + add.stderr)


def dev(s, name, *args):
    return s.device(s.state(name), *args, team=TEAM, bundle=BUNDLE)


def enroll(s, name):
    p = dev(s, name, "--json", "enroll")
    T.check(f"device {name} enrolls", p.returncode == 0, p.stderr[-400:])
    return json.loads(p.stdout or "{}").get("keyId") or json.loads(dev(s, name, "--json", "show").stdout or "{}").get("keyId")


def receipt_state(s, key):
    p = s.ctl("receipts", "status", "--key", key, check=False)
    return json.loads(p.stdout) if p.returncode == 0 else {}


def wait_for(predicate, seconds):
    deadline = time.time() + seconds
    while time.time() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.1)
    return predicate()


def redeemed(s):
    apple = APEX["apple"]
    key = enroll(s, "d1")
    got = apple.wait(1, 15)
    T.check("attest-receipts redeems the new device's receipt soon after attestation", len(got) >= 1 and got[0]["status"] == 200,
            repr([(g["status"], g["reason"]) for g in got]))
    T.check("the stand-in verified the provider token (ES256, kid, iss, fresh iat) with the key's public half",
            got and got[0]["token_ok"], got and got[0]["reason"])
    T.check("the body is the receipt in base64 text and Authorization is the JWT alone",
            got and base64.b64decode(got[0]["body"])[:1] == b"\x30" and got[0]["authorization"].count(".") == 2)
    state = wait_for(lambda: (lambda r: r if r.get("redeemedAt") else None)(receipt_state(s, key)), 5) or {}
    T.check("the new receipt is stored in place of the old: a RECEIPT with the stand-in's risk metric",
            state.get("kind") == "RECEIPT" and state.get("riskMetric") == 2 and state.get("lastStatus") == 200, json.dumps(state))
    T.check("its next redemption is not before its not-before (a day later)",
            state.get("nextRedeemAt", "") >= state.get("notBefore", "~"), json.dumps(state))
    p = dev(s, "d1", "--json", "refresh")
    claims = json.loads(dev(s, "d1", "--json", "show").stdout or "{}").get("claims") or {}
    T.check("the next refresh's token carries apple_risk_metric", p.returncode == 0 and claims.get("apple_risk_metric") == 2,
            json.dumps(claims)[:400])
    before = len(APEX["apple"].requests())
    tried = s.ctl("receipts", "try", "--team", TEAM, check=False)
    T.check("receipts try sends one receipt now and prints Apple's status and the new receipt",
            tried.returncode == 0 and "answer: 200 redeemed" in tried.stdout and "riskMetric" in tried.stdout
            and len(APEX["apple"].requests()) == before + 1, tried.stdout + tried.stderr)
    APEX["apple"].answer(429, None)
    tried = s.ctl("receipts", "try", "--team", TEAM, check=False)
    T.check("receipts try on a 429 exits 1 and says when attest-receipts would try again",
            tried.returncode == 1 and "429 throttled" in tried.stdout and "try this receipt again at" in tried.stdout,
            tried.stdout + tried.stderr)
    hooks = APEX["rx"].wait("/hook", 1, 10)
    event = json.loads(hooks[0][2]) if hooks else {}
    T.check("crossing the app's threshold sends device.risk_metric_changed",
            event.get("event") == "device.risk_metric_changed" and event.get("data", {}).get("apple_risk_metric") == 2
            and event.get("data", {}).get("direction") == "above", json.dumps(event)[:400])
    return key


def answered(s, name, script, requests):
    """Enrolls `name` with `script` queued at the stand-in; waits for `requests` more requests."""
    apple = APEX["apple"]
    before = len(apple.requests())
    for status, body in script:
        apple.answer(status, body)
    key = enroll(s, name)
    got = apple.wait(before + requests, 30)[before:]
    return key, got


def errors(s):
    key, got = answered(s, "d304", [(304, None)], 1)
    state = receipt_state(s, key)
    T.check("304: the receipt is kept and tried again later (an hour: an ATTEST receipt has no not-before)",
            [g["status"] for g in got] == [304] and state.get("lastStatus") == 304 and state.get("kind") == "ATTEST"
            and state.get("nextRedeemAt") is not None and state.get("failures") == 0, json.dumps(state))
    for body in (b"Incorrect Environment", b"Bad Payload"):
        key, got = answered(s, "d400" + body.decode()[:3].lower(), [(400, body)], 1)
        state = receipt_state(s, key)
        T.check(f"400 {body.decode()}: told apart by the body, the receipt is not sent again",
                state.get("lastStatus") == 400 and state.get("nextRedeemAt") is None
                and ("environment" in state.get("lastOutcome", "")) == (body == b"Incorrect Environment"), json.dumps(state))
    key, got = answered(s, "d404", [(404, None)], 1)
    state = receipt_state(s, key)
    week = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 6 * 86_400))
    T.check("404: the old receipt is kept and tried again much later (a week)",
            state.get("kind") == "ATTEST" and state.get("lastStatus") == 404 and (state.get("nextRedeemAt") or "") > week,
            json.dumps(state))
    key, got = answered(s, "dflaky", [(429, None), (500, None), (429, None)], 4)
    statuses = [g["status"] for g in got]
    gaps = [round(b["time"] - a["time"], 1) for a, b in zip(got, got[1:])]
    T.check("429 and 500 back off with growing delays, then the receipt is redeemed",
            statuses == [429, 500, 429, 200] and gaps[0] < gaps[2], f"{statuses} gaps {gaps}")
    state = receipt_state(s, key)
    T.check("after the 200 the failures in a row are 0 again", state.get("failures") == 0 and state.get("lastStatus") == 200,
            json.dumps(state))


def metrics_and_logs(s):
    text = urllib.request.urlopen(f"http://127.0.0.1:{s.metrics_port}/metrics", timeout=10).read().decode()
    lines = [line for line in text.splitlines() if line.startswith("attestedge_receipt_")]
    T.check("metrics count redemptions by Apple's status and expose the backlog",
            'attestedge_receipt_redemptions_total{status="200"}' in text and 'attestedge_receipt_redemptions_total{status="429"} 2' in text
            and "attestedge_receipt_backlog " in text, "\n".join(lines))
    listing = s.ctl("apple", "key", "list").stdout
    body = b"".join(APEX["key_pem"].splitlines()[1:-1]).decode()
    T.check("apple key list shows the team and key id, never the key", TEAM in listing and KEY_ID in listing and body[:40] not in listing, listing)
    logs = ""
    for path in glob.glob(os.path.join(s.data, "log", "*")) + [os.path.join(s.dir, "serve.out")]:
        with open(path, errors="replace") as f:
            logs += f.read()
    tokens = [g["authorization"] for g in APEX["apple"].requests()]
    T.check("no log holds the DeviceCheck key or a provider token",
            body[:40] not in logs and body[-40:] not in logs and not any(t and t in logs for t in tokens)
            and not any(t and t.split(".")[2] in logs for t in tokens))
    mode = os.stat(os.path.join(s.data, "keys", "apple", TEAM + ".p8")).st_mode & 0o777
    T.check("the stored key is mode 0600", mode == 0o600, oct(mode))


def refused_inputs(s):
    link = os.path.join(s.dir, "link.p8")
    os.symlink(APEX["p8"], link)
    p = s.ctl("apple", "key", "add", "--team", TEAM, "--key-id", KEY_ID, "--p8", link, check=False)
    T.check("a .p8 that is a symbolic link is refused", p.returncode != 0 and "symbolic link" in p.stderr, p.stderr)
    loose = os.path.join(s.dir, "loose.p8")
    with open(loose, "wb") as f:
        f.write(APEX["key_pem"])
    os.chmod(loose, 0o644)
    p = s.ctl("apple", "key", "add", "--team", TEAM, "--key-id", KEY_ID, "--p8", loose, check=False)
    T.check("a world-readable .p8 is refused", p.returncode != 0 and "readable by every user" in p.stderr, p.stderr)
    p = s.ctl("apple", "key", "add", "--team", "../../etc/x", "--key-id", KEY_ID, "--p8", APEX["p8"], check=False)
    T.check("a team id with path characters is refused", p.returncode != 0
            and not os.path.exists(os.path.join(s.data, "keys", "etc")), p.stderr)
    T.check("no key text in any refusal", all(b"".join(APEX["key_pem"].splitlines()[1:2]).decode() not in x
                                               for x in (p.stdout, p.stderr)))


def unauthorized(s):
    apple = APEX["apple"]
    key, got = answered(s, "d401", [(401, None)], 1)
    state = receipt_state(s, key)
    T.check("401: the team is stopped", [g["status"] for g in got] == [401], repr(got))
    status = s.ctl_json("receipts", "status")
    team = next((t for t in status.get("teams", []) if t["team"] == TEAM), {})
    T.check("receipts status shows the stop and the answers per code",
            team.get("stoppedAt") is not None and team.get("answers", {}).get("401") == 1 and team.get("answers", {}).get("200", 0) >= 2,
            json.dumps(team))
    doctor = s.ctl("doctor", check=False)
    T.check("attestctl doctor complains about the stopped team", doctor.returncode != 0 and f"team {TEAM}" in doctor.stdout
            and "apple key add" in doctor.stdout, doctor.stdout[-600:])
    before = len(apple.requests())
    late = enroll(s, "d-after-401")
    time.sleep(3)
    T.check("while stopped, no receipt of the team is sent", len(apple.requests()) == before, repr(apple.requests()[before:]))
    p = s.ctl("apple", "key", "add", "--team", TEAM, "--key-id", KEY_ID, "--p8", APEX["p8"], check=False)
    T.check("apple key add lifts the stop", p.returncode == 0 and "redeemed again" in p.stdout, p.stdout + p.stderr)
    sent = wait_for(lambda: len(apple.requests()) > before, 15)
    T.check("and the receipt put off during the stop is sent soon, not an interval later", sent,
            p.stdout + repr(receipt_state(s, late)))
    doctor = s.ctl("doctor", check=False)
    T.check("and doctor no longer names the team", f"team {TEAM}" not in doctor.stdout, doctor.stdout[-400:])
    _ = state


def main():
    s = Stack(setup=setup, serve_args=["--allow-private-webhooks"])
    return run_suite(T, "receipts", s, [redeemed, errors, metrics_and_logs, refused_inputs, unauthorized],
                     cleanup=lambda: APEX["apple"].close())


if __name__ == "__main__":
    sys.exit(main())
