#!/usr/bin/env python3
"""Prometheus metrics end to end (issue #39): /metrics on the metrics listener only, accepted by
`promtool check metrics`, every family of docs/metrics.md present, no device, key, address or
app in it; then known traffic (challenges, enrollments, refreshes, a forged, a replayed, a
revoked and a blocked refresh, a failed verification, an organization's rate limit, a killed
worker, a reload) and the counters must move by exactly what was sent. The flag stream (#41):
a stream connected and a refused one move the stream auth's outcomes by one each, a flag
change's publishes count `ok` and match nchan's own count, and nchan's gauges show the
subscriber while it is connected and none once it left. Prints PASS/FAIL per
check and a summary; exits 1 on a failure."""
import http.client
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import Counter

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "lib"))
from check import Tally  # noqa: E402
from receiver import Receiver  # noqa: E402
from stack import BIN, Stack, app_headers, b64, run_suite, sha256, unb64, within_one_rate_window  # noqa: E402

T = Tally()
A = app_headers()
TIGHT = app_headers("TIGHT12345", "com.example.tight")
FAMILIES = {
    "attestedge_requests_total": "counter", "attestedge_request_duration_seconds": "histogram",
    "attestedge_verification_failures_total": "counter", "attestedge_refresh_outcomes_total": "counter",
    "attestedge_rate_limited_total": "counter", "attestedge_group_commit_size": "histogram",
    "attestedge_sync_duration_seconds": "histogram", "attestedge_pool_up": "gauge", "attestedge_pool_workers": "gauge",
    "attestedge_pool_worker_restarts_total": "counter", "attestedge_pool_reloads_total": "counter",
    "attestedge_store_up": "gauge", "attestedge_store_map_used_bytes": "gauge", "attestedge_store_map_size_bytes": "gauge",
    "attestedge_webhook_backlog": "gauge", "attestedge_webhook_attempts_total": "counter",
    "attestedge_receipt_verifications_total": "counter", "attestedge_receipt_backlog": "gauge",
    "attestedge_receipt_redemptions_total": "counter",
    "attestedge_flag_stream_auth_total": "counter", "attestedge_flag_publishes_total": "counter",
    "attestedge_flag_stream_up": "gauge", "attestedge_flag_stream_subscribers": "gauge",
    "attestedge_flag_stream_channels": "gauge", "attestedge_flag_stream_messages": "gauge",
    "attestedge_flag_stream_published_messages_total": "counter",
    "attestedge_flag_stream_shared_memory_used_bytes": "gauge",
    "attestedge_flag_stream_shared_memory_limit_bytes": "gauge",
    "attestedge_monthly_active_devices": "gauge", "attestedge_monthly_active_devices_limit": "gauge",
    "attestedge_time_seconds": "gauge",
}
LABELS = {"pool", "endpoint", "status", "step", "outcome", "bucket", "class", "environment", "org", "le", "result"}
POOLS = ["challenge", "validate", "refresh", "mad", "webhooks", "monitor", "flags", "feedback", "org"]
SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$')
LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')

# What this suite sent: (pool, endpoint, status) → requests, and the keys it enrolled.
sent = Counter()
enrolled_keys = []


def setup(stack):
    stack.ctl("org", "add", "acme", "--tier", "pro", "--rate-limit", "0")
    stack.ctl("app", "add", "--org", "acme", "--team", "ABCDE12345", "--bundle", "com.example.app")
    # An organization whose bucket (3 a minute, validate and refresh together) this suite fills.
    stack.ctl("org", "add", "tight", "--tier", "pro", "--rate-limit", "3")
    stack.ctl("app", "add", "--org", "tight", "--team", "TIGHT12345", "--bundle", "com.example.tight")
    stack.ctl("config", "set", "webhooks.retrySchedule", "[1,2]")


def scrape(s):
    """The metrics listener's answer: (status, content type, text)."""
    conn = http.client.HTTPConnection("127.0.0.1", s.metrics_port, timeout=30)
    conn.request("GET", "/metrics")
    r = conn.getresponse()
    body = r.read().decode()
    conn.close()
    return r.status, r.getheader("Content-Type", ""), body


def parse(text):
    """{(name, ((label, value), …) sorted): value} of every sample."""
    samples = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = SAMPLE.match(line)
        if not m:
            raise ValueError(f"not a sample line: {line!r}")
        labels = tuple(sorted(LABEL.findall(m.group(2) or "")))
        samples[(m.group(1), labels)] = float(m.group(3))
    return samples


