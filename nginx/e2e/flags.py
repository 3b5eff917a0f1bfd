#!/usr/bin/env python3
"""End-to-end checks of feature flags, the flag stream and What's New (issue #41, design §3.11)
through `attestctl serve`, real nginx with Debian's nchan, and software devices (attest-device).

- Rules on attested properties: a trusted device gets the rule's value; after `device flag
  --jailbroken` (risk 80) it gets the default; forged X-Risk-Score / X-Custom-* headers change
  nothing (item 1).
- A 50% rollout over 24 devices: each gets bucket(lineage, key) < 50, the bucket computed by the
  suite itself; an override for one device wins over the rollout and over a matching rule, for
  that device alone, and stops applying once its --until has passed (items 2, 3).
- The stream, read by a raw-bytes SSE client (events split on blank lines, chunked encoding
  undone by hand): the first `event: flags` within 1 s with the defaults only; `flags set` → the
  next event within 1 s (time printed); `: keepalive` (flags.keepaliveSeconds 5); `nginx -s
  reload` → the client sees the stream end, reconnects and gets the defaults again (the auth
  handler primes the emptied channel) (item 4).
- Statuses: a revoked device → 403 on GET and on the stream (JSON envelope); a token that does
  not verify → 401 on the stream (JSON envelope); app headers alone → 401; an API key with app
  headers → the defaults (item 5).
- An unknown environment: GET → {"flags":{}}; the stream → {"flags":{}} (channel ~empty);
  creating it moves new streams to its own channel (item 7).
- What's New: notes 1.0 1.1 2.0 2.1 for a device enrolled with appVersion 1.0: X-App-Version
  2.0 on the flags call within the hour → [] (it raises at most hourly); a new key of the same
  fingerprint validated with 2.0 → [2.0, 1.1], decoded strictly like the SDK (upper-case UUIDs, second-precision dates); seen
  with a lower-case id → 200, a repeat → the same seenAt; unknown id → 404 (item 8).
- Hostile: a token of app A with app B's headers → 401 on the stream; a repeated or %-encoded
  environment → 400 on GET, 500 on the stream (item 10).
- Fault: the flags pool unreachable (its socket moved away; then its master killed) → streams
  get the 500 envelope and no nginx worker exits (the regression test for nchan's auth crash).
- Losing standing on an open stream: auth_request runs at connect only, so each stream also
  holds its credential's holder channel. A device revoked, blocked or invalidated (a replayed
  counter through refresh), or an API key revoked, has that channel deleted: its stream ends
  within 1 s (`:410`), the reconnect gets 403 (401 for the key), a bystander's stream on the
  same channel carries on. A revoke this nginx does not hear of (its publisher socket moved
  away, as on another host) still ends the stream within flags.streamMaxSeconds (10 here). A
  device invalidated while its stream's auth is priming (a proxy holds the publisher) gets no
  stream (403). A tier downgrade reaches an open stream and later ones (the free tier's 10 of
  12 flags).
- A missed publish (review of #41): a change made while the publisher socket is unreachable
  (moved away) warns, and a stream opened afterwards is told the new defaults on connect (the
  auth handler republishes a channel whose message predates the app's changedAt).
- The publisher socket (review of #41): with the data directory where every account may enter
  (as /var/lib or /srv), the account `nobody` cannot connect to DATA/run/flags-publish.sock
  (DATA/run is 0750), so it cannot forge an event on a connected stream. Run as root.
"""
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from datetime import datetime

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "lib"))
from check import Tally  # noqa: E402
from stack import Stack, app_headers, run_suite  # noqa: E402

T = Tally()
A = app_headers()
APP = f"{A['X-Team-ID']}.{A['X-Bundle-ID']}"
OTHER = app_headers(bundle="com.example.other")
TIER = app_headers(bundle="com.example.tier")  # org tiny (pro, then free): a_tier_change_reaches_the_stream
TIER_APP = f"{TIER['X-Team-ID']}.{TIER['X-Bundle-ID']}"
STREAM_MAX = 10  # flags.streamMaxSeconds here: longer than the stream check's keepalive wait
NOBODY = 65534


def setup(s):
    s.ctl("org", "add", "acme", "--tier", "pro", "--rate-limit", "0")
    s.ctl("app", "add", "--org", "acme", "--team", A["X-Team-ID"], "--bundle", A["X-Bundle-ID"], "--env", "both")
    s.ctl("app", "add", "--org", "acme", "--team", OTHER["X-Team-ID"], "--bundle", OTHER["X-Bundle-ID"], "--env", "both")
    s.ctl("org", "add", "tiny", "--tier", "pro", "--rate-limit", "0")
    s.ctl("app", "add", "--org", "tiny", "--team", TIER["X-Team-ID"], "--bundle", TIER["X-Bundle-ID"])
    s.ctl("config", "set", "flags.keepaliveSeconds", "5")
    s.ctl("config", "set", "flags.streamMaxSeconds", str(STREAM_MAX))
    s.ctl("config", "set", "rateLimits.validatePerIPPerMinute", "0")
    s.ctl("flags", "add", "--app", APP, "--key", "beta", "--type", "bool", "--value", "false")
    s.ctl("flags", "rule", "add", "--app", APP, "--key", "beta", "--value", "true", "--when", "riskScore lte 20")


