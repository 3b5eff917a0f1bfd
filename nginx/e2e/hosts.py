#!/usr/bin/env python3
"""End-to-end for several hosts on one PostgreSQL database (issue #14): two full stacks
("hosts" A and B: their own data directories, nginx instances, pools and ports) with the same
challenge secret, signing keys and JWKS, on one database.

Checks what the issue's "Done when" lists: a device enrolled on A refreshes on B; one challenge
presented to both hosts at once succeeds exactly once (validate and refresh); 20 refreshes with
one counter split across the hosts succeed exactly once; 50 new devices racing at an
organization's MAD limit across both hosts admit exactly the limit; webhooks are delivered once
per event with a delivery worker on each host; feature flags (issue #41): a change through
host A's attestctl reaches host A's stream within 1 s, a stream on host B reconnecting after it
gets the new defaults as its first event (also when host B primed its channel in the very
second host A changed the flag), host B's GET sees it within 2 s, and each change's
`flag.changed` is delivered once across both hosts' workers; killing host A (SIGKILL, everything under its
`attestctl serve`) mid refresh load loses no acknowledged counter advance.

The database: ATTEST_TEST_POSTGRES_URL (nginx/scripts/test.sh exports it), else a throwaway cluster
started here with nginx/scripts/postgres.sh; without either the suite says it is skipped and
exits 0. A database of its own is made for the run when the role may (CREATEDB) and dropped
after. Prints PASS/FAIL per check and a summary; exits 1 on a failure."""
import concurrent.futures
import json
import os
import random
import re
import shutil
import string
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "lib"))
from check import Tally  # noqa: E402
from stack import ROOT, BIN, Stack, app_headers  # noqa: E402
from load import assertion_counter, post  # noqa: E402
from receiver import Handler, Receiver  # noqa: E402

sys.path.insert(0, os.path.dirname(__file__))
from flags import SSE, sdk_flags  # noqa: E402  the flags suite's raw-bytes SSE client and the SDK's parser

import jwt  # noqa: E402  PyJWT: tokens one host issues verify with the keys the other publishes

T = Tally()
SUFFIX = "".join(random.choice(string.ascii_uppercase + string.digits) for _ in range(4))
MAIN = (f"HA{SUFFIX}0001", "com.example.hosts")
RACE = (f"HR{SUFFIX}0001", "com.example.hostsrace")
HOOKS = (f"HW{SUFFIX}0001", "com.example.hostshooks")
ORG, RACERS, HOOKORG = (f"{n}-{SUFFIX.lower()}" for n in ("hosts", "hostsracers", "hostshooks"))
MAD_LIMIT, RACERS_COUNT = 10, 50
ROUNDS = 8  # challenge races per kind
KILL_DEVICES, KILL_BODIES, KILL_AT, LOAD_LIMIT_SECONDS = 8, 2400, 0.4, 120


# --- the database --------------------------------------------------------------------------

class Database:
    """The PostgreSQL server for the run: ATTEST_TEST_POSTGRES_URL or a throwaway cluster,
    and a database of the run's own in it when the role may create one."""

    def __init__(self):
        self.cluster = None
        self.created = None
        self.url = os.environ.get("ATTEST_TEST_POSTGRES_URL")
        if not self.url:
            self.cluster = tempfile.mkdtemp(prefix="attestedge-hosts-pg.")
            p = subprocess.run(["bash", os.path.join(ROOT, "nginx", "scripts", "postgres.sh"), "start", self.cluster],
                               capture_output=True, text=True)
            if p.returncode != 0:
                shutil.rmtree(self.cluster, ignore_errors=True)
                self.cluster = None
                self.skip_reason = "ATTEST_TEST_POSTGRES_URL is unset and nginx/scripts/postgres.sh could not start a cluster: " + p.stderr.strip()
                return
            self.url = p.stdout.strip()
            print(f"INFO: started a PostgreSQL cluster in {self.cluster}: {self.url}", flush=True)
        else:
            print(f"INFO: ATTEST_TEST_POSTGRES_URL={self.url}", flush=True)
        self.skip_reason = None
        name = "attestedge_hosts_" + SUFFIX.lower()
        p = self.psql(self.url, f"CREATE DATABASE {name}")
        if p.returncode == 0:
            self.created = name
            self.base_url, self.url = self.url, with_dbname(self.url, name)
        else:
            print(f"INFO: cannot create a database of the run's own ({p.stderr.strip()}); using the given one "
                  f"(names carry the suffix {SUFFIX})", flush=True)

    @staticmethod
    def psql(url, sql):
        return subprocess.run(["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", url, "-c", sql], capture_output=True, text=True)

    def close(self):
        if self.created:
            p = self.psql(self.base_url, f"DROP DATABASE IF EXISTS {self.created} WITH (FORCE)")
            if p.returncode != 0:
                print(f"INFO: could not drop {self.created}: {p.stderr.strip()}", flush=True)
        if self.cluster:
            subprocess.run(["bash", os.path.join(ROOT, "nginx", "scripts", "postgres.sh"), "destroy", self.cluster])


