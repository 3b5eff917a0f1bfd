#!/usr/bin/env python3
"""End-to-end checks of GET /healthz (issue #39, item 2) through `attestctl serve` and real nginx.

- Normally 200 {"status":"ok"}; HEAD the same status with no body; other methods 405.
- A pool's master killed with SIGKILL: /healthz answers 503 naming it (pool_refresh) until
  serve has restarted it (RestartPolicy), then 200. serve restarts a pool that had been up
  10 s at once, so the outage can be shorter than a poll: the master is killed again until
  serve's back-off makes the outage long enough to be seen (the kill it took is printed).
- The ephemeral map (store.ephemeralMapSizeMiB 1) filled with real writes: refreshes of
  unknown keys, each consuming a challenge (one used-challenge record each), past
  health.maxMapPercent (90) → 503 naming store_map only; then on until the store refuses a
  refresh (503 unavailable). Recovery: LMDB never shrinks the pages it reached (expired
  challenges free pages for reuse, not the map), so the map is raised (config set
  store.ephemeralMapSizeMiB 4) and every pool reloaded → 200, and refreshes write again.
- With ATTEST_E2E_STORE=postgres (no map there) the database stops taking connections instead:
  503 naming store → 200 once it takes them again.
- No answer of /healthz names the organization, the app or a number: only the check names.
- req/s of /healthz and of the challenge through nginx, measured by wrk in the same run.
"""
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "lib"))
from check import Tally  # noqa: E402
from stack import Stack, app_headers, b64, cbor_map_of_bytes, run_suite, sha256  # noqa: E402

T = Tally()
A = app_headers()
VOCABULARY = {"store", "store_map", "signing_key", "pool_challenge", "pool_validate", "pool_refresh", "pool_mad",
              "pool_webhooks", "pool_flags", "pool_feedback", "pool_org"}
TENANT = ("acme", A["X-Bundle-ID"], A["X-Team-ID"])
SEEN = []  # every /healthz body, checked for tenant data at the end


def setup(stack):
    stack.ctl("org", "add", "acme", "--tier", "pro", "--rate-limit", "0")
    stack.ctl("app", "add", "--org", "acme", "--team", A["X-Team-ID"], "--bundle", A["X-Bundle-ID"], "--env", "both")
    stack.ctl("config", "set", "rateLimits.refreshPerIPPerMinute", "0")
    stack.ctl("config", "set", "store.ephemeralMapSizeMiB", "1")


def health(s, method="GET"):
    r = s.http(method, "/healthz", timeout=5)
    SEEN.append(r.body)
    return r


def verdict(r):
    """(status, failing names) of a /healthz answer; None when its body is not the documented shape."""
    body = r.json
    if r.status == 200 and body == {"status": "ok"}:
        return 200, []
    if r.status == 503 and isinstance(body, dict) and set(body) == {"status", "failing"} and body["status"] == "fail":
        return 503, body["failing"]
    return None


def wait_for(s, want, seconds):
    """Polls /healthz every 50 ms until `want(verdict)` holds; returns the verdict, or None at the deadline."""
    deadline = time.time() + seconds
    while time.time() < deadline:
        v = verdict(health(s))
        if v and want(v):
            return v
        time.sleep(0.05)
    return None


def normal(s):
    r = health(s)
    T.check("healthy: 200 {\"status\":\"ok\"}", verdict(r) == (200, []), repr(r))
    T.check("no-store, JSON", r.headers.get("cache-control") == "no-store"
            and r.headers.get("content-type", "").startswith("application/json"), str(r.headers))
    head = health(s, "HEAD")
    T.check("HEAD: 200, no body", head.status == 200 and head.body == b"", repr(head))
    for method in ("POST", "PUT", "DELETE"):
        r = s.http(method, "/healthz", body=b"{}")
        T.check(f"{method} /healthz: 405", r.status == 405, repr(r))


