#!/usr/bin/env python3
"""End-to-end for issue #9 through real nginx: custom claims evaluated at refresh, subjects
and entitlements, operator flags (jailbroken, block) and what attestctl shows about them;
issue 37 item 6: subject link policies, with a device that asserts another household's id; and
issue 40: a software device's receipt verified and stored at validate, and the app's policy
for Apple's risk metric.
Prints PASS/FAIL per check and a summary; exits 1 on a failure."""
import datetime
import http.client
import json
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "lib"))
from check import Tally  # noqa: E402
from stack import BIN, run_suite, Stack, app_headers  # noqa: E402

T = Tally()
TEAM, BUNDLE = "CLAIMTEAM1", "com.example.claims"
APP = TEAM + "." + BUNDLE
H = app_headers(TEAM, BUNDLE)


def setup(s):
    s.ctl("org", "add", "claims-org", "--tier", "pro", "--rate-limit", "0")
    s.ctl("org", "add", "link-org", "--tier", "pro", "--rate-limit", "0")
    s.ctl("app", "add", "--org", "claims-org", "--team", TEAM, "--bundle", BUNDLE)
    s.ctl("claims", "add", "--app", APP, "--key", "gate", "--value", '"open"')
    s.ctl("claims", "add", "--app", APP, "--key", "gate", "--value", '"closed"', "--when", "riskCategory ne trusted")
    s.ctl("claims", "add", "--app", APP, "--key", "tier", "--value", "premium", "--when", "subscribed eq true")


def dev(s, name, *args):
    return s.device(s.state(name), *args, team=TEAM, bundle=BUNDLE)


def token_claims(s, name):
    return json.loads(dev(s, name, "--json", "show").stdout or "{}").get("claims") or {}


def refresh(s, name):
    p = dev(s, name, "--json", "refresh")
    return p.returncode, json.loads(p.stdout or "{}")


def pool_logs(s):
    text = ""
    for name in ("attest-validate.log", "attest-refresh.log"):
        path = os.path.join(s.data, "log", name)
        if os.path.exists(path):
            with open(path, errors="replace") as f:
                text += f.read()
    return text