def with_dbname(url, name):
    """`url` (a key=value connection string or a postgres:// URI) naming database `name`."""
    if re.match(r"^postgres(ql)?://", url):
        head, _, query = url.partition("?")
        scheme, rest = head.split("://", 1)
        authority = rest.split("/", 1)[0]
        return f"{scheme}://{authority}/{name}" + (f"?{query}" if query else "")
    if re.search(r"(^|\s)dbname\s*=", url):
        return re.sub(r"(^|\s)dbname\s*=\s*('(?:[^'\\]|\\.)*'|\S+)", lambda m: f"{m.group(1)}dbname={name}", url)
    return f"{url} dbname={name}"


# --- helpers ---------------------------------------------------------------------------------

def setup(a):
    """Host A only: the organizations and apps go into the shared database once."""
    for key in ("validatePerIPPerMinute", "refreshPerIPPerMinute"):
        a.ctl("config", "set", f"rateLimits.{key}", "0")
    a.ctl("config", "set", "webhooks.retrySchedule", "[1,2]")
    a.ctl("config", "set", "webhooks.concurrencyPerEndpoint", "4")
    # 60 test events to one endpoint below, within a minute: above the default limits.
    a.ctl("config", "set", "webhooks.testEventsPerEndpointPerMinute", "0")
    a.ctl("config", "set", "webhooks.testEventsPerOrganizationPerMinute", "0")
    a.ctl("org", "add", ORG, "--tier", "pro", "--rate-limit", "0")
    a.ctl("app", "add", "--org", ORG, "--team", MAIN[0], "--bundle", MAIN[1])
    a.ctl("org", "add", RACERS, "--tier", "pro", "--mad-limit", str(MAD_LIMIT), "--grace-days", "0", "--rate-limit", "0")
    a.ctl("app", "add", "--org", RACERS, "--team", RACE[0], "--bundle", RACE[1])
    a.ctl("org", "add", HOOKORG, "--tier", "pro", "--rate-limit", "0")
    a.ctl("app", "add", "--org", HOOKORG, "--team", HOOKS[0], "--bundle", HOOKS[1])


def dev(s, state, *args, app=MAIN):
    return s.device(state, *args, team=app[0], bundle=app[1])


def challenge(s, app=MAIN):
    r = s.http("GET", "/api/v1/attestation/challenge", app_headers(*app))
    if r.status != 200:
        raise RuntimeError(f"GET challenge on {s.base}: {r!r}")
    return r.json["challenge"]


def body(s, state, kind, *args, app=MAIN):
    p = dev(s, state, "body", kind, *args, app=app)
    if p.returncode != 0:
        raise RuntimeError(f"attest-device body {kind}: {p.stderr}")
    return json.loads(p.stdout)


def at_once(requests):
    """Sends every (stack, path, headers, body) at the same moment (a barrier), one thread
    each; returns the responses in order."""
    barrier = threading.Barrier(len(requests))

    def send(request):
        s, path, headers, b = request
        barrier.wait()
        return s.http("POST", path, headers, b)

    with concurrent.futures.ThreadPoolExecutor(len(requests)) as pool:
        return list(pool.map(send, requests))


def code(r):
    return (r.json or {}).get("code", "?") if r.status != 200 else "ok"


def stored_counter(s, state):
    key = json.load(open(state))["keyId"]
    return s.ctl_json("device", "show", key)["counter"]


def socket_owner(client_port, server_port, pids):
    """Which of `pids` holds the loopback TCP connection from `client_port` to `server_port`
    (its inode from /proc/net/tcp, then the processes' descriptors), or None."""
    inode = None
    with open("/proc/net/tcp") as f:
        for line in f.readlines()[1:]:
            fields = line.split()
            if int(fields[1].split(":")[1], 16) == client_port and int(fields[2].split(":")[1], 16) == server_port:
                inode = fields[9]
    if inode is None:
        return None
    for pid in pids:
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink(f"/proc/{pid}/fd/{fd}") == f"socket:[{inode}]":
                    return pid
            except OSError:
                pass
    return None


