#!/usr/bin/env python3
"""End-to-end through real nginx: the challenge endpoint, the error envelope, pools that die
or stop (issue: runtime and challenge), and the device flow with attest-device, tokens
against the JWKS with PyJWT, every refusal's status and code, and the two races (issue:
validate, refresh, tokens). Prints PASS/FAIL per check and a summary; exits 1 on a failure."""
import concurrent.futures
import json
import os
import signal
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "lib"))
from check import Tally  # noqa: E402
from stack import within_one_rate_window, ISO_SECONDS, Stack, app_headers, b64, cbor_map_of_bytes, sha256, unb64  # noqa: E402

import jwt  # PyJWT, from PyPI: an independent verifier
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec

T = Tally()
A = app_headers()
OTHER = app_headers("OTHER12345", "com.example.other")


def setup(stack):
    stack.ctl("org", "add", "acme", "--tier", "pro", "--rate-limit", "0")
    stack.ctl("app", "add", "--org", "acme", "--team", "ABCDE12345", "--bundle", "com.example.app", "--env", "both")
    stack.ctl("app", "add", "--org", "acme", "--team", "OTHER12345", "--bundle", "com.example.other")
    # A tenant with a small organization bucket, for the outsider checks.
    stack.ctl("org", "add", "tight", "--tier", "pro", "--rate-limit", "20")
    stack.ctl("app", "add", "--org", "tight", "--team", "TIGHT12345", "--bundle", "com.example.tight")
    stack.ctl("config", "set", "rateLimits.refreshPerIPPerMinute", "60")


def challenge(stack, headers=A):
    r = stack.http("GET", "/api/v1/attestation/challenge", headers)
    assert r.status == 200, r
    return r.json["challenge"]


def envelope_ok(stack, r, status, code):
    j = r.json or {}
    ok = (r.status == status and j.get("code") == code and isinstance(j.get("error"), str) and j.get("reason") == j.get("error")
          and isinstance(j.get("requestId"), str) and len(j["requestId"]) > 0)
    return ok, f"{r!r}"


def expect(stack, name, r, status, code):
    ok, detail = envelope_ok(stack, r, status, code)
    T.check(f"{name}: {status} {code}", ok, detail)


def body_from(p):
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def challenge_checks(s):
    r = s.http("GET", "/api/v1/attestation/challenge", A)
    j = r.json or {}
    T.check("challenge: 200 with exactly challenge, expiresAt, expiresIn", r.status == 200 and set(j) == {"challenge", "expiresAt", "expiresIn"}, repr(r))
    T.check("challenge: expiresAt has no fractional seconds", bool(ISO_SECONDS.match(j.get("expiresAt", ""))), j.get("expiresAt"))
    T.check("challenge: expiresIn is 300", j.get("expiresIn") == 300)
    T.check("challenge: JSON content type", r.headers.get("content-type", "").startswith("application/json"))
    r = s.http("GET", "/api/v1/attestation/challenge", {"X-Bundle-ID": "com.unknown", "X-Team-ID": "ABCDE12345"})
    expect(s, "challenge for an unknown app", r, 403, "app_not_registered")
    rid = (r.json or {}).get("requestId", "")
    T.check("error envelope: requestId is the id nginx logged", s.access_log_has(rid, 403), rid)
    T.check("error envelope: hint present and a string", isinstance((r.json or {}).get("hint"), str))
    # A challenge bound to app A is invalid for app B.
    c = challenge(s, A)
    body = body_from(s.device(s.state("bind"), "body", "validate", "--challenge", c, team="OTHER12345", bundle="com.example.other"))
    expect(s, "challenge bound to another app", s.http("POST", "/api/v1/attestation/validate", OTHER, body), 400, "challenge_invalid")
    big = b"{" + b" " * 70_000 + b"}"
    expect(s, "oversized body", s.http("POST", "/api/v1/attestation/validate", A, big), 413, "payload_too_large")
    expect(s, "non-JSON body", s.http("POST", "/api/v1/attestation/validate", A, b"hello"), 400, "bad_request")
    r = s.http("GET", "/nowhere")
    expect(s, "unknown path", r, 404, "not_found")