def run(s):
    orgs = {o["name"]: o for o in s.ctl_json("org", "list")}
    T.check("a new organization's subject links are signed", orgs.get("claims-org", {}).get("subjectLinks") == "signed", json.dumps(orgs))
    signed = s.ctl("subject", "sign", "--org", "claims-org", "--subject", "house-1", "--ttl", "10m").stdout.strip()
    T.check("subject sign prints v1.house-1.EXPIRY.MAC", signed.startswith("v1.house-1.") and len(signed.split(".")[-1]) == 43, signed)
    p = dev(s, "d1", "--fingerprint", "phone-1", "--subject", signed, "enroll")
    T.check("a device enrolls with a fingerprint and a signed subject", p.returncode == 0, p.stderr)
    c = token_claims(s, "d1")
    device_id = c.get("device_id", "")
    T.check("its token has the unconditional claim and a subscription with no entitlements",
            c.get("custom_claims") == {"gate": "open"} and c.get("subscription", {}).get("entitlements") == [], json.dumps(c))
    listed = s.ctl_json("claims", "list", "--app", APP)
    T.check("claims list --json shows the three rules in order", [r["key"] for r in listed] == ["gate", "gate", "tier"]
            and listed[1].get("when") == {"property": "riskCategory", "op": "ne", "value": "trusted"}, json.dumps(listed))

    s.ctl("device", "flag", device_id, "--jailbroken", "--reason", "e2e: jailbreak report")
    rc, _ = refresh(s, "d1")
    c = token_claims(s, "d1")
    T.check("after an operator flag and one refresh the conditional claim has changed",
            rc == 0 and c.get("custom_claims", {}).get("gate") == "closed", json.dumps(c))
    T.check("the token says jailbreak_detected, risk 80, blocked category", c.get("jailbreak_detected") is True
            and c.get("risk_score") == 80 and c.get("risk_category") == "blocked", json.dumps(c))

    s.ctl("subject", "grant", "house-1", "premium", "--org", "claims-org", "--until", "2099-01-01")
    rc, _ = refresh(s, "d1")
    c = token_claims(s, "d1")
    sub = c.get("subscription", {})
    T.check("a subject's entitlement appears in the next token", rc == 0 and sub.get("subject_id") == "house-1"
            and sub.get("entitlements") == ["premium"] and sub.get("expires_at") == "2099-01-01T00:00:00Z", json.dumps(sub))
    T.check("and the subscribed condition applies", c.get("custom_claims", {}).get("tier") == "premium", json.dumps(c))
    shown = s.ctl_json("subject", "show", "house-1", "--org", "claims-org")
    T.check("subject show lists the entitlement and the linked device", [e["name"] for e in shown.get("entitlements", [])] == ["premium"]
            and [d["deviceId"] for d in shown.get("devices", [])] == [device_id], json.dumps(shown))

    subject_links(s, device_id)

    s.ctl("device", "flag", device_id, "--block", "--reason", "e2e: fraud")
    c0 = s.http("GET", "/api/v1/attestation/challenge", H).json["challenge"]
    body = json.loads(dev(s, "d1", "body", "refresh", "--challenge", c0).stdout)
    r = s.http("POST", "/api/v1/attestation/refresh", H, body)
    T.check("a blocked device's refresh is 403 forbidden", r.status == 403 and (r.json or {}).get("code") == "forbidden", repr(r))

    p = dev(s, "d1-new-key", "--fingerprint", "phone-1", "--json", "enroll")
    v = json.loads(p.stdout or "{}")
    T.check("its re-attestation with a new key is isValid false, category blocked", p.returncode == 0 and v.get("isValid") is False
            and v.get("deviceIntelligence", {}).get("riskCategory") == "blocked" and v.get("deviceIntelligence", {}).get("attestationCount") == 2,
            p.stdout[:300] + p.stderr)
    rc, out = refresh(s, "d1-new-key")
    T.check("and the new key's refresh is 403 too", rc == 1 and out.get("code") == "forbidden", json.dumps(out))
    p = dev(s, "d2", "--fingerprint", "phone-2", "--json", "enroll")
    T.check("another fingerprint is unaffected", p.returncode == 0 and json.loads(p.stdout or "{}").get("isValid") is True, p.stderr)

    shown = s.ctl_json("device", "show", device_id)
    T.check("device show lists the factors with their points", any(f["signal"] == "operator_blocked" and f["points"] > 0
                                                                    for f in shown.get("risk", {}).get("factors", []))
            and shown.get("risk", {}).get("score") == 100, json.dumps(shown.get("risk")))
    T.check("device show has the fingerprint's two attestations with dates", len(shown.get("attestations", [])) == 2
            and all(a.get("attestedAt") for a in shown["attestations"]), json.dumps(shown.get("attestations")))
    T.check("device show has both flag changes with their reasons", [f["reason"] for f in shown.get("flagChanges", [])]
            == ["e2e: jailbreak report", "e2e: fraud"], json.dumps(shown.get("flagChanges")))
    tested = s.ctl_json("claims", "test", "--app", APP, "--device", device_id)
    T.check("claims test --device explains each rule", [x["applied"] for x in tested.get("claims", [])] == [True, True, True]
            and tested.get("customClaims") == {"gate": "closed", "tier": "premium"}, json.dumps(tested))
    s.ctl("device", "flag", device_id, "--clear", "--reason", "e2e: resolved")
    rc, _ = refresh(s, "d1-new-key")
    c = token_claims(s, "d1-new-key")
    T.check("after --clear the new key refreshes and the claim opens again", rc == 0 and c.get("custom_claims", {}).get("gate") == "open"
            and c.get("jailbreak_detected") is False, json.dumps(c))


def set_links(s, policy):
    """`org set --subject-links` as an operator would, then waits out the pools' cache of
    organizations: on PostgreSQL a change made elsewhere is seen within a second (docs/several-hosts.md), and the next request must meet the new policy."""
    s.ctl("org", "set", "claims-org", "--subject-links", policy)
    time.sleep(1.1)