class SenderRecordingHandler(Handler):
    """The webhook receiver's handler, also noting which delivery worker (by pid) sent each POST."""

    def do_POST(self):
        sender = socket_owner(self.client_address[1], self.server.port, getattr(self.server, "workers", ()))
        with self.server.lock:
            self.server.senders = getattr(self.server, "senders", []) + [sender]
        super().do_POST()


# --- the checks ------------------------------------------------------------------------------

def shared_setup(a, b):
    T.check("host B has its own data directory, port and nginx", a.data != b.data and a.port != b.port
            and a.pool_master("refresh") not in (None, b.pool_master("refresh")))
    same = all(open(os.path.join(a.data, f), "rb").read() == open(os.path.join(b.data, f), "rb").read()
               for f in ("secrets/challenge.key", "jwks.json"))
    T.check("host B has host A's challenge secret and JWKS", same)
    ja, jb = a.http("GET", "/.well-known/jwks.json"), b.http("GET", "/.well-known/jwks.json")
    T.check("both hosts serve the same JWKS", ja.status == 200 and ja.body == jb.body, f"{ja!r} {jb!r}")
    for name in ("a", "b"):
        s = a if name == "a" else b
        cfg = s.ctl_json("config", "show")
        T.check(f"host {name.upper()} is configured for the shared PostgreSQL database",
                cfg.get("store", {}).get("backend") == "postgres" and cfg["store"].get("postgres", {}).get("url") == a.postgres,
                json.dumps(cfg.get("store")))
    orgs_a = sorted(o["name"] for o in a.ctl_json("org", "list"))
    orgs_b = sorted(o["name"] for o in b.ctl_json("org", "list"))
    T.check("host B sees the organizations created once through host A (one database)",
            orgs_a == orgs_b and ORG in orgs_b and orgs_b.count(ORG) == 1, f"{orgs_a} / {orgs_b}")


def cross_host_refresh(a, b):
    st = a.state("cross")
    p = dev(a, st, "enroll")
    T.check("a device enrolls on host A", p.returncode == 0, p.stderr)
    before = json.load(open(st))["fields"]["token"]
    p = dev(b, st, "refresh")
    T.check("the device enrolled on host A refreshes on host B", p.returncode == 0, p.stderr)
    token = json.load(open(st))["fields"]["token"]
    T.check("host B answered a new token", token != before)
    try:
        keys = {k["kid"]: k for k in a.http("GET", "/.well-known/jwks.json").json["keys"]}
        key = jwt.PyJWK.from_dict(keys[jwt.get_unverified_header(token)["kid"]]).key
        claims = jwt.decode(token, key=key, algorithms=["ES256"], audience=MAIN[0] + "." + MAIN[1], issuer="attestedge")
        T.check("the token host B issued verifies against host A's JWKS", bool(claims.get("device_id")), str(claims)[:200])
    except Exception as e:  # noqa: BLE001 - any failure is the finding
        T.check("the token host B issued verifies against host A's JWKS", False, repr(e))
    p = dev(a, st, "refresh")
    T.check("and then on host A again (counter carried over)", p.returncode == 0, p.stderr)
    counters = (stored_counter(a, st), stored_counter(b, st), json.load(open(st))["counter"])
    T.check("both hosts' attestctl show the device's counter the device holds", counters[0] == counters[1] == counters[2] > 0, str(counters))
    c = challenge(a)
    r = b.http("POST", "/api/v1/attestation/refresh", app_headers(*MAIN), body(a, st, "refresh", "--challenge", c))
    T.check("a challenge issued by host A is accepted by host B (one challenge secret)", r.status == 200, repr(r))