def no_store_growth(s):
    # The delivery worker takes queued outbox events (an earlier step's anomaly) on its own
    # schedule: wait until it has, so only the challenges can change the counts.
    deadline = time.time() + 10
    before = s.ctl_json("store", "stats")["databases"]
    while before["outbox"] and time.time() < deadline:
        time.sleep(0.1)
        before = s.ctl_json("store", "stats")["databases"]
    started = time.time()
    import http.client
    conn = http.client.HTTPConnection("127.0.0.1", s.port, timeout=30)
    ok = 0
    for _ in range(10_000):
        conn.request("GET", "/api/v1/attestation/challenge", headers=A)
        r = conn.getresponse()
        r.read()
        ok += r.status == 200
    conn.close()
    after = s.ctl_json("store", "stats")["databases"]
    T.check(f"10,000 challenges answered 200 ({time.time() - started:.1f}s)", ok == 10_000, f"{ok} ok")
    T.check("10,000 challenges leave every database's entry count unchanged", before == after, f"{before} -> {after}")


def killed_worker(s):
    workers = s.pool_workers("challenge")
    T.check("challenge pool has its workers", len(workers) >= 1, str(workers))
    if not workers:
        return
    os.kill(workers[0], signal.SIGKILL)
    deadline = time.time() + 10
    replaced = []
    while time.time() < deadline:
        now = s.pool_workers("challenge")
        if workers[0] not in now and len(now) == len(workers):
            replaced = now
            break
        time.sleep(0.05)
    T.check("a killed worker is replaced", bool(replaced), f"{workers} -> {s.pool_workers('challenge')}")
    codes = [s.http("GET", "/api/v1/attestation/challenge", A).status for _ in range(50)]
    T.check("the endpoint keeps answering after a worker is killed", codes == [200] * 50, str(set(codes)))


def stopped_pool(s):
    os.kill(s.serve.pid, signal.SIGSTOP)  # hold serve so it does not restart the pool at once
    try:
        master = s.pool_master("refresh")
        os.kill(master, signal.SIGTERM)
        deadline = time.time() + 15
        while time.time() < deadline and os.path.exists(f"/proc/{master}") and open(f"/proc/{master}/stat").read().split(") ")[1][0] != "Z":
            time.sleep(0.05)
        r = s.http("POST", "/api/v1/attestation/refresh", A, {"keyId": "x"})
        expect(s, "a stopped pool answers as JSON", r, 502, "unavailable")
        T.check("502 is JSON, not HTML", r.headers.get("content-type", "").startswith("application/json") and b"<html" not in r.body.lower())
        T.check("502 requestId is the id nginx logged", s.access_log_has((r.json or {}).get("requestId", "?"), 502))
    finally:
        os.kill(s.serve.pid, signal.SIGCONT)
    deadline = time.time() + 15
    status = 0
    while time.time() < deadline:
        status = s.http("POST", "/api/v1/attestation/refresh", A, {}).status
        if status != 502:
            break
        time.sleep(0.1)
    T.check("serve restarts the stopped pool", status == 400, f"status {status}")