def metrics(s):
    return parse(scrape(s)[2])


def value(samples, name, **labels):
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def total(samples, name, **labels):
    """The sum of `name`'s samples whose labels include `labels`."""
    return sum(v for (n, ls), v in samples.items() if n == name and set(labels.items()) <= set(ls))


def request(s, pool, endpoint, method, path, headers=None, body=None):
    r = s.http(method, path, headers, body)
    sent[(pool, endpoint, str(r.status))] += 1
    return r


def challenge(s, headers=A):
    r = request(s, "challenge", "challenge", "GET", "/api/v1/attestation/challenge", headers)
    assert r.status == 200, r
    return r.json["challenge"]


def device(s, name, command, headers=A):
    """attest-device `command` (enroll or refresh): one challenge and one validate or refresh, both 200."""
    team, bundle = headers["X-Team-ID"], headers["X-Bundle-ID"]
    p = s.device(s.state(name), command, team=team, bundle=bundle)
    T.check(f"attest-device {command} ({name})", p.returncode == 0, p.stderr)
    sent[("challenge", "challenge", "200")] += 1
    endpoint = "validate" if command == "enroll" else "refresh"
    sent[(endpoint, endpoint, "200")] += 1
    if command == "enroll":
        enrolled_keys.append(json.loads(s.device(s.state(name), "show", "--json").stdout)["keyId"])
    return p


def body(s, name, kind, headers=A, *extra):
    team, bundle = headers["X-Team-ID"], headers["X-Bundle-ID"]
    p = s.device(s.state(name), "body", kind, "--challenge", challenge(s, headers), *extra, team=team, bundle=bundle)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def exposition(s):
    status, ctype, text = scrape(s)
    T.check("/metrics on the metrics listener: 200", status == 200, str(status))
    T.check("Content-Type is text format 0.0.4", ctype.startswith("text/plain; version=0.0.4"), ctype)
    p = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True, text=True)
    T.check("promtool check metrics accepts it", p.returncode == 0, p.stdout + p.stderr)
    types = dict(re.findall(r"^# TYPE (\S+) (\S+)$", text, re.M))
    T.check("every family has its TYPE, even at zero", types == FAMILIES, str(set(types) ^ set(FAMILIES)))
    helps = set(re.findall(r"^# HELP (\S+) ", text, re.M))
    T.check("every family has its HELP", helps == set(FAMILIES), str(helps ^ set(FAMILIES)))
    samples = parse(text)
    workers = {pool: value(samples, "attestedge_pool_workers", pool=pool) for pool in POOLS}
    T.check("every pool reports its workers", all(w == s.workers for w in workers.values()), str(workers))
    up = {pool: samples.get(("attestedge_pool_up", (("pool", pool),))) for pool in POOLS}
    T.check("every pool is up, the monitor included", all(u == 1 for u in up.values()), str(up))
    T.check("the store answered", samples.get(("attestedge_store_up", ())) == 1, str(samples.get(("attestedge_store_up", ()))))
    for environment in ("durable", "ephemeral"):
        used = value(samples, "attestedge_store_map_used_bytes", environment=environment)
        size = value(samples, "attestedge_store_map_size_bytes", environment=environment)
        T.check(f"store map of the {environment} environment: 0 < used <= size", 0 < used <= size, f"{used} of {size}")
    T.check("nchan's status is read from the flag stream's publisher: flag_stream_up 1",
            samples.get(("attestedge_flag_stream_up", ())) == 1, str(samples.get(("attestedge_flag_stream_up", ()))))
    memory = value(samples, "attestedge_flag_stream_shared_memory_limit_bytes")
    T.check("nchan's shared memory size is flags.streamMemoryMiB's (32 MiB by default)", memory == 32 << 20, str(memory))
    clock = value(samples, "attestedge_time_seconds")
    T.check("attestedge_time_seconds is the host's clock", abs(clock - time.time()) < 5, f"{clock} vs {time.time()}")
    r = s.http("GET", "/metrics")
    T.check("/metrics is not served on the main site", r.status == 404 and b"attestedge_" not in r.body, repr(r))