def challenge_once(a, b):
    headers = app_headers(*MAIN)
    outcomes = []
    for i in range(ROUNDS):
        first, second = (a, b) if i % 2 == 0 else (b, a)
        c = challenge(first)
        # Two different new keys attesting one challenge: only the challenge is shared.
        bodies = [body(a, a.state(f"v{i}-{k}"), "validate", "--challenge", c) for k in range(2)]
        results = at_once([(first, "/api/v1/attestation/validate", headers, bodies[0]),
                           (second, "/api/v1/attestation/validate", headers, bodies[1])])
        outcomes.append(sorted(code(r) for r in results))
    T.check(f"validate: one challenge sent to both hosts at once, {ROUNDS} rounds: exactly one 200 each, "
            "the other challenge_already_used", all(o == ["challenge_already_used", "ok"] for o in outcomes), str(outcomes))

    st = a.state("once")
    p = dev(a, st, "enroll")
    T.check("a device enrolls for the refresh races", p.returncode == 0, p.stderr)
    n = stored_counter(a, st)
    outcomes = []
    for i in range(ROUNDS):
        first, second = (a, b) if i % 2 == 0 else (b, a)
        c = challenge(second)
        # Two assertions over one challenge with rising counters: both would pass the counter
        # check, so only the challenge's single use can refuse one.
        bodies = [body(a, st, "refresh", "--challenge", c, "--counter", str(n + k)) for k in (1, 2)]
        results = at_once([(first, "/api/v1/attestation/refresh", headers, bodies[0]),
                           (second, "/api/v1/attestation/refresh", headers, bodies[1])])
        outcomes.append(sorted(code(r) for r in results))
        n += 2
    T.check(f"refresh: one challenge (two rising counters) sent to both hosts at once, {ROUNDS} rounds: exactly one 200 each",
            all(o.count("ok") == 1 for o in outcomes), str(outcomes))
    T.check("the refused refresh is challenge_already_used", all(o == ["challenge_already_used", "ok"] for o in outcomes), str(outcomes))


def counter_split(a, b):
    st = a.state("split")
    p = dev(b, st, "enroll")
    T.check("a device enrolls on host B for the counter race", p.returncode == 0, p.stderr)
    n = stored_counter(b, st) + 1
    bodies = [body(a, st, "refresh", "--challenge", challenge(a if i % 2 else b), "--counter", str(n)) for i in range(20)]
    results = at_once([(a if i % 2 else b, "/api/v1/attestation/refresh", app_headers(*MAIN), bd) for i, bd in enumerate(bodies)])
    codes = [code(r) for r in results]
    won = [("A" if i % 2 else "B") for i, c in enumerate(codes) if c == "ok"]
    T.check("20 refreshes with one counter, 10 to each host at once: exactly one 200", codes.count("ok") == 1, f"{codes} (won on {won})")
    T.check("the 19 others are refused with a 4xx, none with a 5xx",
            all(r.status in range(400, 500) for r in results if r.status != 200), str(sorted(set(codes))))
    T.check("the stored counter is that counter", stored_counter(a, st) == n == stored_counter(b, st))


def mad_race(a, b):
    bodies = []
    for i in range(RACERS_COUNT):
        host = a if i % 2 else b
        bodies.append((host, body(host, a.state(f"race{i}"), "validate", "--challenge", challenge(b if i % 2 else a, RACE), app=RACE)))
    results = at_once([(host, "/api/v1/attestation/validate", app_headers(*RACE), bd) for host, bd in bodies])
    codes = [code(r) for r in results]
    per_host = {name: sum(1 for i, c in enumerate(codes) if c == "ok" and (i % 2 == (1 if name == "A" else 0))) for name in "AB"}
    T.check(f"{RACERS_COUNT} new devices racing at a MAD limit of {MAD_LIMIT} across both hosts: exactly {MAD_LIMIT} admitted, "
            "the rest 402 quota_exceeded", codes.count("ok") == MAD_LIMIT and codes.count("quota_exceeded") == RACERS_COUNT - MAD_LIMIT,
            f"{sorted(codes)}")
    print(f"INFO: admitted through host A: {per_host['A']}, host B: {per_host['B']}", flush=True)
    ua, ub = a.ctl_json("usage", "--org", RACERS), b.ctl_json("usage", "--org", RACERS)
    T.check(f"both hosts count exactly {MAD_LIMIT} active devices", ua.get("activeDevices") == MAD_LIMIT == ub.get("activeDevices"),
            f"{ua.get('activeDevices')} / {ub.get('activeDevices')}")
    listed = [d for d in a.ctl_json("device", "list", "--app", ".".join(RACE))]
    T.check(f"the database holds exactly {MAD_LIMIT} devices of the app", len(listed) == MAD_LIMIT, str(len(listed)))