def device_flow(s):
    st = s.state("flow")
    p = s.device(st, "enroll")
    T.check("attest-device enroll", p.returncode == 0, p.stderr)
    for i in range(3):
        p = s.device(st, "refresh")
        T.check(f"attest-device refresh #{i + 1}", p.returncode == 0, p.stderr)
    shown = json.loads(s.device(st, "show", "--json").stdout)
    T.check("counter is 3 after three refreshes", shown["counter"] == 3, str(shown.get("counter")))
    stored = s.ctl_json("device", "show", shown["keyId"])
    T.check("the store's counter is 3", stored["counter"] == 3 and stored["status"] == "active", json.dumps(stored)[:200])
    r = s.http("POST", "/api/v1/heartbeat", dict(A, Authorization="Bearer x"), {"appState": "active"})
    expect(s, "heartbeat with a token that is not ours", r, 401, "unauthorized")
    p = s.device(st, "heartbeat")
    T.check("attest-device heartbeat with its token", p.returncode == 0, p.stderr)
    # Tokens: PyJWT against the JWKS nginx serves.
    jwks = s.http("GET", "/.well-known/jwks.json")
    alt = s.http("GET", "/api/v1/attestation/public-key")
    T.check("JWKS at both paths, same document", jwks.status == 200 and alt.status == 200 and jwks.body == alt.body)
    T.check("JWKS is JSON with a cache lifetime", jwks.headers.get("content-type", "").startswith("application/json")
            and "max-age" in jwks.headers.get("cache-control", ""))
    token = json.loads(open(st).read())["fields"]["token"]
    header = jwt.get_unverified_header(token)
    keys = {k["kid"]: k for k in jwks.json["keys"]}
    try:
        key = jwt.PyJWK.from_dict(keys[header["kid"]]).key
        claims = jwt.decode(token, key=key, algorithms=["ES256"], audience="ABCDE12345.com.example.app", issuer="attestedge")
        T.check("the token verifies with PyJWT against the served JWKS", claims["device_id"] == shown["deviceId"], str(claims)[:200])
    except Exception as e:  # noqa: BLE001 - any failure is the finding
        T.check("the token verifies with PyJWT against the served JWKS", False, repr(e))
    # Tenants (issue 37 item 11): another organization's team registers the same bundle ID; its
    # token carries its own App ID, which team A's relying party (checking aud) refuses.
    s.ctl("org", "add", "globex", "--tier", "pro", "--rate-limit", "0")
    s.ctl("app", "add", "--org", "globex", "--team", "EVILTEAM99", "--bundle", "com.example.app")
    st_b = s.state("tenant-b")
    p = s.device(st_b, "enroll", team="EVILTEAM99")
    T.check("team B's app with team A's bundle ID enrolls a device", p.returncode == 0, p.stderr)
    token_b = json.loads(open(st_b).read())["fields"]["token"] if p.returncode == 0 else ""
    try:
        key_b = jwt.PyJWK.from_dict(keys[jwt.get_unverified_header(token_b)["kid"]]).key
        claims_b = jwt.decode(token_b, key=key_b, algorithms=["ES256"], options={"verify_aud": False})
        T.check("team B's token: aud is B's App ID, bundle_id and team_id kept",
                claims_b["aud"] == "EVILTEAM99.com.example.app" and claims_b["bundle_id"] == "com.example.app"
                and claims_b["team_id"] == "EVILTEAM99", str(claims_b)[:200])
        # Team A's relying party checks the audience team A's own tokens carry.
        a_aud = jwt.decode(token, options={"verify_signature": False})["aud"]
        try:
            jwt.decode(token_b, key=key_b, algorithms=["ES256"], audience=a_aud, issuer="attestedge")
            T.check("team A's relying party (checking aud) refuses team B's token", False, f"accepted: both say aud {a_aud}")
        except jwt.InvalidAudienceError:
            T.check("team A's relying party (checking aud) refuses team B's token", True)
    except Exception as e:  # noqa: BLE001
        T.check("team B's token: aud is B's App ID, bundle_id and team_id kept", False, repr(e))
    # Rotation: the new key is in the JWKS at once but signs only after tokens.publicationDelaySeconds.
    s.ctl("keys", "rotate")
    time.sleep(1.1)
    p = s.device(st, "refresh")
    pending_token = json.loads(open(st).read())["fields"]["token"]
    jwks = s.http("GET", "/.well-known/jwks.json").json
    kids = [k["kid"] for k in jwks["keys"]]
    T.check("after rotation the JWKS holds the new and the previous key", len(kids) == 2 and header["kid"] in kids, str(kids))
    T.check("during the publication delay tokens still carry the previous kid",
            p.returncode == 0 and jwt.get_unverified_header(pending_token)["kid"] == header["kid"], p.stderr)
    listed = s.ctl_json("keys", "list")
    T.check("keys list: published keys are the served JWKS, the new one pending",
            [k["kid"] for k in listed if k["published"]] == kids and listed[0]["state"] == "pending", json.dumps(listed)[:300])
    # --now (emergencies): an RS256 key signs at once, with a warning; PyJWT verifies against the JWKS.
    p = s.ctl("keys", "rotate", "--now", "--algorithm", "RS256")
    T.check("keys rotate --now warns", "WARNING" in p.stderr, p.stderr)
    time.sleep(1.1)
    p = s.device(st, "refresh")
    rs_token = json.loads(open(st).read())["fields"]["token"]
    rs_header = jwt.get_unverified_header(rs_token)
    jwks = s.http("GET", "/.well-known/jwks.json").json
    rs_keys = {k["kid"]: k for k in jwks["keys"]}
    T.check("after --now the JWKS holds the new key and the retired one, not the key that never signed",
            list(rs_keys) == [rs_header["kid"], header["kid"]], str(list(rs_keys)))
    try:
        rs_claims = jwt.decode(rs_token, key=jwt.PyJWK.from_dict(rs_keys[rs_header["kid"]]).key, algorithms=["RS256"],
                               audience="ABCDE12345.com.example.app", issuer="attestedge")
        T.check("an RS256 token verifies with PyJWT against the served JWKS", rs_header["alg"] == "RS256"
                and rs_claims["device_id"] == shown["deviceId"], str(rs_header))
    except Exception as e:  # noqa: BLE001
        T.check("an RS256 token verifies with PyJWT against the served JWKS", False, repr(e) + p.stderr)
    try:
        jwt.decode(token, key=jwt.PyJWK.from_dict(rs_keys[header["kid"]]).key, algorithms=["ES256"], audience="ABCDE12345.com.example.app",
                   issuer="attestedge")
        T.check("a token of the rotated-out ES256 key still verifies during the overlap", True)
    except Exception as e:  # noqa: BLE001
        T.check("a token of the rotated-out ES256 key still verifies during the overlap", False, repr(e))