def traffic(s):
    before = metrics(s)
    for _ in range(5):
        challenge(s)
    device(s, "one", "enroll")
    for _ in range(3):
        device(s, "one", "refresh")
    device(s, "two", "enroll")
    device(s, "two", "refresh")
    # A forged refresh: the assertion's last byte (the counter's) changed, so its signature fails.
    forged = body(s, "two", "refresh")
    raw = bytearray(unb64(forged["assertion"]))
    raw[-1] ^= 0x01
    r = request(s, "refresh", "refresh", "POST", "/api/v1/attestation/refresh", A, dict(forged, assertion=b64(bytes(raw))))
    T.check("a forged refresh: 409", r.status == 409, repr(r))
    # A replayed counter, genuinely signed.
    counter = json.loads(open(s.state("one")).read())["counter"]
    r = request(s, "refresh", "refresh", "POST", "/api/v1/attestation/refresh", A,
                body(s, "one", "refresh", A, "--counter", str(counter)))
    T.check("a replayed counter: 409", r.status == 409, repr(r))
    # Revoked, and blocked by the operator.
    device(s, "three", "enroll")
    s.ctl("device", "revoke", enrolled_keys[-1])
    r = request(s, "refresh", "refresh", "POST", "/api/v1/attestation/refresh", A, body(s, "three", "refresh"))
    T.check("a revoked key's refresh: 403", r.status == 403, repr(r))
    device(s, "four", "enroll")
    s.ctl("device", "flag", enrolled_keys[-1], "--block")
    r = request(s, "refresh", "refresh", "POST", "/api/v1/attestation/refresh", A, body(s, "four", "refresh"))
    T.check("a blocked device's refresh: 403", r.status == 403, repr(r))
    # An attestation whose keyId is not its key's: refused at Apple's step 5 (key_id).
    bad = body(s, "five", "validate")
    r = request(s, "validate", "validate", "POST", "/api/v1/attestation/validate", A,
                dict(bad, keyId=b64(sha256(b"another key"))))
    T.check("an attestation for another keyId is refused", r.status in (400, 401, 403), repr(r))
    # The tight organization's bucket: 3 a minute; the fourth device request is a 429.
    within_one_rate_window(30)
    device(s, "tight", "enroll", TIGHT)
    device(s, "tight", "refresh", TIGHT)
    device(s, "tight", "refresh", TIGHT)
    r = request(s, "refresh", "refresh", "POST", "/api/v1/attestation/refresh", TIGHT, body(s, "tight", "refresh", TIGHT))
    T.check("the organization's fourth request in a minute: 429", r.status == 429, repr(r))

    after = metrics(s)

    def delta(name, **labels):
        return total(after, name, **labels) - total(before, name, **labels)

    for pool in ("challenge", "validate", "refresh"):
        labels = {k for k in sent if k[0] == pool} | {
            (pool, dict(ls)["endpoint"], dict(ls)["status"]) for (n, ls) in after
            if n == "attestedge_requests_total" and dict(ls).get("pool") == pool}
        seen = {k: delta("attestedge_requests_total", pool=k[0], endpoint=k[1], status=k[2]) for k in labels}
        expected = {k: float(sent.get(k, 0)) for k in labels}
        T.check(f"requests_total of the {pool} pool moved by exactly what was sent", seen == expected,
                f"seen {seen}, sent {expected}")
        count = delta("attestedge_request_duration_seconds_count", pool=pool, endpoint=pool)
        sent_here = sum(n for (p, _, _), n in sent.items() if p == pool)
        T.check(f"the {pool} latency histogram counted each of them", count == sent_here, f"{count} vs {sent_here}")
        inf = delta("attestedge_request_duration_seconds_bucket", pool=pool, endpoint=pool, le="+Inf")
        T.check(f"the {pool} histogram's +Inf bucket is its count", inf == count, f"{inf} vs {count}")
    outcomes = {o: delta("attestedge_refresh_outcomes_total", outcome=o)
                for o in ("ok", "replay", "forged", "revoked", "blocked")}
    ok = float(sent[("refresh", "refresh", "200")])
    T.check("refresh outcomes moved by exactly what was sent",
            outcomes == {"ok": ok, "replay": 1, "forged": 1, "revoked": 1, "blocked": 1}, str(outcomes))
    steps = delta("attestedge_verification_failures_total")
    T.check("one verification failure, at step key_id",
            steps == 1 and delta("attestedge_verification_failures_total", step="key_id") == 1, f"{steps} in all")
    buckets = {b: delta("attestedge_rate_limited_total", bucket=b) for b in ("org", "validate-ip", "refresh-ip")}
    T.check("one rate-limit refusal, by the organization's bucket", buckets == {"org": 1, "validate-ip": 0, "refresh-ip": 0},
            str(buckets))
    writes = sent[("validate", "validate", "200")] + sent[("refresh", "refresh", "200")]
    group_sum = delta("attestedge_group_commit_size_sum")
    T.check("group commits wrote exactly the successful validates and refreshes", group_sum == writes,
            f"{group_sum} vs {writes}")
    group_count = delta("attestedge_group_commit_size_count")
    T.check("one group commit at most per write", 1 <= group_count <= writes, f"{group_count} groups")
    enrolled = {"acme": 4, "tight": 1}  # one to four (five's validate failed), and tight
    mad = {org: value(after, "attestedge_monthly_active_devices", org=org) for org in enrolled}
    T.check("monthly active devices per organization", mad == {k: float(v) for k, v in enrolled.items()}, str(mad))
    limits = {org: value(after, "attestedge_monthly_active_devices_limit", org=org) for org in enrolled}
    T.check("each organization's limit (pro: 10000)", limits == {"acme": 10000.0, "tight": 10000.0}, str(limits))
    text = scrape(s)[2]
    secrets = enrolled_keys + ["ABCDE12345", "TIGHT12345", "com.example", "127.0.0.1"]
    T.check("no key, device, app or address in the metrics", not any(x in text for x in secrets),
            str([x for x in secrets if x in text]))
    names = {name for name, _ in re.findall(LABEL.pattern, re.sub(r"^#.*$", "", text, flags=re.M))}
    T.check("only the documented labels", names <= LABELS, str(names - LABELS))