def pool_killed(s):
    seen = None
    for attempt in range(1, 7):
        master = s.pool_master("refresh")
        if master is None:
            T.check("the refresh pool's master is found", False)
            return
        os.kill(master, signal.SIGKILL)
        v = wait_for(s, lambda v: v[0] == 503, 3)
        back = wait_for(s, lambda v: v[0] == 200, 40)
        if v:
            seen = (attempt, v, back)
            break
        if not back:
            break
    T.check("a pool's master killed (-9): 503 naming pool_refresh alone", seen and seen[1] == (503, ["pool_refresh"]),
            repr(seen))
    if seen:
        print(f"  (seen after kill {seen[0]}: serve restarts a pool that was up 10 s at once, then backs off)",
              flush=True)
    T.check("... then 200 once serve has restarted it", seen and seen[2] == (200, []), repr(seen))
    T.check("serve logged the restart", "restarting it in" in s.serve_output(), s.serve_output()[-500:])


def refresh_unknown_key(conn):
    """One refresh of an unknown key with a fresh bound challenge: the challenge is consumed
    (one used-challenge record in the ephemeral map) and the answer is 404, or 503 once the
    store refuses the write."""
    conn.request("GET", "/api/v1/attestation/challenge", headers=A)
    r = conn.getresponse()
    challenge = json.loads(r.read())["challenge"]
    body = json.dumps({"keyId": b64(os.urandom(32)), "challenge": challenge,
                       "clientDataHash": b64(sha256(challenge.encode())),
                       "assertion": b64(cbor_map_of_bytes([("signature", b"\x30\x06\x02\x01\x01\x02\x01\x01"),
                                                           ("authenticatorData", b"\x00" * 37)]))})
    conn.request("POST", "/api/v1/attestation/refresh", body=body, headers={**A, "Content-Type": "application/json"})
    r = conn.getresponse()
    r.read()
    return r.status


def fill(s, until, limit=200_000):
    """Refreshes from 4 connections until `until(status)` is true for an answer or `limit`
    were sent; returns (sent, statuses seen)."""
    import http.client
    stop = threading.Event()
    counts, statuses, lock = [0], set(), threading.Lock()

    def worker():
        conn = http.client.HTTPConnection("127.0.0.1", s.port, timeout=30)
        while not stop.is_set():
            status = refresh_unknown_key(conn)
            with lock:
                counts[0] += 1
                statuses.add(status)
                if until(status) or counts[0] >= limit:
                    stop.set()
        conn.close()

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return counts[0], statuses


def map_full(s):
    def ephemeral():
        stats = s.ctl("store", "stats").stdout
        return [line for line in stats.splitlines() if "ephemeral" in line]

    print("  before:", ephemeral(), flush=True)
    sent, statuses = [0], set()
    crossed = threading.Event()

    def watch():
        while not crossed.is_set():
            v = verdict(health(s))
            if v and v[0] == 503:
                crossed.set()
                return
            time.sleep(0.2)

    watcher = threading.Thread(target=watch)
    watcher.start()
    n, seen = fill(s, lambda status: crossed.is_set() or status not in (404,))
    crossed.set()
    watcher.join()
    sent[0] += n
    statuses |= seen
    print(f"  {n} refreshes (each consumed a challenge), answers {sorted(statuses)}:", ephemeral(), flush=True)
    v = wait_for(s, lambda v: v[0] == 503, 3)
    T.check("the ephemeral map past 90%: 503 naming store_map alone", v == (503, ["store_map"]), repr(v))
    T.check("the refreshes that filled it were answered 404 (unknown key)", 404 in statuses, str(statuses))
    # On until the store refuses: a refresh is then 503 unavailable.
    n, seen = fill(s, lambda status: status == 503, limit=100_000)
    print(f"  {n} more refreshes until the store refused, answers {sorted(seen)}:", ephemeral(), flush=True)
    T.check("the map genuinely full: the store refuses a refresh (503)", 503 in seen, str(seen))
    v = verdict(health(s))
    T.check("still 503 store_map alone while full", v == (503, ["store_map"]), repr(v))
    log = open(os.path.join(s.data, "log", "attest-monitor.log")).read()
    T.check("the monitor pool logged what the map check found", "the ephemeral map uses" in log, log[-400:])
    # Recovery: a bigger map, every pool reloaded (each reopens the store with the new size).
    s.ctl("config", "set", "store.ephemeralMapSizeMiB", "4")
    for endpoint in ("monitor", "challenge", "validate", "refresh", "mad", "webhooks"):
        p = s.ctl("reload", endpoint, check=False)
        T.check(f"reload {endpoint} with the raised map", p.returncode == 0, p.stdout + p.stderr)
    v = wait_for(s, lambda v: v[0] == 200, 10)
    T.check("map raised to 4 MiB and the pools reloaded: 200", v == (200, []), repr(v))
    import http.client
    conn = http.client.HTTPConnection("127.0.0.1", s.port, timeout=30)
    status = refresh_unknown_key(conn)
    conn.close()
    T.check("... and refreshes write again (404 unknown key, not 503)", status == 404, str(status))
    print("  after:", ephemeral(), flush=True)


