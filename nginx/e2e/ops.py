#!/usr/bin/env python3
"""Issue #11 items 3 end to end: backup under write load, restore, serve the restored copy;
`attestctl doctor` passes on a healthy stack and names each problem on a broken one (a missing
key, a wrong mode, a stopped pool, a flag stream publisher it cannot reach; nothing about nchan
on the healthy stack). Issue #12's prepared ES256 nonces: tokens signed by the
workers at once all verify, and no two share a nonce; with store.sync=interval the workers'
grouped writes keep every counter exact. Prints PASS/FAIL per check and a
summary; exits 1 on a failure."""
import base64
import concurrent.futures
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "lib"))
from check import Tally  # noqa: E402
from stack import run_suite, app_headers, BIN, Stack  # noqa: E402

import jwt  # PyJWT, from PyPI: an independent verifier

T = Tally()


def setup(s):
    s.ctl("config", "set", "rateLimits.validatePerIPPerMinute", "0")
    s.ctl("config", "set", "rateLimits.refreshPerIPPerMinute", "0")
    s.ctl("org", "add", "acme", "--tier", "enterprise")
    s.ctl("app", "add", "--org", "acme", "--team", "ABCDE12345", "--bundle", "com.example.app")


def backup_restore(s):
    before = s.state("before")
    p = s.device(before, "enroll")
    T.check("a device enrolls before the backup", p.returncode == 0, p.stderr)
    stop = threading.Event()
    written = {"enrolled": 0, "failed": 0}
    errors = []

    def load(n):
        i = 0
        while not stop.is_set():
            i += 1
            # One state file per device: two threads enrolling into the same file raced on it.
            r = s.device(s.state(f"load{n}-{i}"), "enroll")
            written["enrolled" if r.returncode == 0 else "failed"] += 1
            if r.returncode != 0:
                errors.append(r.stderr.strip())

    threads = [threading.Thread(target=load, args=(n,)) for n in range(2)]
    for t in threads:
        t.start()
    file = os.path.join(s.dir, "backup.aebk")
    try:
        while written["enrolled"] < 5:
            pass
        b = s.ctl("backup", "--to", file, check=False)
    finally:
        stop.set()
        for t in threads:
            t.join()
    T.check(f"attestctl backup under write load ({written['enrolled']} enrollments around it)", b.returncode == 0 and written["failed"] == 0,
            b.stdout + b.stderr + "".join(f"\nenrollment failed: {e}" for e in errors[:3]))
    T.check("the backup file is 0600", os.stat(file).st_mode & 0o777 == 0o600)
    target = tempfile.mkdtemp(prefix="attestedge-restored-")
    os.chmod(target, 0o755)
    restored_data = os.path.join(target, "data")
    r = subprocess.run([os.path.join(BIN, "attestctl"), "restore", "--from", file, "--data", restored_data], capture_output=True, text=True)
    T.check("attestctl restore into a new directory", r.returncode == 0, r.stdout + r.stderr)
    again = subprocess.run([os.path.join(BIN, "attestctl"), "restore", "--from", file, "--data", restored_data], capture_output=True, text=True)
    T.check("restoring over a store is refused without --force", again.returncode == 1 and "--force" in again.stderr, again.stderr)
    live = subprocess.run([os.path.join(BIN, "attestctl"), "restore", "--from", file, "--data", s.data, "--force"], capture_output=True, text=True)
    T.check("restoring into a served store is refused even with --force", live.returncode == 1 and "stop the stack" in live.stderr, live.stderr)
    st = subprocess.run(["mdb_stat", "-a", os.path.join(restored_data, "store", "durable")], capture_output=True, text=True)
    T.check("mdb_stat reads the restored durable store", st.returncode == 0 and "devices" in st.stdout, st.stdout[-300:] + st.stderr)
    s2 = Stack(data=restored_data)
    try:
        # The device's state file names the first stack's URL; copy it and point it here.
        moved = s2.state("moved")
        shutil.copy(before, moved)
        p = subprocess.run([os.path.join(BIN, "attest-device"), "--server", s2.base, "--team", "ABCDE12345", "--bundle", "com.example.app",
                            "--state", moved, "refresh"], capture_output=True, text=True)
        T.check("the restored store serves a refresh of a device enrolled before the backup", p.returncode == 0, p.stderr)
    finally:
        T.check("the restored stack stops cleanly", s2.stop() == 0)
        s2.remove_if_passed(T)
        shutil.rmtree(target, ignore_errors=True)


def token_nonces(s):
    """Refreshes from four devices at once, through both refresh workers (each prepares its own
    nonces, in quiet moments or a step at a time): every token verifies against the JWKS and
    every signature's r, which is x(k·G) for its nonce k, is distinct."""
    keys = {k["kid"]: k for k in s.http("GET", "/.well-known/jwks.json").json["keys"]}
    plans = []
    for d in range(4):
        st = s.state(f"nonce{d}")
        p = s.device(st, "enroll")
        T.check(f"nonce device {d} enrolls", p.returncode == 0, p.stderr)
        plans.append([json.loads(s.device(st, "body", "refresh", "--counter", str(i)).stdout) for i in range(1, 13)])

    def refresh_in_order(bodies):
        return [s.http("POST", "/api/v1/attestation/refresh", app_headers(), b) for b in bodies]

    with concurrent.futures.ThreadPoolExecutor(len(plans)) as pool:
        results = [r for rs in pool.map(refresh_in_order, plans) for r in rs]
    tokens = [r.json["token"] for r in results if r.status == 200]
    T.check("48 refreshes from four devices at once: all 200", len(tokens) == 48, str(sorted({r.status for r in results})))
    bad = []
    for token in tokens:
        try:
            key = jwt.PyJWK.from_dict(keys[jwt.get_unverified_header(token)["kid"]]).key
            jwt.decode(token, key=key, algorithms=["ES256"], audience="ABCDE12345.com.example.app", issuer="attestedge")
        except Exception as e:  # noqa: BLE001 - any failure is the finding
            bad.append(repr(e))
    T.check("every token verifies with PyJWT against the served JWKS", not bad, str(bad[:3]))
    rs = {base64.urlsafe_b64decode(t.rsplit(".", 1)[1] + "==")[:32] for t in tokens}
    T.check("no two signatures share r (each nonce used once, in one worker)", len(rs) == len(tokens), f"{len(rs)} of {len(tokens)}")