def pool_events(s):
    before = metrics(s)
    workers = s.pool_workers("challenge")
    os.kill(workers[0], signal.SIGKILL)
    deadline = time.time() + 15
    now = before
    while time.time() < deadline:
        now = metrics(s)
        if (value(now, "attestedge_pool_worker_restarts_total", pool="challenge") > value(
                before, "attestedge_pool_worker_restarts_total", pool="challenge")
                and value(now, "attestedge_pool_workers", pool="challenge") == s.workers):
            break
        time.sleep(0.1)
    restarts = value(now, "attestedge_pool_worker_restarts_total", pool="challenge") - value(
        before, "attestedge_pool_worker_restarts_total", pool="challenge")
    T.check("a killed worker: one restart, workers back to their number",
            restarts == 1 and value(now, "attestedge_pool_workers", pool="challenge") == s.workers,
            f"restarts +{restarts}, workers {value(now, 'attestedge_pool_workers', pool='challenge')}")
    p = s.ctl("reload", "challenge", check=False)
    T.check("attestctl reload challenge", p.returncode == 0, p.stdout + p.stderr)
    for _ in range(3):
        challenge(s)
    after = metrics(s)
    reloads = value(after, "attestedge_pool_reloads_total", pool="challenge") - value(
        before, "attestedge_pool_reloads_total", pool="challenge")
    T.check("the reload is counted once", reloads == 1, str(reloads))
    key = ("attestedge_requests_total", (("endpoint", "challenge"), ("pool", "challenge"), ("status", "200")))
    T.check("counters survive the reload and go on from where they were",
            after.get(key, 0) - now.get(key, 0) == 3, f"{now.get(key)} -> {after.get(key)}")
    restarts_after = value(after, "attestedge_pool_worker_restarts_total", pool="challenge") - value(
        before, "attestedge_pool_worker_restarts_total", pool="challenge")
    T.check("a reload is not a restart", restarts_after == 1, str(restarts_after))
    p = subprocess.run(["promtool", "check", "metrics"], input=scrape(s)[2], capture_output=True, text=True)
    T.check("promtool still accepts it after the traffic", p.returncode == 0, p.stdout + p.stderr)


