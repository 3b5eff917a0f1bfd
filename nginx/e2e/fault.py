#!/usr/bin/env python3
"""Faults through real nginx (issue 13, part 4), each followed by `attestctl store check` and
`mdb_stat` on both environments:

- SIGKILL of random validate/refresh workers under load: no acknowledged counter advance is
  lost, no challenge is accepted twice (every acknowledged body, replayed, is refused), every
  acknowledged enrollment is stored whole;
- nginx reloaded (SIGHUP) and its workers killed under load: the same checks;
- a full durable LMDB map: 503 `unavailable`, then recovery after growing the map;
- a full data directory (a small tmpfs), with the ephemeral map too large to reserve (written
  with pwrite) and with it reserved (written through the map): clean answers and no dead
  worker, recovery after space is freed; a read-only data directory: clean refusals, no
  corruption;

The wall clock stepping back under the running stack is its own suite (clock.sh: the pools
under libfaketime, with the reason plain LD_PRELOAD emptied Swift's CommandLine.arguments);
HardeningTests checks the same in-process with a FixedClock.

Ends with `fault: N passed, M failed`."""
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "lib"))
import load  # noqa: E402
from check import Tally  # noqa: E402
from stack import Stack, app_headers  # noqa: E402

T = Tally()
A = app_headers()
faults = {"tried": 0}


def setup(stack):
    stack.ctl("org", "add", "acme", "--tier", "pro", "--rate-limit", "0")
    stack.ctl("app", "add", "--org", "acme", "--team", "ABCDE12345", "--bundle", "com.example.app", "--env", "both")
    stack.ctl("config", "set", "rateLimits.validatePerIPPerMinute", "0")
    stack.ctl("config", "set", "rateLimits.refreshPerIPPerMinute", "0")


def batch(s, kind, count, devices=None):
    out = os.path.join(s.dir, f"{kind}-{time.time_ns()}.jsonl")
    args = ["batch", kind, "--count", str(count), "--out", out] + (["--devices", str(devices)] if devices else [])
    p = s.device(s.state(f"batch-{kind}"), *args)
    assert p.returncode == 0, p.stderr
    with open(out) as f:
        return [line.strip() for line in f if line.strip()]


def consistent(s, when):
    """attestctl store check and mdb_stat of both environments."""
    p = s.ctl("store", "check", check=False)
    T.check(f"{when}: attestctl store check is consistent", p.returncode == 0, p.stdout[-1500:] + p.stderr[-500:])
    for env in ("durable", "ephemeral"):
        m = subprocess.run(["mdb_stat", "-a", os.path.join(s.data, "store", env)], capture_output=True, text=True)
        T.check(f"{when}: mdb_stat reads the {env} environment", m.returncode == 0, m.stderr[-500:])


def wait_pools(s, endpoints=("validate", "refresh"), count=2, timeout=20):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if all(len(s.pool_workers(ep)) == count for ep in endpoints):
            return True
        time.sleep(0.1)
    return False


def ledger_checks(s, outcomes, name):
    """What clients were told against what the store holds."""
    # A cut connection leaves its request running in the pool: if it commits after the
    # device's next request (a higher counter), it arrives as an older counter and, per the
    # contract, answers 409 and invalidates the device. So 409 is documented only for a
    # device whose connection was cut before; anything else must be 200 or 502/503 JSON.
    statuses = outcomes.statuses()
    cut, unexplained = set(), []
    for kind, body, status, answer in outcomes.items:
        key = json.loads(body)["keyId"]
        code = (answer or {}).get("code")
        if status is None:
            cut.add(key)
        elif not (status == 200 or (status in (502, 503) and code == "unavailable")
                  or (status == 409 and code == "reattest_required" and key in cut)):
            unexplained.append((kind, status, code))
    T.check(f"{name}: every answer is 200, a JSON 502/503, or 409 after a cut connection of that device: {statuses}",
            not unexplained, str(unexplained[:5]))
    acked = {}
    attempted = {}
    for kind, body, status, _ in outcomes.items:
        if kind != "refresh":
            continue
        j = json.loads(body)
        counter = load.assertion_counter(j["assertion"])
        attempted[j["keyId"]] = max(attempted.get(j["keyId"], 0), counter)
        if status == 200:
            acked[j["keyId"]] = max(acked.get(j["keyId"], 0), counter)
    lost, phantom = [], []
    for key, top in attempted.items():
        stored = s.ctl_json("device", "show", key)["counter"]
        if stored < acked.get(key, 0):
            lost.append((key[:8], acked[key], stored))
        if stored > top:
            phantom.append((key[:8], top, stored))
    T.check(f"{name}: no acknowledged counter advance is lost ({len(acked)} devices, {sum(acked.values())} advances told)",
            not lost, str(lost))
    T.check(f"{name}: no stored counter is above what a client sent", not phantom, str(phantom))
    enrolled = outcomes.acknowledged("validate")
    missing = [b for b in enrolled if s.ctl("device", "show", json.loads(b)["keyId"], check=False).returncode != 0]
    T.check(f"{name}: every acknowledged enrollment is stored ({len(enrolled)})", not missing, str(len(missing)))
    replays = outcomes.acknowledged("refresh") + enrolled
    refused = 0
    for body in replays:
        kind = "validate" if "attestationObject" in body else "refresh"
        status, answer = load.post(s.port, f"/api/v1/attestation/{kind}", A, body)
        refused += status == 400 and (answer or {}).get("code") == "challenge_already_used"
    T.check(f"{name}: every acknowledged challenge, presented again, is already used ({refused}/{len(replays)})",
            refused == len(replays))