def webhooks(a, b, rx):
    key = a.ctl_json("apikey", "create", "--org", HOOKORG)["key"]
    url = f"http://127.0.0.1:{rx.port}"
    auth = {"Authorization": "Bearer " + key}
    r = b.http("POST", "/api/v1/org/webhooks", auth, {"url": url + "/slow", "description": "both hosts"})
    T.check("an endpoint created through host B", r.status == 201, repr(r))
    hook = r.json["id"]
    r = a.http("GET", "/api/v1/org/webhooks", auth)
    T.check("host A lists it (one database)", r.status == 200 and [w["id"] for w in r.json["webhooks"]] == [hook], repr(r))
    pids = (a.deliver_pid(), b.deliver_pid())
    T.check("a delivery worker runs on each host", None not in pids and pids[0] != pids[1], str(pids))
    rx.workers = pids
    rx.RequestHandlerClass = SenderRecordingHandler
    enrolled = 0
    for i in range(6):
        p = dev(a if i % 2 else b, a.state(f"hook{i}"), "enroll", app=HOOKS)
        enrolled += p.returncode == 0
    T.check("6 devices enroll, alternating hosts", enrolled == 6)
    queued = []
    for i in range(60):
        r = (a if i % 2 else b).http("POST", f"/api/v1/org/webhooks/{hook}/test", auth)
        if r.status == 202:
            queued.append(r.json["queued"])
    T.check("60 test events queued, alternating hosts", len(queued) == 60, str(len(queued)))
    expected = 6 * 2 + 60
    # /slow answers after 0.2 s: one worker alone would take a while, so both get to claim.
    got = rx.wait("/slow", expected, 60)
    time.sleep(3)  # time enough for a second delivery by the other host's worker to show
    got = rx.on("/slow")
    events = [json.loads(g[2]) for g in got]
    ids = [e["id"] for e in events]
    duplicates = len(ids) - len(set(ids))
    T.check(f"all {expected} events are delivered", len(set(ids)) == expected and set(queued) <= set(ids),
            f"{len(set(ids))} distinct of {expected}")
    T.check("each event exactly once across the two delivery workers", duplicates == 0, f"{duplicates} duplicates")
    senders = getattr(rx, "senders", [])
    by_host = {"A": senders.count(pids[0]), "B": senders.count(pids[1]), "unknown": sum(1 for p in senders if p not in pids)}
    T.check("both hosts' delivery workers delivered some of them", by_host["A"] > 0 and by_host["B"] > 0, str(by_host))
    print(f"INFO: deliveries by host A's worker: {by_host['A']}, host B's: {by_host['B']}, unattributed: {by_host['unknown']}", flush=True)
    kinds = sorted(e["event"] for e in events if e["event"] != "webhook.test")
    T.check("the enrollments' device.new and attestation.completed, 6 each", kinds == ["attestation.completed"] * 6 + ["device.new"] * 6, str(kinds))
    log = a.http("GET", f"/api/v1/org/webhooks/{hook}/deliveries", auth)
    entries = (log.json or {}).get("deliveries", [])
    T.check("the delivery log (through host A) shows each delivered after one attempt",
            log.status == 200 and entries and all(d["status"] == "delivered" and len(d["attempts"]) == 1 for d in entries),
            json.dumps(entries)[:300])