# --- the SDK's models -------------------------------------------------------------------

def sdk_flags(body):
    """FlagPayloadParser: `flags` must be an object; bool, integer (a number equal to its
    integer value, so 2.0 too), double, string, json. None when the SDK would refuse it."""
    try:
        top = json.loads(body)
    except ValueError:
        return None
    if not isinstance(top, dict) or not isinstance(top.get("flags"), dict):
        return None
    out = {}
    for k, v in top["flags"].items():
        if isinstance(v, bool):
            out[k] = ("boolean", v)
        elif isinstance(v, (int, float)):
            out[k] = ("integer", int(v)) if float(v) == int(v) else ("double", float(v))
        elif isinstance(v, str):
            out[k] = ("string", v)
        else:
            out[k] = ("json", json.dumps(v, separators=(",", ":")))
    return out


ISO = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$")


def sdk_notes(body):
    """ReleaseNote decoded like JSONDecoder with .iso8601: every item must have a UUID id,
    version, title, body strings and publishedAt null/absent or an internet date-time without
    fractional seconds; one bad item fails the whole list (raises)."""
    top = json.loads(body)
    notes = []
    for n in top["releaseNotes"]:
        uuid.UUID(n["id"])
        for k in ("version", "title", "body"):
            if not isinstance(n[k], str):
                raise ValueError(f"{k} is not a string")
        p = n.get("publishedAt")
        if p is not None and not ISO.match(p):
            raise ValueError(f"publishedAt {p!r} is not .iso8601")
        notes.append(n)
    return notes


# --- a raw-bytes SSE client ---------------------------------------------------------------

class SSE:
    """GET /api/v1/flags/stream on a socket; reads raw bytes, undoes chunked encoding by hand,
    splits events on blank lines (no library that drops them)."""

    def __init__(self, port, headers, query="", timeout=5.0):
        self.started = time.monotonic()
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        lines = [f"GET /api/v1/flags/stream{query} HTTP/1.1", "Host: 127.0.0.1", "Accept: text/event-stream",
                 "Cache-Control: no-cache"] + [f"{k}: {v}" for k, v in headers.items()]
        self.sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        self.raw = b""
        self.body = b""
        self.closed = False
        while b"\r\n\r\n" not in self.raw and not self.closed:
            self._recv(time.monotonic() + timeout)
        head, _, self.raw = self.raw.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        self.status = int(lines[0].split()[1]) if lines and len(lines[0].split()) > 1 else 0
        self.headers = {k.strip().lower(): v.strip() for k, _, v in (ln.partition(":") for ln in lines[1:])}
        self.chunked = self.headers.get("transfer-encoding", "").lower() == "chunked"
        self.length = int(self.headers["content-length"]) if "content-length" in self.headers else None
        self._dechunk()

    def _recv(self, deadline):
        left = deadline - time.monotonic()
        if left <= 0:
            return
        self.sock.settimeout(left)
        try:
            data = self.sock.recv(65536)
        except socket.timeout:
            return
        except OSError:
            data = b""
        if data:
            self.raw += data
        else:
            self.closed = True

    def _dechunk(self):
        if not self.chunked:
            self.body += self.raw
            self.raw = b""
            return
        while True:
            line, sep, rest = self.raw.partition(b"\r\n")
            if not sep:
                return
            size = int(line.split(b";")[0] or b"0", 16)
            if size == 0:
                self.closed = True
                self.raw = b""
                return
            if len(rest) < size + 2:
                return
            self.body += rest[:size]
            self.raw = rest[size + 2:]

    def block(self, timeout):
        """The next event block (text up to a blank line), or None at the deadline or the end."""
        deadline = time.monotonic() + timeout
        while b"\n\n" not in self.body:
            if self.closed or time.monotonic() >= deadline:
                return None
            self._recv(deadline)
            self._dechunk()
        block, _, self.body = self.body.partition(b"\n\n")
        return block.decode()

    def event(self, timeout):
        """The next `event: flags` block's data (comments skipped), or None."""
        deadline = time.monotonic() + timeout
        while True:
            b = self.block(max(0.0, deadline - time.monotonic()))
            if b is None:
                return None
            lines = b.split("\n")
            if any(ln == "event: flags" for ln in lines):
                return "\n".join(ln[len("data: "):] for ln in lines if ln.startswith("data: "))

    def close(self):
        self.sock.close()


# --- helpers ------------------------------------------------------------------------------

def state(s, name):
    with open(s.state(name)) as f:
        text = f.read()
    return {k: v for k, v in re.findall(r'"(token|deviceId)"\s*:\s*"([^"]*)"', text)}


def enroll(s, name, *args, headers=A):
    p = s.device(s.state(name), *args, "enroll", team=headers["X-Team-ID"], bundle=headers["X-Bundle-ID"])
    if p.returncode != 0:
        raise RuntimeError(f"enroll {name}: {p.stdout}{p.stderr}")
    return state(s, name)


def auth(token, headers=A, extra=None):
    h = dict(headers)
    h["Authorization"] = "Bearer " + token
    h.update(extra or {})
    return h