def pool_down(s):
    """A pool master killed (SIGKILL): its workers die with it, its segment keeps the last
    pool_workers, and pool_up must say 0 until serve has restarted it. serve restarts a master
    that was up 10 s at once, then after 0.5 s, 1 s, 2 s… for quick deaths: the master is killed
    again as soon as it is back until a scrape falls inside the gap."""
    def up(samples):
        return samples.get(("attestedge_pool_up", (("pool", "mad"),)))
    seen = None
    for _ in range(6):
        master = s.pool_master("mad")
        if master is None:
            break
        os.kill(master, signal.SIGKILL)
        deadline = time.time() + 40
        while time.time() < deadline:
            now = metrics(s)
            if up(now) == 0:
                seen = now
                break
            back = s.pool_master("mad")
            if back not in (None, master) and up(now) == 1:
                break
            time.sleep(0.02)
        if seen:
            break
    T.check("a killed pool master: pool_up 0 while its segment still says its workers",
            seen is not None and value(seen, "attestedge_pool_workers", pool="mad") == s.workers,
            str(seen and value(seen, "attestedge_pool_workers", pool="mad")))
    deadline = time.time() + 60
    while time.time() < deadline and not (up(metrics(s)) == 1 and len(s.pool_workers("mad")) == s.workers):
        time.sleep(0.2)
    now = metrics(s)
    T.check("restarted by serve: pool_up 1 again, its workers back", up(now) == 1
            and value(now, "attestedge_pool_workers", pool="mad") == s.workers, str(up(now)))


def webhooks(s):
    """A test event to an endpoint that answers 500 twice, then 200: three attempts, by class."""
    rx = Receiver()
    key = s.ctl_json("apikey", "create", "--org", "acme")["key"]
    auth = {"Authorization": "Bearer " + key}
    r = s.http("POST", "/api/v1/org/webhooks", auth, {"url": f"http://127.0.0.1:{rx.port}/flaky", "events": ["webhook.test"]})
    T.check("a webhook endpoint is created", r.status == 201, repr(r))
    before = metrics(s)
    r = s.http("POST", f"/api/v1/org/webhooks/{r.json['id']}/test", auth)
    T.check("a test event is queued", r.status in (200, 201, 202), repr(r))
    got = rx.wait("/flaky", 3, 20)
    T.check("the receiver got three attempts", len(got) == 3, str(len(got)))
    classes = ("2xx", "3xx", "4xx", "5xx", "error")
    deadline = time.time() + 10
    while True:
        after = metrics(s)
        moved = {c: value(after, "attestedge_webhook_attempts_total", **{"class": c})
                 - value(before, "attestedge_webhook_attempts_total", **{"class": c}) for c in classes}
        backlog = value(after, "attestedge_webhook_backlog")
        if (moved["2xx"] >= 1 and backlog == 0) or time.time() > deadline:
            break
        time.sleep(0.1)
    T.check("webhook attempts by class moved by exactly what the receiver answered",
            moved == {"2xx": 1, "3xx": 0, "4xx": 0, "5xx": 2, "error": 0}, str(moved))
    T.check("the webhook backlog is empty once delivered", backlog == 0, str(backlog))
    rx.shutdown()


def status(s):
    """attestctl status against this running stack's real /metrics (status.sh checks its
    numbers against a synthetic server; this checks that it reads what the pools export)."""
    url = f"http://127.0.0.1:{s.metrics_port}/metrics"
    stop = time.time() + 1.5
    def load():
        while time.time() < stop:
            s.http("GET", "/api/v1/attestation/challenge", A)
    worker = threading.Thread(target=load)
    worker.start()
    p = subprocess.run([os.path.join(BIN, "attestctl"), "status", "--url", url, "--json"], capture_output=True,
                       text=True, timeout=30)
    worker.join()
    T.check("attestctl status --json reads the stack's /metrics", p.returncode == 0, p.stdout + p.stderr)
    j = json.loads(p.stdout or "{}")
    pools = {entry["pool"]: entry for entry in j.get("pools", [])}
    T.check("status lists every pool with its workers", sorted(pools) == sorted(POOLS)
            and all(entry["workers"] == s.workers for entry in pools.values()), p.stdout[:600])
    T.check("status shows the challenges sent meanwhile as requests per second",
            (pools.get("challenge", {}).get("requestsPerSecond") or 0) > 0, p.stdout[:600])
    stores = {entry["environment"]: entry for entry in j.get("stores", [])}
    T.check("status shows both LMDB environments' map use",
            sorted(stores) == ["durable", "ephemeral"] and all(0 < e["percent"] < 100 for e in stores.values()),
            str(stores))
    orgs = {entry["org"]: entry for entry in j.get("organizations", [])}
    T.check("status shows each organization's active devices", "acme" in orgs and orgs["acme"]["activeDevices"] >= 1,
            str(orgs))
    text = subprocess.run([os.path.join(BIN, "attestctl"), "status", "--url", url], capture_output=True, text=True,
                          timeout=30)
    T.check("attestctl status (text) names every pool", text.returncode == 0
            and all(pool in text.stdout for pool in POOLS), text.stdout + text.stderr)