def flags_across_hosts(a, b, rx):
    """Issue #41 on two hosts: a change is published to the nginx of the host that made it;
    host B's streams catch up when they (re)connect (its auth handler republishes a channel
    whose message predates the app's changedAt); host B's GET sees the change within the
    PostgreSQL durableVersion's second; `flag.changed` goes out once, not once per host."""
    app_id = ".".join(HOOKS)
    flag_events = {"before": len(events_of(rx, "flag.changed"))}
    made = []  # (actor, action) of each change, in order

    def set_beta(value, how):
        t0 = time.monotonic()
        if how == "cli":
            a.ctl("flags", "set", "--app", app_id, "--key", "beta", "--value", value)
        else:
            r = a.http("PUT", f"/api/v1/org/flags/beta?app_id={app_id}", {"Authorization": "Bearer " + key}, {"value": value == "true"})
            if r.status != 200:
                raise RuntimeError(f"PUT flag through host A: {r!r}")
        made.append((how, "updated"))
        return t0

    a.ctl("flags", "add", "--app", app_id, "--key", "beta", "--type", "bool", "--value", "false")
    made.append(("cli", "created"))
    key = a.ctl_json("apikey", "create", "--org", HOOKORG)["key"]
    st = a.state("flagdev")
    p = dev(a, st, "enroll", app=HOOKS)
    T.check("flags: a device enrolls on host A", p.returncode == 0, p.stderr)
    token = json.load(open(st))["fields"]["token"]
    h = {**app_headers(*HOOKS), "Authorization": "Bearer " + token}
    beta = {True: {"beta": ("boolean", True)}, False: {"beta": ("boolean", False)}}

    on_a, on_b = SSE(a.port, h), SSE(b.port, h)
    first = (on_a.event(1.0), on_b.event(1.0))
    T.check("flags: a stream on each host starts with beta=false", on_a.status == on_b.status == 200
            and [sdk_flags(e or "") for e in first] == [beta[False]] * 2, f"{on_a.status} {on_b.status} {first!r}")
    gets = [sdk_flags(b.http("GET", "/api/v1/flags", h).body) for _ in range(4)]  # host B's workers compile the flags
    T.check("flags: GET on host B answers beta=false", gets == [beta[False]] * 4, repr(gets))
    time.sleep(1.1)  # the change in a later second than host B's stored message

    seen = []  # when host B's GET first answered the change, polled every 50 ms meanwhile

    def poll_b():
        while time.monotonic() - t0 < 4 and not seen:
            if sdk_flags(b.http("GET", "/api/v1/flags", h).body) == beta[True]:
                seen.append(time.monotonic() - t0)
            time.sleep(0.05)
    t0 = time.monotonic()
    poller = threading.Thread(target=poll_b)
    poller.start()
    set_beta("true", "cli")
    ev = on_a.event(3.0)
    took = time.monotonic() - t0
    print(f"INFO: flags: attestctl flags set on host A → event on host A's stream in {took * 1000:.0f} ms (attestctl start included)", flush=True)
    T.check("flags: a change through host A's attestctl reaches host A's stream within 1 s",
            sdk_flags(ev or "") == beta[True] and took < 1.0, f"{ev!r} after {took:.3f}s")
    on_b.close()
    poller.join()
    print(f"INFO: flags: GET on host B answered beta=true {round(seen[0] * 1000) if seen else None} ms after the change "
          "was started on host A", flush=True)
    T.check("flags: GET on host B reflects the change within 2 s", seen and seen[0] < 2.0, f"{seen}")
    # Host B's workers see the change within PostgreSQL's durableVersion second; its channel
    # still holds the old defaults (the change was published to host A's nginx only).
    time.sleep(max(0.0, 1.1 - (time.monotonic() - t0)))
    again = SSE(b.port, h)
    ev, more = again.event(1.0), again.event(0.5)
    T.check("flags: a stream on host B reconnecting after the change gets beta=true as its first event",
            again.status == 200 and sdk_flags(ev or "") == beta[True], f"{again.status} {ev!r}")
    T.check("flags: and no stale event after it", more is None or sdk_flags(more) == beta[True], repr(more))
    again.close()

    # The same second: host B's channel is primed, then host A changes the flag before that
    # second ends. nchan's message id has whole seconds, like changedAt.
    outcome = None
    for attempt in range(4):
        time.sleep(1.1)  # after the second of host B's last publish
        value = "false" if sdk_flags(b.http("GET", "/api/v1/flags", h).body) == beta[True] else "true"
        set_beta(value, "api")  # host B's channel is now older than changedAt
        time.sleep(1.1)
        second = start_of_second()
        primer = SSE(b.port, h)  # republishes the stale channel (in this second)
        primed = primer.event(1.0)
        primer.close()
        back = "true" if value == "false" else "false"
        set_beta(back, "api")
        if int(time.time()) != second:
            print(f"INFO: flags: same-second attempt {attempt + 1} spilled into the next second; again", flush=True)
            continue
        time.sleep(1.1)  # host B's cache sees the change
        late = SSE(b.port, h)
        outcome = (primed, late.event(1.0), back)
        late.close()
        break
    if outcome is None:
        T.check("flags: a change on host A in the second host B's channel was primed (ran)", False, "never fitted in one second")
    else:
        primed, ev, back = outcome
        T.check("flags: host B primed its channel then host A changed the flag in that same second: "
                f"a later stream on host B gets the change (beta={back}) first",
                sdk_flags(primed or "") == beta[back != "true"] and sdk_flags(ev or "") == beta[back == "true"],
                f"primed {primed!r}, then {ev!r}")

    # The same second, host B's cache: host B's flags workers check their compiled flags in
    # second S (GETs), host A changes the flag in S, a stream on host B connects in S. Its
    # auth reads the change's changedAt from the store, so it republishes the channel, and
    # must do so with the changed defaults (it reads the generation again after publishing).
    outcome = None
    for attempt in range(4):
        time.sleep(1.1)
        value = "false" if sdk_flags(b.http("GET", "/api/v1/flags", h).body) == beta[True] else "true"
        second = start_of_second()
        for _ in range(8):
            b.http("GET", "/api/v1/flags", h)  # each of host B's flags workers validates its cache in this second
        set_beta(value, "api")
        late = SSE(b.port, h)
        connected = int(time.time())
        outcome = (late.event(1.0), value)
        late.close()
        if connected == second:
            break
        print(f"INFO: flags: cache same-second attempt {attempt + 1} spilled into the next second; again", flush=True)
        outcome = None
    if outcome is None:
        T.check("flags: a stream on host B connecting in the second of host A's change (ran)", False, "never fitted in one second")
    else:
        ev, value = outcome
        T.check(f"flags: host B's workers checked their flags, host A changed the flag and a stream connected on host B, "
                f"all in one second: its first event has the change (beta={value})",
                sdk_flags(ev or "") == beta[value == "true"], f"first event {ev!r}")
        time.sleep(1.1)
        later = SSE(b.port, h)
        ev = later.event(1.0)
        later.close()
        T.check("flags: a stream on host B connecting a second later has it", sdk_flags(ev or "") == beta[value == "true"],
                f"first event {ev!r}")
    on_a.close()

    want = len(made)
    deadline = time.time() + 20
    while time.time() < deadline and len(events_of(rx, "flag.changed")) - flag_events["before"] < want:
        time.sleep(0.1)
    time.sleep(3)  # time enough for a second delivery by the other host's worker to show
    got = events_of(rx, "flag.changed")[flag_events["before"]:]
    ids = [e["id"] for e in got]
    T.check(f"flags: each of the {want} changes queues one flag.changed, delivered once across the two hosts' workers",
            len(ids) == len(set(ids)) == want, f"{len(ids)} deliveries, {len(set(ids))} distinct, {want} changes")
    T.check("flags: their actor and action are the changes' (cli/api, created/updated)",
            sorted((e["data"]["actor"], e["data"]["action"]) for e in got) == sorted(made),
            f"{sorted((e['data'].get('actor'), e['data'].get('action')) for e in got)} vs {sorted(made)}")