def get_flags(s, token, query="", extra=None, headers=A):
    return s.http("GET", "/api/v1/flags" + query, headers=auth(token, headers, extra))


def nginx_workers(s):
    master = int(open(os.path.join(s.data, "run", "nginx.pid")).read())
    out = subprocess.run(["pgrep", "-P", str(master)], capture_output=True, text=True).stdout.split()
    return master, sorted(int(p) for p in out)


def error_log(s):
    with open(os.path.join(s.data, "log", "error.log"), errors="replace") as f:
        return f.read()


def envelope(body, code):
    try:
        j = json.loads(body)
    except ValueError:
        return False
    return j.get("code") == code and "requestId" in j


# --- the checks ---------------------------------------------------------------------------

def rules_on_attested_properties(s):
    d = enroll(s, "d1")
    r = get_flags(s, d["token"])
    T.check("a trusted device gets the rule's value (riskScore lte 20)", r.status == 200
            and sdk_flags(r.body) == {"beta": ("boolean", True)}, repr(r))
    T.check("the answer is no-store JSON", r.headers.get("cache-control") == "no-store"
            and r.headers.get("content-type", "").startswith("application/json"), str(r.headers))
    s.ctl("device", "flag", d["deviceId"], "--jailbroken", "--reason", "e2e")
    r = get_flags(s, d["token"])
    T.check("after device flag --jailbroken (risk 80) it gets the default", sdk_flags(r.body) == {"beta": ("boolean", False)},
            repr(r))
    forged = get_flags(s, d["token"], extra={"X-Risk-Score": "0", "X-Custom-riskScore": "0", "X-Custom-my_key": "x"})
    T.check("forged X-Risk-Score / X-Custom-* headers change nothing", sdk_flags(forged.body) == {"beta": ("boolean", False)},
            repr(forged))



def settle():
    """On PostgreSQL a worker sees another process's change within a second (it checks the
    app's generation once a second, as it does the app itself): wait that second there."""
    if os.environ.get("ATTEST_E2E_STORE") == "postgres":
        time.sleep(1.1)


def bucket(fingerprint, key):
    """The rollout bucket computed here, independently of the server (design §0.9): the
    lineage digest is SHA-256(appID ‖ 0x00 ‖ fingerprint)[0..<16]."""
    import hashlib
    digest = hashlib.sha256(APP.encode() + b"\0" + fingerprint.encode()).digest()[:16]
    return int.from_bytes(hashlib.sha256(digest + b"\0" + key.encode()).digest()[:8], "big") % 100


def rollout_and_override(s):
    s.ctl("flags", "add", "--app", APP, "--key", "wave", "--type", "bool", "--value", "false")
    s.ctl("flags", "rollout", "--app", APP, "--key", "wave", "--percent", "50", "--value", "true")
    settle()
    devices, wrong, admitted = [], [], 0
    for i in range(24):
        fp = f"e2e-rollout-{i}"
        d = enroll(s, f"r{i}", "--fingerprint", fp)
        got = sdk_flags(get_flags(s, d["token"]).body) or {}
        expect = bucket(fp, "wave") < 50
        admitted += expect
        if got.get("wave") != ("boolean", expect):
            wrong.append((fp, bucket(fp, "wave"), got.get("wave")))
        devices.append((d, expect))
    T.check("a 50% rollout: each of 24 devices gets bucket(lineage, key) < 50, the bucket computed here",
            not wrong, repr(wrong))
    T.check("the rollout admits some devices and not others", 0 < admitted < 24, f"{admitted} of 24 admitted")
    d, expect = next(x for x in devices if x[1])
    s.ctl("flags", "override", "set", "--app", APP, "--key", "wave", "--device", d["deviceId"], "--value", "false")
    settle()
    got = sdk_flags(get_flags(s, d["token"]).body) or {}
    T.check("an override for an admitted device wins over the rollout (false)", got.get("wave") == ("boolean", False),
            repr(got))
    other = next(x for x in devices if x[1] and x[0] is not d)[0]
    T.check("the override applies to that device alone",
            (sdk_flags(get_flags(s, other["token"]).body) or {}).get("wave") == ("boolean", True))
    s.ctl("flags", "rule", "add", "--app", APP, "--key", "wave", "--value", "true", "--when", "riskScore lte 100")
    settle()
    got = sdk_flags(get_flags(s, d["token"]).body) or {}
    T.check("the override also wins over a rule that matches", got.get("wave") == ("boolean", False), repr(got))
    until = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 3))
    s.ctl("flags", "override", "set", "--app", APP, "--key", "wave", "--device", d["deviceId"], "--value", "false",
          "--until", until)
    time.sleep(4.2)
    got = sdk_flags(get_flags(s, d["token"]).body) or {}
    T.check("once its --until has passed, the override no longer applies (the rule's true)",
            got.get("wave") == ("boolean", True), repr(got))
    s.ctl("flags", "remove", "--app", APP, "--key", "wave")  # the later checks compare whole answers