class Stream:
    """GET /api/v1/flags/stream held open on a raw socket; `read_until` collects its bytes."""

    def __init__(self, s, headers):
        self.sock = socket.create_connection(("127.0.0.1", s.port), timeout=10)
        lines = ["GET /api/v1/flags/stream HTTP/1.1", "Host: 127.0.0.1", "Accept: text/event-stream"]
        self.sock.sendall(("\r\n".join(lines + [f"{k}: {v}" for k, v in headers.items()]) + "\r\n\r\n").encode())
        self.raw = b""

    def read_until(self, needle, timeout=10):
        deadline = time.time() + timeout
        while needle not in self.raw and time.time() < deadline:
            self.sock.settimeout(max(0.01, deadline - time.time()))
            try:
                chunk = self.sock.recv(65536)
            except socket.timeout:
                break
            if not chunk:
                break
            self.raw += chunk
        return needle in self.raw

    def status(self):
        return int(self.raw.split(b" ", 2)[1]) if self.raw.startswith(b"HTTP/1.1 ") else 0

    def close(self):
        self.sock.close()


def flag_stream(s):
    """A stream connected (one `allowed`), one refused (one `unauthorized`), a flag change through
    the org API (the flags pool publishes: `ok`, as many as nchan took), and nchan's subscriber
    gauge while the stream is open and after it closed."""
    key = s.ctl_json("apikey", "create", "--org", "acme")["key"]
    auth = {"Authorization": "Bearer " + key}
    before = metrics(s)
    stream = Stream(s, dict(A, **auth))
    T.check("a flag stream connects and gets its first event", stream.read_until(b"data: ") and stream.status() == 200,
            stream.raw[:300])
    refused = Stream(s, dict(A, Authorization="Bearer aat_nosuchkey00000000000000000000"))
    refused.read_until(b"\r\n\r\n")
    T.check("a stream with an unknown API key is refused: 401", refused.status() == 401, refused.raw[:200])
    refused.close()
    connected = metrics(s)
    subscribers = value(connected, "attestedge_flag_stream_subscribers")
    T.check("nchan's gauges show the open stream: subscribers >= 1, channels >= 1",
            subscribers >= 1 and value(connected, "attestedge_flag_stream_channels") >= 1,
            f"subscribers {subscribers}, channels {value(connected, 'attestedge_flag_stream_channels')}")
    r = s.http("POST", "/api/v1/org/flags", auth, {"app_id": "ABCDE12345.com.example.app", "key": "metrics_beta",
                                                  "type": "bool", "value": True})
    T.check("a flag created through the org API: 201", r.status == 201, repr(r))
    T.check("the open stream gets the change", stream.read_until(b"metrics_beta"), stream.raw[-300:])
    after = metrics(s)

    def delta(name, **labels):
        return value(after, name, **labels) - value(before, name, **labels)

    auths = {o: delta("attestedge_flag_stream_auth_total", outcome=o)
             for o in ("allowed", "unauthorized", "forbidden", "bad_request", "error")}
    T.check("stream auth outcomes moved by exactly one allowed and one unauthorized",
            auths == {"allowed": 1, "unauthorized": 1, "forbidden": 0, "bad_request": 0, "error": 0}, str(auths))
    ok, failed = (delta("attestedge_flag_publishes_total", outcome=o) for o in ("ok", "failed"))
    nchan = delta("attestedge_flag_stream_published_messages_total")
    print(f"NOTE: flag stream: {ok:.0f} publishes by the pools (the connect's prime, the change's channels), "
          f"nchan took {nchan:.0f}")
    T.check("the change's publishes count ok (its environment's channel and ~empty at least), none failed",
            ok >= 2 and failed == 0, f"ok +{ok}, failed +{failed}")
    T.check("nchan took exactly the publishes the pools counted", nchan == ok, f"nchan +{nchan}, pools +{ok}")
    stream.close()
    deadline = time.time() + 10
    while time.time() < deadline and value(metrics(s), "attestedge_flag_stream_subscribers") != 0:
        time.sleep(0.1)
    left = value(metrics(s), "attestedge_flag_stream_subscribers")
    T.check("the stream closed: nchan's subscribers back to 0", left == 0, str(left))


def main():
    s = Stack(setup=setup, serve_args=["--allow-private-webhooks"])
    return run_suite(T, "metrics", s, [exposition, traffic, pool_events, webhooks, status, flag_stream,
                                         pool_down])


if __name__ == "__main__":
    sys.exit(main())