def subject_links(s, victim_device):
    """Issue 37 item 6 as the attacker: another device of the organization sends house-1 (which
    holds premium) plain, then forged and expired signed values; none links, none fails."""
    p = dev(s, "attacker", "--subject", "house-1", "--json", "enroll")
    v = json.loads(p.stdout or "{}")
    c = token_claims(s, "attacker")
    T.check("a device asserting another household's plain id enrolls, valid, with no subscription claim",
            p.returncode == 0 and v.get("isValid") is True and "subscription" not in c, p.stdout[:300] + p.stderr)
    forged = "v1.house-1.%d.%s" % (int(time.time()) + 600, "A" * 43)
    p = dev(s, "attacker", "--subject", forged, "--json", "refresh")
    c = token_claims(s, "attacker")
    T.check("its refresh with a forged signed value succeeds with no subscription claim", p.returncode == 0 and "subscription" not in c,
            p.stdout[:300] + p.stderr)
    other = s.ctl("subject", "sign", "--org", "link-org", "--subject", "house-1").stdout.strip()
    p = dev(s, "attacker", "--subject", other, "--json", "refresh")
    T.check("and with a value signed by another organization's secret", p.returncode == 0 and "subscription" not in token_claims(s, "attacker"),
            p.stdout[:300] + p.stderr)
    shown = s.ctl_json("subject", "show", "house-1", "--org", "claims-org")
    T.check("house-1 still lists only its own device", [d["deviceId"] for d in shown.get("devices", [])] == [victim_device], json.dumps(shown))
    logs = pool_logs(s)
    T.check("the pools' logs say why, without the MAC", "subject link refused" in logs and "is not a signed value" in logs
            and "does not verify" in logs and other.split(".")[-1] not in logs and "A" * 43 not in logs, logs[-1500:])

    set_links(s, "operator")
    p = dev(s, "attacker", "--subject", s.ctl("subject", "sign", "--org", "claims-org", "--subject", "house-1").stdout.strip(), "refresh")
    T.check("under operator even a valid signed value links nothing", p.returncode == 0 and "subscription" not in token_claims(s, "attacker"),
            p.stderr)
    attacker_id = token_claims(s, "attacker").get("device_id", "")
    s.ctl("subject", "link", "house-2", attacker_id, "--org", "claims-org")
    rc, _ = refresh(s, "attacker")
    T.check("subject link makes the operator's link", rc == 0 and token_claims(s, "attacker").get("subscription", {}).get("subject_id") == "house-2",
            json.dumps(token_claims(s, "attacker")))
    set_links(s, "asserted")
    listed = {o["name"]: o["subjectLinks"] for o in s.ctl_json("org", "list")}
    p = dev(s, "attacker", "--subject", "house-3", "refresh")
    T.check("asserted links a plain id as sent, and org list shows the policy", p.returncode == 0 and listed.get("claims-org") == "asserted"
            and token_claims(s, "attacker").get("subscription", {}).get("subject_id") == "house-3", json.dumps(listed))
    set_links(s, "signed")


def receipt_counts(s):
    """attestedge_receipt_verifications_total by result, from the metrics listener."""
    conn = http.client.HTTPConnection("127.0.0.1", s.metrics_port, timeout=30)
    conn.request("GET", "/metrics")
    text = conn.getresponse().read().decode()
    conn.close()
    return {m.group(1): int(m.group(2)) for m in
            re.finditer(r'^attestedge_receipt_verifications_total\{result="(\w+)"\} (\d+)$', text, re.M)}


def when(text):
    return datetime.datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ") if text else None