def stream(s):
    d = enroll(s, "d2")
    c = SSE(s.port, auth(d["token"]), "?environment=production")
    T.check("the stream answers 200 text/event-stream, no-cache", c.status == 200
            and c.headers.get("content-type", "").startswith("text/event-stream")
            and c.headers.get("cache-control") == "no-cache", f"{c.status} {c.headers}")
    first = c.event(1.0)
    T.check("the first event: flags comes within 1 s with the defaults only (the rule not applied)",
            first is not None and sdk_flags(first) == {"beta": ("boolean", False)}, repr(first))
    t0 = time.monotonic()
    s.ctl("flags", "set", "--app", APP, "--key", "beta", "--value", "true")
    nxt = c.event(3.0)
    took = time.monotonic() - t0
    print(f"NOTE: flags stream: flags set → event on the stream in {took * 1000:.0f} ms (attestctl start included)")
    T.check("flags set → the next event within 1 s with the new defaults",
            nxt is not None and sdk_flags(nxt) == {"beta": ("boolean", True)} and took < 1.0, f"{nxt!r} {took:.3f}s")
    t0 = time.monotonic()
    keepalive = None
    while time.monotonic() - t0 < 8:
        b = c.block(8)
        if b is None or b == ": keepalive":
            keepalive = b
            break
    T.check("': keepalive' arrives (flags.keepaliveSeconds 5), byte for byte", keepalive == ": keepalive",
            repr(keepalive))
    master, _ = nginx_workers(s)
    os.kill(master, signal.SIGHUP)
    t0 = time.monotonic()
    tail = []
    while not c.closed and time.monotonic() - t0 < 15:
        tail.append(c.block(0.5))
    T.check("nginx -s reload: the client sees the stream end (410, not the streamMaxSeconds 408)",
            c.closed and any(b and ":410:" in b for b in tail), f"{tail!r} after {time.monotonic() - t0:.1f}s")
    c.close()
    time.sleep(1)  # the SDK reconnects after 1 s
    again = SSE(s.port, auth(d["token"]))
    ev = again.event(1.0)
    T.check("after the reload a reconnect gets the current defaults at once (the emptied channel primed)",
            ev is not None and sdk_flags(ev) == {"beta": ("boolean", True)}, repr(ev))
    again.close()
    s.ctl("flags", "set", "--app", APP, "--key", "beta", "--value", "false")


def statuses(s):
    d = enroll(s, "d3")
    s.ctl("device", "revoke", d["deviceId"])
    r = get_flags(s, d["token"])
    T.check("a revoked device: GET → 403 forbidden", r.status == 403 and envelope(r.body, "forbidden"), repr(r))
    c = SSE(s.port, auth(d["token"]))
    body = c.body + c.raw
    T.check("a revoked device: the stream → 403 with the JSON envelope", c.status == 403
            and envelope(body, "forbidden"), f"{c.status} {body!r}")
    c.close()
    good = enroll(s, "d3b")
    bad = good["token"][:-4] + ("AAAA" if not good["token"].endswith("AAAA") else "BBBB")
    c = SSE(s.port, auth(bad))
    body = c.body + c.raw
    T.check("a token that does not verify: the stream → 401 with the JSON envelope", c.status == 401
            and envelope(body, "unauthorized"), f"{c.status} {body!r}")
    c.close()
    r = s.http("GET", "/api/v1/flags", headers=A)
    T.check("app headers alone → 401", r.status == 401 and envelope(r.body, "unauthorized"), repr(r))
    c = SSE(s.port, A)
    T.check("app headers alone on the stream → 401", c.status == 401, str(c.status))
    c.close()
    key = re.search(r"aat_[A-Za-z0-9_-]+", s.ctl("apikey", "create", "--org", "acme").stdout).group(0)
    settle()  # the stream check's last `flags set`
    r = s.http("GET", "/api/v1/flags", headers=auth(key))
    T.check("an API key with app headers → the defaults (no device: the rule's riskScore is missing)",
            r.status == 200 and sdk_flags(r.body) == {"beta": ("boolean", False)}, repr(r))


def unknown_environment(s):
    d = enroll(s, "d4")
    r = get_flags(s, d["token"], "?environment=qa")
    T.check("GET ?environment=qa → {\"flags\":{}}", r.status == 200 and sdk_flags(r.body) == {}, repr(r))
    c = SSE(s.port, auth(d["token"]), "?environment=staging")
    ev = c.event(1.0)
    T.check("a stream for staging (not created) → event {\"flags\":{}}", ev == '{"flags":{}}', repr(ev))
    c.close()
    s.ctl("flags", "env", "add", "--app", APP, "staging")
    s.ctl("flags", "set", "--app", APP, "--key", "beta", "--value", "true", "--env", "staging")
    settle()
    c = SSE(s.port, auth(d["token"]), "?environment=staging")
    ev = c.event(1.0)
    T.check("once staging exists, new streams get its own channel", ev is not None
            and sdk_flags(ev) == {"beta": ("boolean", True)}, repr(ev))
    c.close()