def stranger_refresh(c):
    """A refresh body from a key the server never saw (signed by Python's cryptography)."""
    from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
    key = ec.generate_private_key(ec.SECP256R1())
    point = key.public_key().public_bytes(encoding=Encoding.X962, format=PublicFormat.UncompressedPoint)
    cdh = sha256(c.encode())
    auth = sha256(b"ABCDE12345.com.example.app") + b"\x00" + (1).to_bytes(4, "big")
    sig = key.sign(sha256(auth + cdh), ec.ECDSA(hashes.SHA256()))
    return {"keyId": b64(sha256(point)), "assertion": b64(cbor_map_of_bytes([("signature", sig), ("authenticatorData", auth)])),
            "clientDataHash": b64(cdh), "challenge": c}


def refusals(s):
    st = s.state("refusals")
    s.device(st, "enroll")
    # Replays.
    c = challenge(s)
    body = body_from(s.device(s.state("r1"), "body", "validate", "--challenge", c))
    T.check("validate with a fresh challenge", s.http("POST", "/api/v1/attestation/validate", A, body).status == 200)
    body2 = body_from(s.device(s.state("r2"), "body", "validate", "--challenge", c))
    expect(s, "validate replaying a challenge", s.http("POST", "/api/v1/attestation/validate", A, body2), 400, "challenge_already_used")
    expect(s, "validate replaying an attestation", s.http("POST", "/api/v1/attestation/validate", A,
                                                        dict(body, challenge=challenge(s))), 400, "client_data_hash_invalid")
    c = challenge(s)
    rb = body_from(s.device(st, "body", "refresh", "--challenge", c))
    T.check("refresh with the next counter", s.http("POST", "/api/v1/attestation/refresh", A, rb).status == 200)
    expect(s, "refresh replaying a challenge", s.http("POST", "/api/v1/attestation/refresh", A, rb), 400, "challenge_already_used")
    # Bad input.
    expect(s, "validate with a keyId that is not base64", s.http("POST", "/api/v1/attestation/validate", A,
                                                               dict(body_from(s.device(s.state("r3"), "body", "validate")), keyId="!!!")), 400, "key_id_invalid")
    vb = body_from(s.device(s.state("r4"), "body", "validate"))
    expect(s, "validate with attestationObject not base64", s.http("POST", "/api/v1/attestation/validate", A, dict(vb, attestationObject="%%")),
           400, "attestation_object_invalid")
    missing = {k: v for k, v in body_from(s.device(s.state("r5"), "body", "validate")).items() if k != "keyId"}
    expect(s, "validate without keyId", s.http("POST", "/api/v1/attestation/validate", A, missing), 400, "key_id_invalid")
    missing = {k: v for k, v in body_from(s.device(s.state("r6"), "body", "validate")).items() if k != "bundleId"}
    expect(s, "validate without bundleId", s.http("POST", "/api/v1/attestation/validate", A, missing), 400, "bad_request")
    rb = body_from(s.device(st, "body", "refresh"))
    expect(s, "refresh with an assertion that is not base64", s.http("POST", "/api/v1/attestation/refresh", A, dict(rb, assertion="!!!")),
           400, "bad_request")
    rb = {k: v for k, v in body_from(s.device(st, "body", "refresh")).items() if k != "assertion"}
    expect(s, "refresh without assertion", s.http("POST", "/api/v1/attestation/refresh", A, rb), 400, "bad_request")
    # Tampered attestation: the last byte is inside authData's extensions, so it stays CBOR.
    vb = body_from(s.device(s.state("r7"), "body", "validate"))
    raw = bytearray(unb64(vb["attestationObject"]))
    raw[-1] ^= 0x01
    expect(s, "tampered attestation", s.http("POST", "/api/v1/attestation/validate", A, dict(vb, attestationObject=b64(bytes(raw)))),
           401, "apple_validation_failed")
    expect(s, "refresh with an unknown key", s.http("POST", "/api/v1/attestation/refresh", A, stranger_refresh(challenge(s))), 404, "not_found")
    # Revoked key.
    rv = s.state("revoked")
    s.device(rv, "enroll")
    key_id = json.loads(open(rv).read())["keyId"]
    s.ctl("device", "revoke", key_id)
    expect(s, "refresh with a revoked key", s.http("POST", "/api/v1/attestation/refresh", A, body_from(s.device(rv, "body", "refresh"))),
           403, "forbidden")
    # Wrong app: a key attested for app A presented for app B.
    wa = s.state("wrongapp")
    s.device(wa, "enroll")
    wb = body_from(s.device(wa, "body", "refresh", "--challenge", challenge(s, OTHER), team="OTHER12345", bundle="com.example.other"))
    expect(s, "refresh for another app", s.http("POST", "/api/v1/attestation/refresh", OTHER, wb), 409, "reattest_required")
    # Tampered assertion (the last byte is the counter's): the signature no longer verifies, so
    # it is a forgery as far as the server can tell; 409, and the device is left as it was.
    tp = s.state("tampered")
    s.device(tp, "enroll")
    tb = body_from(s.device(tp, "body", "refresh"))
    raw = bytearray(unb64(tb["assertion"]))
    raw[-1] ^= 0x01
    expect(s, "tampered assertion", s.http("POST", "/api/v1/attestation/refresh", A, dict(tb, assertion=b64(bytes(raw)))), 409, "reattest_required")
    p = s.device(tp, "refresh")
    T.check("a forged assertion for a known keyId leaves that device refreshing normally", p.returncode == 0, p.stderr)
    # Replayed counter (genuinely signed): 409, and the device stays refused until it re-enrolls.
    rc = s.state("counter")
    s.device(rc, "enroll")
    s.device(rc, "refresh")
    counter = json.loads(open(rc).read())["counter"]
    cb = body_from(s.device(rc, "body", "refresh", "--counter", str(counter)))
    expect(s, "refresh replaying a counter", s.http("POST", "/api/v1/attestation/refresh", A, cb), 409, "reattest_required")
    again = body_from(s.device(rc, "body", "refresh"))
    expect(s, "a good refresh after a replay's 409 still fails", s.http("POST", "/api/v1/attestation/refresh", A, again), 409, "reattest_required")
    p = s.device(rc, "enroll")
    p2 = s.device(rc, "refresh")
    T.check("after re-enrolling, refresh works again", p.returncode == 0 and p2.returncode == 0, p.stderr + p2.stderr)