def killed_workers(s):
    refresh = batch(s, "refresh", 1200, devices=8)
    validate = batch(s, "validate", 60)
    kills = []

    def killer(stop):
        # Bounded: enough kills to land in every phase of a request, few enough that the
        # pools' restart backoff does not stretch the run on a busy machine.
        # 10-40 ms apart: the load can finish in under half a second on a quiet machine (1,260
        # requests in 0.4 s made only 4 kills at 20-100 ms, below the check's 5).
        while not stop.is_set() and len(kills) < 30:
            time.sleep(random.uniform(0.01, 0.04))
            workers = s.pool_workers(random.choice(["validate", "refresh"]))
            if workers:
                victim = random.choice(workers)
                try:
                    os.kill(victim, signal.SIGKILL)
                    kills.append(victim)
                except ProcessLookupError:
                    pass

    outcomes = load.Outcomes()
    started = time.time()
    load.run(s.port, A, refresh, validate, outcomes, killer)
    faults["tried"] += len(kills)
    T.check(f"SIGKILL: {len(kills)} workers killed during {len(outcomes.items)} requests ({time.time() - started:.1f}s)",
            len(kills) >= 5, str(len(kills)))
    T.check("SIGKILL: the pools are whole again", wait_pools(s))
    ledger_checks(s, outcomes, "SIGKILL")
    consistent(s, "after SIGKILLs")


def nginx_restarts(s):
    master = subprocess.run(["pgrep", "-f", f"nginx: master process.*{s.data}"], capture_output=True, text=True).stdout.split()
    T.check("nginx master found", bool(master))
    if not master:
        return
    master = int(master[0])
    refresh = batch(s, "refresh", 1000, devices=4)
    events = []

    # Short gaps: with the Swift FastCGI reader the load can finish within 0.3 s, and the
    # check below needs at least two faults inside it.
    def restarter(stop):
        for i in range(6):
            if stop.wait(0.04):
                break
            if i % 2 == 0:
                os.kill(master, signal.SIGHUP)
                events.append("reload")
            else:
                workers = subprocess.run(["pgrep", "-P", str(master)], capture_output=True, text=True).stdout.split()
                for w in workers:
                    try:
                        os.kill(int(w), signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                events.append(f"killed {len(workers)} nginx workers")

    outcomes = load.Outcomes()
    load.run(s.port, A, refresh, [], outcomes, restarter)
    faults["tried"] += len(events)
    T.check(f"nginx: {', '.join(events)} during {len(outcomes.items)} requests", len(events) >= 2)
    ledger_checks(s, outcomes, "nginx restarts")
    ok = load.post(s.port, "/api/v1/attestation/refresh", A, "{}")[0] == 400
    T.check("nginx: answers after the restarts", ok)
    consistent(s, "after nginx restarts")


def main():
    started = time.time()
    s = Stack(setup=setup)
    try:
        killed_workers(s)
        nginx_restarts(s)
    except Exception as e:  # noqa: BLE001 - report, then fail
        import traceback
        traceback.print_exc()
        T.check("suite ran to the end", False, repr(e))
    finally:
        rc = s.stop()
        T.check("serve stops cleanly on SIGTERM", rc == 0, f"exit {rc}")
        s.remove()
    import fault_store  # noqa: E402 - the store faults, each on its own stack
    fault_store.run(T, faults, setup, consistent, batch)
    print(f"fault: {faults['tried']} faults injected in {time.time() - started:.1f}s; nothing acknowledged was lost: "
          f"{'yes' if not T.failed else 'see failures'}")
    return T.summary("fault")


if __name__ == "__main__":
    sys.exit(main())