def interval_groups(_):
    """store.sync=interval (issue #12): the refresh workers group their writes there too. Four
    devices refresh at once through both workers, each then replays its last counter: every
    fresh counter is answered 200, every replay 409, and the store holds the last counter
    answered (a write lost from a group, or answered before its group committed, shows here)."""
    s = Stack(setup=setup, sync="interval")
    try:
        states, plans = [], []
        for d in range(4):
            st = s.state(f"interval{d}")
            p = s.device(st, "enroll")
            T.check(f"interval: device {d} enrolls", p.returncode == 0, p.stderr)
            states.append(st)
            bodies = [json.loads(s.device(st, "body", "refresh", "--counter", str(i)).stdout) for i in range(1, 11)]
            plans.append(bodies + [json.loads(s.device(st, "body", "refresh", "--counter", "10").stdout)])

        def refresh_in_order(bodies):
            return [s.http("POST", "/api/v1/attestation/refresh", app_headers(), b).status for b in bodies]

        with concurrent.futures.ThreadPoolExecutor(len(plans)) as pool:
            statuses = list(pool.map(refresh_in_order, plans))
        T.check("interval: 40 refreshes from four devices at once are 200, each replayed counter 409",
                all(st == [200] * 10 + [409] for st in statuses), str(statuses))
        listed = json.loads(s.ctl("device", "list", "--json").stdout)
        counters = sorted(d["counter"] for d in listed if d.get("status") == "invalidated")
        T.check("interval: the store holds each device at counter 10, invalidated by its replay",
                counters == [10, 10, 10, 10], json.dumps(listed)[:400])
    finally:
        rc = s.stop()
        T.check("interval: serve stops cleanly", rc == 0, f"exit {rc}")
        s.remove()


def doctor(s):
    d = s.ctl("doctor", check=False)
    T.check("doctor passes on the healthy stack", d.returncode == 0 and "healthy" in d.stdout, d.stdout + d.stderr)
    T.check("doctor finds nchan loaded and answering and worker_connections enough: no finding about them",
            not any(w in d.stdout for w in ("nchan", "flag stream", "worker_connections")), d.stdout)
    publisher = os.path.join(s.data, "run", "flags-publish.sock")
    os.rename(publisher, publisher + ".moved")  # nginx still listens on it, under the other name
    try:
        d = s.ctl("doctor", check=False)
    finally:
        os.rename(publisher + ".moved", publisher)
    T.check("doctor names a flag stream publisher it cannot reach, and the fix", d.returncode == 1
            and "flag stream publisher does not accept" in d.stdout and "error.log" in d.stdout, d.stdout)
    key = os.path.join(s.data, "secrets", "challenge.key")
    os.chmod(key, 0o644)
    d = s.ctl("doctor", check=False)
    T.check("doctor names a secret with the wrong mode, and the fix", d.returncode == 1 and "mode 644" in d.stdout and "chmod 600" in d.stdout, d.stdout)
    os.chmod(key, 0o600)
    index = json.load(open(os.path.join(s.data, "keys", "index.json")))
    active = [k for k in index["keys"] if os.path.exists(os.path.join(s.data, "keys", k["file"]))]
    hidden = os.path.join(s.dir, "hidden.pem")
    shutil.move(os.path.join(s.data, "keys", active[0]["file"]), hidden)
    d = s.ctl("doctor", check=False)
    T.check("doctor names a missing signing key, and the fix", d.returncode == 1 and "no signing key is active" in d.stdout
            and "keys rotate" in d.stdout, d.stdout)
    shutil.move(hidden, os.path.join(s.data, "keys", active[0]["file"]))
    os.kill(s.serve.pid, 19)  # SIGSTOP serve so it does not restart the pool at once
    try:
        master = int(open(os.path.join(s.data, "run", "mad.sock.pid")).read())
        os.kill(master, 15)
        for _ in range(100):
            if not os.path.exists(os.path.join(s.data, "run", "mad.sock")):
                break
            __import__("time").sleep(0.05)
        d = s.ctl("doctor", check=False)
        T.check("doctor names a stopped pool, and the fix", d.returncode == 1 and "mad pool does not accept" in d.stdout
                and "attestctl serve" in d.stdout, d.stdout)
    finally:
        os.kill(s.serve.pid, 18)  # SIGCONT
    numbered = [line for line in d.stdout.splitlines() if line[:2].rstrip(".").isdigit()]
    T.check("problems are a numbered list", len(numbered) >= 1, d.stdout)


def main():
    return run_suite(T, "ops", Stack(setup=setup), [backup_restore, token_nonces, interval_groups, doctor])


if __name__ == "__main__":
    sys.exit(main())