def outsiders(s):
    """Issue #7 items 1 and 4 through nginx: an outsider (another loopback address) cannot lock
    a tenant out, and every authentic presentation of a challenge consumes it."""
    within_one_rate_window()
    import http.client
    tight = app_headers("TIGHT12345", "com.example.tight")
    st = s.state("tight")
    p = s.device(st, "enroll", team="TIGHT12345", bundle="com.example.tight")
    T.check("a device of the tight tenant enrolls", p.returncode == 0, p.stderr)
    codes = {}
    conn = http.client.HTTPConnection("127.0.0.1", s.port, timeout=30, source_address=("127.0.0.2", 0))
    for _ in range(200):
        conn.request("POST", "/api/v1/attestation/refresh", body=b"{}", headers=dict(tight, **{"Content-Type": "application/json"}))
        r = conn.getresponse()
        r.read()
        codes[r.status] = codes.get(r.status, 0) + 1
    conn.close()
    T.check("an outsider's 200 junk refreshes: 400 up to its IP's limit (60), then 429", codes == {400: 60, 429: 140}, str(codes))
    results = [s.device(st, "refresh", team="TIGHT12345", bundle="com.example.tight") for _ in range(5)]
    T.check("the tenant's genuine device still refreshes (5 of 5) after the flood", all(x.returncode == 0 for x in results),
            "; ".join(x.stderr.strip() for x in results if x.returncode))
    # A field of the wrong type is refused before the challenge is looked at.
    vb = body_from(s.device(s.state("wrongtype"), "body", "validate", "--challenge", "A" * 56))
    expect(s, "a wrong-type field with a forged challenge is refused for the field", s.http(
        "POST", "/api/v1/attestation/validate", A, dict(vb, deviceModel=1)), 400, "bad_request")
    # A failed attestation consumes its challenge.
    c = challenge(s)
    vb = body_from(s.device(s.state("consumed1"), "body", "validate", "--challenge", c))
    raw = bytearray(unb64(vb["attestationObject"]))
    raw[-1] ^= 0x01
    expect(s, "a tampered attestation", s.http("POST", "/api/v1/attestation/validate", A, dict(vb, attestationObject=b64(bytes(raw)))),
           401, "apple_validation_failed")
    good = body_from(s.device(s.state("consumed2"), "body", "validate", "--challenge", c))
    expect(s, "its challenge is used up", s.http("POST", "/api/v1/attestation/validate", A, good), 400, "challenge_already_used")
    # So does a refresh for an unknown key.
    c = challenge(s)
    expect(s, "refresh for a key never attested", s.http("POST", "/api/v1/attestation/refresh", A, stranger_refresh(c)), 404, "not_found")
    known = body_from(s.device(s.state("flow"), "body", "refresh", "--challenge", c))
    expect(s, "its challenge is used up too", s.http("POST", "/api/v1/attestation/refresh", A, known), 400, "challenge_already_used")