def whats_new(s):
    d = enroll(s, "d5", "--app-version", "1.0", "--fingerprint", "fp-d5")
    for v in ["1.0", "1.1", "2.0", "2.1"]:
        s.ctl("notes", "add", "--app", APP, "--version", v, "--title", f"Version {v}", "--body", f"* new in **{v}**")
    time.sleep(1.1)
    get_flags(s, d["token"], extra={"X-App-Version": "2.0"})
    r = s.http("GET", "/api/v1/whats-new", headers=auth(d["token"]))
    T.check("X-App-Version 2.0 a second after validate's 1.0: no raise within the hour (no backlog yet)",
            r.status == 200 and sdk_notes(r.body) == [], repr(r))
    # Validate raises the lineage's latest at once: a new key on the same fingerprint, app 2.0.
    d = enroll(s, "d5", "--app-version", "2.0", "--fingerprint", "fp-d5")
    r = s.http("GET", "/api/v1/whats-new", headers=auth(d["token"]))
    try:
        notes = sdk_notes(r.body)
    except (ValueError, KeyError, TypeError) as e:
        notes = None
        print(f"NOTE: the SDK would refuse {r.body!r}: {e}")
    T.check("What's New after validating 2.0 (installed 1.0): [2.0, 1.1], decoded strictly like the SDK",
            notes is not None and [n["version"] for n in notes] == ["2.0", "1.1"], repr(r))
    T.check("ids are upper-case UUIDs", notes is not None and all(n["id"] == n["id"].upper() for n in notes), repr(notes))
    if not notes:
        return
    path = f"/api/v1/whats-new/{notes[0]['id'].lower()}/seen"
    first = s.http("POST", path, headers=auth(d["token"]))
    time.sleep(1.1)
    again = s.http("POST", path, headers=auth(d["token"]))
    T.check("seen with a lower-case id → 200; a repeat → the same seenAt", first.status == 200 and again.status == 200
            and first.json.get("seenAt") == again.json.get("seenAt"), f"{first!r} {again!r}")
    r = s.http("GET", "/api/v1/whats-new", headers=auth(d["token"]))
    T.check("the list is then [1.1]", [n["version"] for n in sdk_notes(r.body)] == ["1.1"], repr(r))
    r = s.http("POST", f"/api/v1/whats-new/{uuid.uuid4()}/seen", headers=auth(d["token"]))
    T.check("an unknown id → 404", r.status == 404 and envelope(r.body, "not_found"), repr(r))


def hostile(s):
    d = enroll(s, "d6")
    c = SSE(s.port, auth(d["token"], OTHER))
    T.check("a token of app A with app B's headers → 401 on the stream", c.status == 401, str(c.status))
    c.close()
    for query in ["?environment=production&environment=staging", "?environment=prod%75ction"]:
        r = get_flags(s, d["token"], query)
        c = SSE(s.port, auth(d["token"]), query)
        body = c.body + c.raw
        T.check(f"{query}: GET → 400, the stream → 500 envelope", r.status == 400 and c.status == 500
                and envelope(body, "internal_error"), f"{r.status} {c.status} {body!r}")
        c.close()


def fault(s):
    d = enroll(s, "d7")
    master, workers = nginx_workers(s)
    sock = os.path.join(s.data, "run", "flags.sock")
    away = sock + ".away"
    os.rename(sock, away)
    try:
        results = []
        for _ in range(20):
            c = SSE(s.port, auth(d["token"]))
            results.append((c.status, envelope(c.body + c.raw, "internal_error")))
            c.close()
    finally:
        os.rename(away, sock)
    T.check("the flags pool unreachable: 20 streams each get the 500 envelope", results == [(500, True)] * 20,
            str(results))
    pool = s.pool_master("flags")
    os.kill(pool, signal.SIGKILL)
    statuses_seen = []
    for _ in range(20):
        c = SSE(s.port, auth(d["token"]))
        statuses_seen.append(c.status)
        c.close()
    print(f"NOTE: flags pool master killed: stream statuses {statuses_seen}")
    T.check("the pool's master killed: streams get 500 (or 200 once serve restarted it), never a dropped connection",
            all(st in (500, 200) for st in statuses_seen), str(statuses_seen))
    time.sleep(0.5)
    master2, workers2 = nginx_workers(s)
    T.check("no nginx worker exited (same workers, no 'exited on signal' in error.log)",
            (master2, workers2) == (master, workers) and "exited on signal" not in error_log(s),
            f"{workers} → {workers2}")


def read_until_closed(c, limit):
    """The blocks a stream sends until nginx ends it (or `limit` s pass); the seconds it took."""
    t0 = time.monotonic()
    tail = []
    while not c.closed and time.monotonic() - t0 < limit:
        b = c.block(0.25)
        if b is not None:
            tail.append(b)
    return tail, time.monotonic() - t0


def open_stream(s, headers, what):
    c = SSE(s.port, headers)
    first = c.event(2.0)
    T.check(f"{what}: its stream starts", c.status == 200 and first is not None, f"{c.status} {first!r}")
    return c


def replayed_refresh(s, name):
    """A refresh signed by the device's own key at the counter the server already holds (the
    counter of its last accepted assertion): a replay, which invalidates the device."""
    counter = json.loads(open(s.state(name)).read()).get("counter", 0)
    c = s.http("GET", "/api/v1/attestation/challenge", A).json["challenge"]
    p = s.device(s.state(name), "body", "refresh", "--challenge", c, "--counter", str(counter))
    return s.http("POST", "/api/v1/attestation/refresh", A, json.loads(p.stdout))