def receipts(s):
    """Issue 40: attest-device signs its attestation's receipt with the data directory's test
    receipt authority (test-ca/receipts.pem, trusted through trust.testReceiptRoots); validate
    verifies it, stores its fields and schedules its redemption; attestctl shows it; tokens
    carry the metric's claims (null until a redemption); the app's threshold is tunable."""
    before = receipt_counts(s)
    p = dev(s, "r1", "--json", "enroll")
    T.check("a software device enrolls", p.returncode == 0, p.stderr)
    c = token_claims(s, "r1")
    T.check("its token has apple_risk_metric and apple_risk_metric_at, both null before any redemption",
            "apple_risk_metric" in c and c["apple_risk_metric"] is None and "apple_risk_metric_at" in c
            and c["apple_risk_metric_at"] is None and c.get("risk_score") == 0, json.dumps(c))
    device_id = c.get("device_id", "")
    shown = s.ctl_json("device", "show", device_id)
    r = shown.get("receipt") or {}
    T.check("device show: the receipt is valid, through the test receipt root, with Apple's fields",
            r.get("check") == "valid" and r.get("reason") == "" and r.get("anchor") == "test_root"
            and r.get("type") == "ATTEST" and r.get("appId") == APP and r.get("environment") == "production"
            and len(r.get("credentialCertSha256", "")) == 64 and r.get("riskMetric") is None and r.get("history") == []
            and shown.get("receiptCheck") == "valid" and shown.get("appleRiskMetric") is None, json.dumps(shown))
    created, due = when(r.get("createdAt")), when(r.get("nextRedeemAt"))
    T.check("its first redemption is scheduled about a minute after it was made",
            created is not None and due is not None and 0 < (due - created).total_seconds() <= 120, json.dumps(r))
    text = s.ctl("device", "show", device_id).stdout
    T.check("device show (text) prints the receipt and the empty metric history",
            "receipt valid" in text and "ATTEST" in text and "no risk metric received yet" in text, text[-800:])
    after = receipt_counts(s)
    T.check("the validate pool counted a valid receipt and no invalid one",
            after.get("valid", 0) - before.get("valid", 0) == 1 and after.get("invalid", 0) == before.get("invalid", 0)
            and after.get("absent", 0) == before.get("absent", 0), f"{before} → {after}")
    checked = s.ctl("store", "check")
    T.check("store check: the receipt and its due entry agree", checked.returncode == 0, checked.stdout + checked.stderr)

    # The attacker: a receipt signed by another data directory's test receipt authority (a chain
    # shaped like Apple's that this server does not trust) is stored invalid and scored, and the
    # attestation still succeeds.
    other = os.path.join(s.dir, "foreign-data")
    subprocess.run([os.path.join(BIN, "attestctl"), "init", "--test-ca", "--data", other], capture_output=True, check=True)
    before = receipt_counts(s)
    p = dev(s, "r2", "--test-receipts", os.path.join(other, "test-ca", "receipts.pem"), "--json", "enroll")
    v = json.loads(p.stdout or "{}")
    T.check("a device whose receipt a foreign chain signed still enrolls, valid, scored receipt_invalid (+10)",
            p.returncode == 0 and v.get("isValid") is True and v.get("deviceIntelligence", {}).get("riskScore") == 10,
            p.stdout[:300] + p.stderr)
    shown = s.ctl_json("device", "show", v.get("deviceIntelligence", {}).get("deviceId", ""))
    r = shown.get("receipt") or {}
    T.check("its receipt is stored invalid with the chain's failure, not scheduled, and the factor is listed",
            r.get("check") == "invalid" and r.get("reason", "").startswith("receipt_chain") and r.get("nextRedeemAt") is None
            and any(f["signal"] == "receipt_invalid" and f["points"] == 10 for f in shown.get("risk", {}).get("factors", [])),
            json.dumps(shown.get("receipt")) + json.dumps(shown.get("risk")))
    after = receipt_counts(s)
    T.check("the validate pool counted it invalid", after.get("invalid", 0) - before.get("invalid", 0) == 1, f"{before} → {after}")
    T.check("and logged why", "receipt invalid: receipt_chain" in pool_logs(s), "")

    s.ctl("app", "set", "--app", APP, "--apple-risk-metric-threshold", "3", "--apple-risk-metric-points", "30")
    apps = {a["appId"]: a for a in s.ctl_json("app", "list")}
    T.check("app set tunes the apple_risk_metric policy, app list shows it",
            apps.get(APP, {}).get("appleRiskMetricThreshold") == 3 and apps.get(APP, {}).get("appleRiskMetricPoints") == 30,
            json.dumps(apps.get(APP)))
    s.ctl("claims", "add", "--app", APP, "--key", "farm", "--value", "true", "--when", "appleRiskMetric gt 3")
    high = s.ctl_json("claims", "test", "--app", APP, "--profile", '{"appleRiskMetric":5}')
    unknown = s.ctl_json("claims", "test", "--app", APP, "--profile", '{}')
    T.check("the claims property appleRiskMetric: applies above 3, not while the metric is unknown",
            high.get("customClaims", {}).get("farm") is True and "farm" not in unknown.get("customClaims", {}),
            json.dumps(high) + json.dumps(unknown))


def main():
    return run_suite(T, "claims", Stack(setup=setup), [run, receipts])


if __name__ == "__main__":
    sys.exit(main())