def race(s, name, bodies, path):
    barrier = threading.Barrier(len(bodies))

    def send(b):
        barrier.wait()
        return s.http("POST", path, A, b)

    with concurrent.futures.ThreadPoolExecutor(len(bodies)) as pool:
        return list(pool.map(send, bodies))


def races(s):
    devices_before = s.ctl_json("store", "stats")["databases"]["devices"]
    c = challenge(s)
    bodies = [body_from(s.device(s.state(f"race{i}"), "body", "validate", "--challenge", c)) for i in range(20)]
    results = race(s, "validate", bodies, "/api/v1/attestation/validate")
    codes = sorted(r.status for r in results)
    others = {(r.json or {}).get("code") for r in results if r.status != 200}
    T.check("20 concurrent validates with one challenge: exactly one 200", codes.count(200) == 1, str(codes))
    T.check("the other 19 are challenge_already_used", others == {"challenge_already_used"}, str(others))
    T.check("the store gained exactly one device", s.ctl_json("store", "stats")["databases"]["devices"] == devices_before + 1)
    st = s.state("racer")
    s.device(st, "enroll")
    key_id = json.loads(open(st).read())["keyId"]
    bodies = [body_from(s.device(st, "body", "refresh", "--counter", "1")) for _ in range(20)]
    results = race(s, "refresh", bodies, "/api/v1/attestation/refresh")
    codes = sorted(r.status for r in results)
    T.check("20 concurrent refreshes with one counter: exactly one 200", codes.count(200) == 1, str(codes))
    T.check("the other 19 are reattest_required", {(r.json or {}).get("code") for r in results if r.status != 200} == {"reattest_required"})
    stored = s.ctl_json("device", "show", key_id)
    T.check("the store holds counter 1 (advanced once)", stored["counter"] == 1, str(stored["counter"]))
    T.check("the replays invalidated the stored attestation", stored["status"] == "invalidated", stored["status"])


def main():
    s = Stack(setup=setup)
    try:
        challenge_checks(s)
        device_flow(s)
        refusals(s)
        outsiders(s)
        races(s)
        no_store_growth(s)
        killed_worker(s)
        stopped_pool(s)
    except Exception as e:  # noqa: BLE001 - report, then fail
        import traceback
        traceback.print_exc()
        T.check("suite ran to the end", False, repr(e))
    finally:
        rc = s.stop()
        T.check("serve stops cleanly on SIGTERM", rc == 0, f"exit {rc}\n{s.serve_output()[-2000:]}")
        leftovers = subprocess.run(["pgrep", "-f", s.data], capture_output=True, text=True).stdout.split()
        T.check("nothing is left running", not leftovers, str(leftovers))
        s.remove_if_passed(T)
    return T.summary("stack")


if __name__ == "__main__":
    sys.exit(main())