def start_of_second():
    """Waits for the first 50 ms of a second; returns that second."""
    while time.time() % 1 > 0.05:
        time.sleep(0.005)
    return int(time.time())


def events_of(rx, kind):
    """The events of type `kind` the receiver got on /slow (host A and B's hook), in order."""
    return [e for e in (json.loads(g[2]) for g in rx.on("/slow")) if e["event"] == kind]


def kill_host_a(a, b):
    work = tempfile.mkdtemp(prefix="attestedge-hosts-load.")
    out = os.path.join(work, "refresh.jsonl")
    p = subprocess.run([os.path.join(BIN, "attest-device"), "--server", a.base, "--team", MAIN[0], "--bundle", MAIN[1],
                        "--test-ca", os.path.join(a.data, "test-ca", "ca.pem"), "--state", os.path.join(work, "d.json"),
                        "batch", "refresh", "--count", str(KILL_BODIES), "--devices", str(KILL_DEVICES), "--out", out],
                       capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError("attest-device batch refresh: " + p.stderr)
    lines = [l for l in open(out).read().splitlines() if l]
    shutil.rmtree(work, ignore_errors=True)
    by_device = {}
    for line in lines:
        by_device.setdefault(json.loads(line)["keyId"], []).append(line)
    headers = app_headers(*MAIN)
    lock, a_dead = threading.Lock(), threading.Event()
    acked = {}  # keyId → highest counter answered 200
    sent = {}  # keyId → highest counter sent
    tally = {}  # (host, phase, status) → count
    progress = [0]
    deadline = time.time() + LOAD_LIMIT_SECONDS

    def client(index, bodies):
        for j, line in enumerate(bodies):
            if time.time() > deadline:
                return
            to_a = (index + j) % 2 == 0 and not a_dead.is_set()
            phase = "after" if a_dead.is_set() else "before"
            host = a if to_a else b
            key, counter = json.loads(line)["keyId"], assertion_counter(json.loads(line)["assertion"])
            with lock:
                sent[key] = max(sent.get(key, 0), counter)
            status, _ = post(host.port, "/api/v1/attestation/refresh", headers, line, timeout=30)
            with lock:
                k = ("A" if to_a else "B", phase, status)
                tally[k] = tally.get(k, 0) + 1
                progress[0] += 1
                if status == 200:
                    acked[key] = max(acked.get(key, 0), counter)

    threads = [threading.Thread(target=client, args=(i, bodies)) for i, bodies in enumerate(by_device.values())]
    started = time.time()
    for t in threads:
        t.start()
    # Host A dies once KILL_AT of the bodies are answered (mid-load by construction).
    while progress[0] < KILL_AT * len(lines) and time.time() < deadline:
        time.sleep(0.005)
    answered_at_kill = progress[0]
    killed = a.kill()
    a_dead.set()
    killed_at = time.time() - started
    for t in threads:
        t.join()
    print(f"INFO: host A ({killed} processes) SIGKILLed {killed_at:.1f} s into the load, after {answered_at_kill} answers; "
          f"load over in {time.time() - started:.1f} s; outcomes (host, phase, status): "
          + ", ".join(f"{h}/{ph}/{st}: {n}" for (h, ph, st), n in sorted(tally.items(), key=str)), flush=True)
    ok_a = sum(n for (h, ph, st), n in tally.items() if h == "A" and st == 200)
    ok_b_after = sum(n for (h, ph, st), n in tally.items() if h == "B" and ph == "after" and st == 200)
    T.check("host A acknowledged refreshes before it was killed", ok_a > 0, f"{ok_a} from A")
    T.check("host B kept answering 200 after host A was killed", ok_b_after > 0, f"{ok_b_after}")
    odd = {k: n for k, n in tally.items() if k[2] not in (200, None)}
    T.check("no answer other than 200 (a request cut by the kill gets no answer)", not odd, str(odd))
    stored = {d["keyId"]: d["counter"] for d in b.ctl_json("device", "list", "--app", ".".join(MAIN), "--limit", "100000")}
    lost = [(k, c, stored.get(k)) for k, c in acked.items() if stored.get(k, -1) < c]
    T.check(f"no acknowledged counter advance is lost ({len(acked)} devices, "
            f"{sum(n for k, n in tally.items() if k[2] == 200)} refreshes answered 200)", not lost and len(acked) == KILL_DEVICES, f"lost: {lost}")
    T.check("no device's stored counter is past what was sent", all(stored.get(k, 0) <= sent[k] for k in sent),
            str({k: (stored.get(k), sent[k]) for k in sent if stored.get(k, 0) > sent[k]}))
    # Host A comes back on the same database and sees the same counters.
    a.start()
    back = {d["keyId"]: d["counter"] for d in a.ctl_json("device", "list", "--app", ".".join(MAIN), "--limit", "100000")}
    T.check("host A restarts and its attestctl sees the same counters", all(back.get(k) == stored.get(k) for k in acked))
    st = a.state("cross")
    p = dev(a, st, "refresh")
    T.check("host A serves refreshes again", p.returncode == 0, p.stderr)


def main():
    db = Database()
    if db.skip_reason:
        print(f"SKIP: {db.skip_reason}")
        return T.summary("hosts")
    rx = Receiver()
    stacks = []
    try:
        started = time.time()
        a = Stack(setup=setup, postgres=db.url, serve_args=["--allow-private-webhooks"])
        stacks.append(a)
        b = Stack(share_with=a, serve_args=["--allow-private-webhooks"])
        stacks.append(b)
        print(f"INFO: two hosts up in {time.time() - started:.1f} s: A {a.base}, B {b.base}", flush=True)
        for name, step in (("shared set-up", shared_setup), ("cross-host refresh", cross_host_refresh),
                           ("one challenge on both hosts", challenge_once), ("one counter split", counter_split),
                           ("MAD race", mad_race), ("webhooks", lambda a, b: webhooks(a, b, rx)),
                           ("flags", lambda a, b: flags_across_hosts(a, b, rx)),
                           ("host A killed under load", kill_host_a)):
            started = time.time()
            try:
                step(a, b)
            except Exception as e:  # noqa: BLE001 - report, then go on with the next part
                import traceback
                traceback.print_exc()
                T.check(f"{name}: ran to the end", False, repr(e))
            print(f"INFO: {name} took {time.time() - started:.1f} s", flush=True)
    except Exception as e:  # noqa: BLE001 - a host did not start
        import traceback
        traceback.print_exc()
        T.check("both hosts started", False, repr(e))
    finally:
        for name, s in zip("AB", stacks):
            rc = s.stop()
            T.check(f"host {name}'s serve stops cleanly", rc == 0, f"exit {rc}")
        rx.shutdown()
        for s in stacks:
            s.remove()
        db.close()
    return T.summary("hosts")


if __name__ == "__main__":
    sys.exit(main())