def streams_end_when_standing_is_lost(s):
    """The issue: "a revoked device gets no flags". auth_request runs at connect only, so each
    stream also holds its own holder channel (~lineage/<hex>, ~key/<hex>): revoking, blocking
    or invalidating the device, or revoking the API key, deletes it and nchan ends that stream at
    once (`:410`); the SDK reconnects 1 s after a clean close and is refused. Another device's
    stream on the same environment channel carries on and still gets changes."""
    bystander = enroll(s, "bystander")
    b = open_stream(s, auth(bystander["token"]), "a bystander")
    key = re.search(r"aat_[A-Za-z0-9_-]+", s.ctl("apikey", "create", "--org", "acme").stdout).group(0)
    cases = [
        ("revoked", lambda d: s.ctl("device", "revoke", d["deviceId"]), 403),
        ("blocked", lambda d: s.ctl("device", "flag", d["deviceId"], "--block", "--reason", "e2e"), 403),
        ("invalidated by a replayed counter", lambda d: replayed_refresh(s, d["name"]), 403),
        ("an API key revoked", lambda d: s.ctl("apikey", "revoke", key[:12]), 401),
    ]
    for what, act, refusal in cases:
        if what.startswith("an API key"):
            d, headers = {"name": "key"}, auth(key)
        else:
            d = dict(enroll(s, what.split()[0]), name=what.split()[0])
            headers = auth(d["token"])
        c = open_stream(s, headers, what)
        out = act(d)
        if isinstance(out, subprocess.CompletedProcess):
            T.check(f"{what}: the command succeeds without a warning", out.returncode == 0 and "warning" not in out.stderr,
                    out.stdout + out.stderr)
        else:
            T.check(f"{what}: the replayed refresh is refused (409 reattest)", out.status == 409, repr(out))
        tail, took = read_until_closed(c, STREAM_MAX + 3)
        print(f"NOTE: {what}: its open stream ended {took * 1000:.0f} ms after the change; last blocks {tail[-1:]!r}")
        T.check(f"{what}: its open stream ends at once (within 1 s: nchan's ':410' as the holder channel goes)",
                c.closed and took < 1.0 and any(":410" in x for x in tail), f"closed={c.closed} {took:.2f}s {tail!r}")
        time.sleep(1)  # the SDK reconnects 1 s after a clean close
        again = SSE(s.port, headers)
        body = again.body + again.raw
        T.check(f"{what}: its reconnect is refused ({refusal}, JSON envelope)", again.status == refusal
                and envelope(body, "forbidden" if refusal == 403 else "unauthorized"), f"{again.status} {body!r}")
        again.close()
        if refusal == 403:
            r = get_flags(s, d["token"])
            T.check(f"{what}: GET /api/v1/flags refuses it too (403)", r.status == 403, repr(r))
    T.check("the bystander's stream on the same channel is still open", not b.closed)
    s.ctl("flags", "set", "--app", APP, "--key", "beta", "--value", "true")
    ev = b.event(1.5)
    T.check("and it still gets the next change", sdk_flags(ev or "") == {"beta": ("boolean", True)}, repr(ev))
    b.close()
    s.ctl("flags", "set", "--app", APP, "--key", "beta", "--value", "false")


class HoldingProxy:
    """A unix-socket proxy at nginx's publisher path that forwards each request to nginx's real
    socket; `hold()` makes it keep the next GET (the prime's channel info) until `released` is
    set (from the review of #41)."""

    def __init__(self, path, real):
        self.path, self.real = path, real
        self.holding = False
        self.held = threading.Event()
        self.released = threading.Event()
        self.log = []
        self.srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.srv.bind(path)
        os.chmod(path, 0o666)
        self.srv.listen(64)
        threading.Thread(target=self._loop, daemon=True).start()

    def hold(self):
        self.held.clear()
        self.released.clear()
        self.holding = True

    def close(self):
        self.released.set()
        self.srv.close()
        os.unlink(self.path)

    def _loop(self):
        while True:
            try:
                c, _ = self.srv.accept()
            except OSError:
                return
            threading.Thread(target=self._handle, args=(c,), daemon=True).start()

    def _handle(self, c):
        c.settimeout(15)
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = c.recv(65536)
            if not chunk:
                break
            data += chunk
        head = data.split(b"\r\n\r\n", 1)[0].decode("latin-1")
        m = re.search(r"(?i)content-length:\s*(\d+)", head)
        need = int(m.group(1)) if m else 0
        while len(data) - len(head) - 4 < need:
            chunk = c.recv(65536)
            if not chunk:
                break
            data += chunk
        first = head.split("\r\n", 1)[0]
        self.log.append((time.monotonic(), first))
        if first.startswith("GET ") and self.holding:
            self.holding = False
            self.held.set()
            self.released.wait(10)
        u = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        u.connect(self.real)
        u.sendall(data)
        answer = b""
        while True:
            chunk = u.recv(65536)
            if not chunk:
                break
            answer += chunk
        u.close()
        try:
            c.sendall(answer)
        except OSError:
            pass  # the pool gave up (NchanPublisher's 1 s deadline) and answered nginx anyway
        c.close()