def store_down(s):
    """PostgreSQL (ATTEST_E2E_STORE=postgres): the stack's database stops taking connections and
    its sessions are ended, so the store cannot answer → 503 naming store → 200 once it takes
    connections again (each worker reconnects, PGConnection's back-off at most 5 s)."""
    base, db = os.environ["ATTEST_TEST_POSTGRES_URL"], s.own_database

    def psql(sql):
        subprocess.run(["psql", base, "-qc", sql], check=True, capture_output=True)

    psql(f"ALTER DATABASE {db} ALLOW_CONNECTIONS false")
    psql(f"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '{db}'")
    v = wait_for(s, lambda v: v[0] == 503, 10)
    T.check("the database refusing connections: 503 naming store alone", v == (503, ["store"]), repr(v))
    psql(f"ALTER DATABASE {db} ALLOW_CONNECTIONS true")
    v = wait_for(s, lambda v: v[0] == 200, 20)
    T.check("... then 200 once it takes connections again", v == (200, []), repr(v))
    log = open(os.path.join(s.data, "log", "attest-monitor.log")).read()
    T.check("the monitor pool logged the store's error", "healthz: failing store: store:" in log, log[-400:])


def throughput(s):
    """wrk on /healthz and on the challenge, one after the other on the same stack."""
    rates = {}
    for name, path in (("healthz", "/healthz"), ("challenge", "/api/v1/attestation/challenge")):
        p = subprocess.run(["wrk", "-t2", "-c16", "-d5s", "--latency", s.base + path], capture_output=True, text=True)
        m = re.search(r"Requests/sec:\s+([\d.]+)", p.stdout)
        non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", p.stdout)
        T.check(f"wrk {path}: every answer 2xx", m is not None and non2xx is None, p.stdout + p.stderr)
        rates[name] = float(m.group(1)) if m else 0.0
        p99 = re.search(r"99%\s+(\S+)", p.stdout)
        print(f"  {name}: {rates[name]:.0f} req/s, p99 {p99.group(1) if p99 else '?'} "
              f"(wrk -t2 -c16 -d5s, {s.workers} workers per pool)", flush=True)
    print(f"  /healthz at {rates['healthz'] / max(rates['challenge'], 1):.2f}x the challenge's rate", flush=True)


def no_tenant_data(s):
    bodies = [b for b in SEEN if b]
    leaked = [b for b in bodies if any(t.encode() in b for t in TENANT) or re.search(rb"\d", b)]
    shapes = [b for b in bodies if not (b == b'{"status":"ok"}' or (json.loads(b).get("status") == "fail"
                                                                   and set(json.loads(b)["failing"]) <= VOCABULARY))]
    T.check(f"none of the {len(bodies)} /healthz bodies names a tenant or holds a number", not leaked, repr(leaked[:3]))
    T.check("every body is ok, or fail with names from the vocabulary", not shapes, repr(shapes[:3]))
    logs = os.path.join(s.data, "log")
    dropped = [f for f in os.listdir(logs) if f.startswith("attest-")
               and "dropped a connection" in open(os.path.join(logs, f), errors="replace").read()]
    T.check("the probes' connections leave no complaint in the pools' logs", not dropped, str(dropped))


if __name__ == "__main__":
    stack = Stack(setup=setup)
    # PostgreSQL has no map (the store_map check passes there): its store goes down instead.
    store_step = store_down if stack.postgres else map_full
    sys.exit(run_suite(T, "health", stack, [normal, throughput, pool_killed, store_step, no_tenant_data]))