def a_device_losing_standing_while_its_stream_connects_gets_no_stream(s):
    """The race (review of #41): the auth subrequest reads the device, primes the channel, then
    answers; nchan subscribes only after that. A device invalidated in between had its holder
    deleted before its stream held it. A proxy in front of the publisher socket holds the
    prime's channel-info GET while a replayed refresh invalidates the device; the auth reads
    the standing again as its last step, so the stream is refused (403), or, if it was
    authorised, it must end at once."""
    d = enroll(s, "racer")
    r = get_flags(s, d["token"])
    T.check("race: the device is served before (GET 200)", r.status == 200, repr(r))
    counter = json.loads(open(s.state("racer")).read()).get("counter", 0)
    challenge = s.http("GET", "/api/v1/attestation/challenge", A).json["challenge"]
    body = json.loads(s.device(s.state("racer"), "body", "refresh", "--challenge", challenge,
                               "--counter", str(counter)).stdout)
    sock = os.path.join(s.data, "run", "flags-publish.sock")
    os.rename(sock, sock + ".real")
    proxy = HoldingProxy(sock, sock + ".real")
    try:
        proxy.hold()
        box = {}
        opener = threading.Thread(target=lambda: box.setdefault("c", SSE(s.port, auth(d["token"]))))
        opener.start()
        T.check("race: the pool read the device and is priming (its channel-info GET is held)", proxy.held.wait(5))
        out = s.http("POST", "/api/v1/attestation/refresh", A, body)
        T.check("race: the replayed refresh invalidates the device (409) meanwhile", out.status == 409, repr(out))
        proxy.released.set()
        opener.join(10)
        c = box.get("c")
        if c is not None and c.status == 200:
            tail, took = read_until_closed(c, 3.0)
            T.check("race: the stream authorised before the invalidation ends at once", c.closed and took < 1.0,
                    f"open after {took:.1f} s: {tail!r}")
        else:
            T.check("race: the stream is refused (403 with the JSON envelope)", c is not None and c.status == 403
                    and envelope(c.body + c.raw, "forbidden"), repr(c and c.status))
        if c is not None:
            c.close()
    finally:
        proxy.close()
        os.rename(sock + ".real", sock)


def a_tier_change_reaches_the_stream(s):
    """A tier decides which flags are served (free: the first 10). A downgrade is a change to
    the organization's apps' flags (review of #41): an open stream gets the new defaults, and
    one opened later gets what GET serves."""
    keys = [f"f{i:02d}" for i in range(1, 13)]
    for k in keys:
        s.ctl("flags", "add", "--app", TIER_APP, "--key", k, "--type", "bool", "--value", "true")
    key = re.search(r"aat_[A-Za-z0-9_-]+", s.ctl("apikey", "create", "--org", "tiny").stdout).group(0)
    c = SSE(s.port, auth(key, TIER))
    before = json.loads(c.event(2.0) or "{}").get("flags", {})
    T.check("tier: under pro the stream carries the 12 flags", sorted(before) == keys, repr(before))
    s.ctl("org", "set", "tiny", "--tier", "free")
    changed = json.loads(c.event(1.5) or "{}").get("flags", {})
    c.close()
    # On PostgreSQL a worker sees another process's write within a second (durableVersion).
    deadline = time.monotonic() + 2.0
    while True:
        r = s.http("GET", "/api/v1/flags", auth(key, TIER))
        served = sorted(json.loads(r.body).get("flags", {}))
        if served == keys[:10] or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    T.check("tier: after the downgrade to free GET serves the first 10 (within 2 s)", served == keys[:10], repr(served))
    T.check("tier: the open stream is sent them within 1.5 s", sorted(changed) == served, repr(sorted(changed)))
    time.sleep(1.1)  # past the second of the downgrade
    c = SSE(s.port, auth(key, TIER))
    after = json.loads(c.event(2.0) or "{}").get("flags", {})
    c.close()
    T.check("tier: a stream opened later carries what GET serves", sorted(after) == served, repr(sorted(after)))


def a_revoke_nginx_does_not_hear_of_still_ends_the_stream(s):
    """A revoke made where this nginx's publisher is out of reach (on another host sharing the
    database; here the socket moved away meanwhile): nchan_subscriber_timeout
    (flags.streamMaxSeconds) still ends the stream (`:408`), and the reconnect gets 403."""
    d = enroll(s, "elsewhere")
    c = open_stream(s, auth(d["token"]), "a device revoked elsewhere")
    t0 = time.monotonic()
    sock = os.path.join(s.data, "run", "flags-publish.sock")
    os.rename(sock, sock + ".away")
    try:
        s.ctl("device", "revoke", d["deviceId"])
    finally:
        os.rename(sock + ".away", sock)
    tail, _ = read_until_closed(c, STREAM_MAX + 3)
    took = time.monotonic() - t0
    print(f"NOTE: revoked where nginx did not hear of it: the stream ended {took:.1f} s later")
    T.check(f"its stream still ends within flags.streamMaxSeconds ({STREAM_MAX} s), with nchan's ':408'",
            c.closed and took <= STREAM_MAX + 0.5 and any(":408" in x for x in tail), f"{took:.1f}s {tail!r}")
    time.sleep(1)
    again = SSE(s.port, auth(d["token"]))
    T.check("its reconnect gets 403", again.status == 403, str(again.status))
    again.close()


def a_missed_publish_is_repaired_at_connect(s):
    """A change whose publish failed (nginx busy past NchanPublisher's 1 s, the CLI killed between
    commit and publish, the socket unreachable: here moved away while `flags set` runs) leaves
    the channel holding the old defaults. The stream's contract: on connect, the environment's
    current defaults; the auth handler republishes a message older than the app's changedAt."""
    key = re.search(r"aat_[A-Za-z0-9_-]+", s.ctl("apikey", "create", "--org", "acme").stdout).group(0)
    c = SSE(s.port, auth(key))
    T.check("a stream before the change gets beta=false", sdk_flags(c.event(2.0) or "") == {"beta": ("boolean", False)})
    c.close()
    time.sleep(1.1)  # changedAt and nchan's message id have whole seconds: the change a later second
    sock = os.path.join(s.data, "run", "flags-publish.sock")
    away = sock + ".away"
    os.rename(sock, away)
    try:
        out = s.ctl("flags", "set", "--app", APP, "--key", "beta", "--value", "true")
    finally:
        os.rename(away, sock)
    said = (out.stdout + out.stderr).strip()
    print(f"NOTE: flags set while the publisher was unreachable: {said!r}")
    T.check("flags set with the publisher socket missing says so (a warning naming the socket)",
            out.returncode == 0 and "warning" in out.stderr and "flags-publish.sock" in out.stderr, repr(said))
    r = s.http("GET", "/api/v1/flags", headers=auth(key))
    T.check("GET answers the new default", sdk_flags(r.body) == {"beta": ("boolean", True)}, repr(r))
    c = SSE(s.port, auth(key))
    ev = c.event(2.0)
    c.close()
    T.check("a stream opened after the missed publish is told the current defaults on connect",
            sdk_flags(ev or "") == {"beta": ("boolean", True)}, f"connect event {ev!r}")
    s.ctl("flags", "set", "--app", APP, "--key", "beta", "--value", "false")


def publish_as_nobody(path, channel, body):
    """POST /pub/<channel> on the unix socket `path` from a forked child running as nobody; its
    status line, or "refused: …" when it cannot connect."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            os.setgroups([])
            os.setgid(NOBODY)
            os.setuid(NOBODY)
            c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            c.settimeout(3)
            c.connect(path)
            head = (f"POST /pub/{channel} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                    f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n")
            c.sendall(head.encode() + body)
            data = b""
            while True:
                chunk = c.recv(4096)
                if not chunk:
                    break
                data += chunk
            out = data.split(b"\r\n", 1)[0].decode("latin-1")
        except Exception as e:  # noqa: BLE001 - reported to the parent
            out = "refused: " + repr(e)
        os.write(w, out.encode())
        os._exit(0)
    os.close(w)
    out = os.read(r, 4096).decode()
    os.close(r)
    os.waitpid(pid, 0)
    return out


def publisher_is_ours_only(s):
    """nginx makes its unix listen sockets 0666: DATA/run (0750) is what keeps other accounts
    from the publisher. The data directory lies where every account may enter (main)."""
    sock = os.path.join(s.data, "run", "flags-publish.sock")
    modes = (f"socket {oct(os.stat(sock).st_mode & 0o777)}, "
             f"run dir {oct(os.stat(os.path.dirname(sock)).st_mode & 0o777)}")
    key = re.search(r"aat_[A-Za-z0-9_-]+", s.ctl("apikey", "create", "--org", "acme").stdout).group(0)
    first = SSE(s.port, auth(key))
    first_event = first.event(2.0)
    T.check("a stream starts with the stored default", first.status == 200
            and sdk_flags(first_event or "") == {"beta": ("boolean", False)}, repr(first_event))
    out = publish_as_nobody(sock, APP + "/production", b'{"flags":{"beta":true}}')
    T.check("another local account (nobody) cannot publish to the flag stream", out.startswith("refused"),
            f"{modes}: nobody's POST got {out!r}")
    forged = first.event(2.0)
    first.close()
    T.check("a connected stream receives no event the server did not publish", forged is None,
            f"the stream got {forged!r}")


def main():
    s = Stack(setup=setup)
    os.chmod(s.dir, 0o755)  # the data directory where every account may enter, like /var/lib or /srv
    return run_suite(T, "flags", s, [rules_on_attested_properties, rollout_and_override, stream, statuses, unknown_environment, whats_new,
                                     hostile, streams_end_when_standing_is_lost,
                                     a_device_losing_standing_while_its_stream_connects_gets_no_stream,
                                     a_tier_change_reaches_the_stream,
                                     a_revoke_nginx_does_not_hear_of_still_ends_the_stream, a_missed_publish_is_repaired_at_connect,
                                     publisher_is_ours_only, fault])


if __name__ == "__main__":
    sys.exit(main())
