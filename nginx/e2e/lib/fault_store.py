"""The fault suite's store faults, each on its own stack: a full LMDB map, a full and a
read-only data directory (a tmpfs; needs root)."""
import json
import os
import signal
import subprocess
import tempfile
import time

import load
from stack import BIN, Stack, app_headers

A = app_headers()


def fill_meta(env_dir, first, count, size):
    """Adds `count` entries of `size` bytes to the durable `meta` database with mdb_load;
    False when they do not fit (MDB_MAP_FULL: the whole batch is rolled back)."""
    # mapsize: mdb_load would otherwise open the environment at the size its file records
    # (1 GiB from `attestctl init`), not the 1 MiB the pools now use.
    lines = ["VERSION=3", "format=print", "type=btree", f"mapsize={1 << 20}", "HEADER=END"]
    for i in range(first, first + count):
        lines += [f" fill-{i:08d}", " " + "x" * size]
    lines.append("DATA=END")
    p = subprocess.run(["mdb_load", "-s", "meta", env_dir], input="\n".join(lines) + "\n", capture_output=True, text=True)
    return p.returncode == 0


def hup_pools(s, endpoints=("validate", "refresh")):
    """SIGHUP to the pool masters: every worker is replaced and reopens the store."""
    old = {ep: set(s.pool_workers(ep)) for ep in endpoints}
    for ep in endpoints:
        os.kill(s.pool_master(ep), signal.SIGHUP)
    deadline = time.time() + 20
    while time.time() < deadline:
        now = {ep: set(s.pool_workers(ep)) for ep in endpoints}
        if all(now[ep] and not (now[ep] & old[ep]) for ep in endpoints):
            return True
        time.sleep(0.1)
    return False


def full_map(T, faults, setup, consistent, batch):
    def small(stack):
        setup(stack)
        stack.ctl("config", "set", "store.durableMapSizeMiB", "1")
    s = Stack(setup=small)
    try:
        bodies = batch(s, "validate", 40)
        env_dir = os.path.join(s.data, "store", "durable")
        n = filled = 0
        for count, size in ((200, 1000), (20, 1000), (1, 1000), (1, 300), (1, 60), (1, 1)):
            while fill_meta(env_dir, n, count, size):
                n += count
                filled += count * size
        faults["tried"] += 1
        # The last pages LMDB frees and reuses still take a few small writes: enroll until
        # the map refuses one. Every answer before must be 200, the refused device absent.
        answers = []
        for body in bodies[:36]:
            answers.append(load.post(s.port, "/api/v1/attestation/validate", A, body))
            if answers[-1][0] != 200:
                break
        status, answer = answers[-1]
        T.check(f"full map ({n} filler entries, {filled // 1024} KiB, then {len(answers) - 1} enrollments): validate answers 503 unavailable",
                status == 503 and (answer or {}).get("code") == "unavailable" and all(a[0] == 200 for a in answers[:-1]),
                f"{[a[0] for a in answers]} {answer}")
        refused_key = json.loads(bodies[len(answers) - 1])["keyId"]
        T.check("full map: the refused enrollment left no device record",
                s.ctl("device", "show", refused_key, check=False).returncode != 0)
        r = s.http("GET", "/api/v1/attestation/challenge", A)
        T.check("full map: challenges are still issued", r.status == 200, repr(r))
        consistent(s, "full map")
        s.ctl("config", "set", "store.durableMapSizeMiB", "64")
        T.check("full map: the pools reopen the store after SIGHUP", hup_pools(s))
        status, answer = load.post(s.port, "/api/v1/attestation/validate", A, bodies[-1])
        T.check("full map grown to 64 MiB: validate answers 200", status == 200, f"{status} {answer}")
        consistent(s, "after growing the map")
    finally:
        s.stop()
        s.remove()


def tmpfs(size_mb):
    mount = tempfile.mkdtemp(prefix="attestedge-fault-fs-")
    p = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size_mb}m", "tmpfs", mount], capture_output=True, text=True)
    return mount if p.returncode == 0 else None


def full_disk(T, faults, setup, consistent, batch, ephemeral_mib=None):
    """A full data directory. By default the ephemeral environment's 256 MiB map does not
    fit on the 48 MiB tmpfs, so it writes with pwrite; with `ephemeral_mib` small enough to
    reserve, it writes through its memory map, and a full disk must still be only 503s."""
    label = "full disk" if ephemeral_mib is None else f"full disk, ephemeral map reserved ({ephemeral_mib} MiB)"
    mount = tmpfs(48)
    if not mount:
        T.check(f"{label}: SKIPPED (cannot mount a tmpfs: not root?)", True)
        return

    def sized(stack):
        setup(stack)
        if ephemeral_mib is not None:
            stack.ctl("config", "set", "store.ephemeralMapSizeMiB", str(ephemeral_mib))
    s = Stack(setup=sized, data=os.path.join(mount, "data"))
    try:
        ephemeral = os.stat(os.path.join(s.data, "store", "ephemeral", "data.mdb"))
        reserved = ephemeral.st_blocks * 512 >= (ephemeral_mib or 256) << 20
        T.check(f"{label}: the ephemeral map is {'reserved' if ephemeral_mib else 'not reserved (it does not fit)'}: "
                f"{ephemeral.st_blocks * 512 >> 20} MiB allocated", reserved == (ephemeral_mib is not None))
        stats = s.ctl_json("store", "stats")["environments"]
        T.check(f"{label}: store stats says the ephemeral environment writes {'through its map' if ephemeral_mib else 'with pwrite'}",
                stats["ephemeral"]["writesThroughMap"] == (ephemeral_mib is not None) and not stats["durable"]["writesThroughMap"], str(stats))
        workers = {ep: s.pool_workers(ep) for ep in ("validate", "refresh")}
        refresh = batch(s, "refresh", 12, devices=2)
        validate = batch(s, "validate", 8)
        subprocess.run(["dd", "if=/dev/zero", f"of={mount}/filler", "bs=1M"], capture_output=True)
        faults["tried"] += 1
        outcomes = load.Outcomes()
        load.run(s.port, A, refresh[:6], validate[:4], outcomes)
        statuses = outcomes.statuses()
        clean = all(st == 200 or (st == 503 and (a or {}).get("code") == "unavailable") for _, _, st, a in outcomes.items)
        T.check(f"{label}: every answer is 200 or 503 unavailable: {statuses}", clean, str(statuses))
        T.check(f"{label}: no worker died", {ep: s.pool_workers(ep) for ep in ("validate", "refresh")} == workers,
                f"{workers} -> {({ep: s.pool_workers(ep) for ep in ('validate', 'refresh')})}")
        os.remove(f"{mount}/filler")
        after = load.Outcomes()
        load.run(s.port, A, refresh[6:], validate[4:], after)
        T.check(f"{label}, freed: validate and refresh answer 200 again: {after.statuses()}",
                set(after.statuses()) == {200}, str(after.statuses()))
        consistent(s, f"after a {label}")
    finally:
        s.stop()
    if ephemeral_mib is None:
        read_only(T, faults, s, mount, consistent)
    s.remove()
    subprocess.run(["umount", mount])
    os.rmdir(mount)


def read_only(T, faults, s, mount, consistent):
    """The stopped stack's data directory remounted read-only: serve and the store commands
    refuse cleanly (an exit status, a message, no crash); nothing is damaged."""
    p = subprocess.run(["mount", "-o", "remount,ro", mount], capture_output=True, text=True)
    if p.returncode != 0:
        T.check(f"read-only: SKIPPED (remount failed: {p.stderr.strip()})", True)
        return
    faults["tried"] += 1
    try:
        for args in (["store", "check"], ["store", "stats"], ["serve", "--listen", "127.0.0.1:1"]):
            r = subprocess.run([os.path.join(BIN, "attestctl"), *args, "--data", s.data], capture_output=True, text=True, timeout=60)
            out = r.stdout + r.stderr
            T.check(f"read-only: attestctl {args[0]} {args[1]} exits with a message, not a crash",
                    r.returncode > 0 and "Fatal error" not in out and "Crash" not in out and out.strip() != "",
                    f"exit {r.returncode}: {out[-400:]}")
    finally:
        subprocess.run(["mount", "-o", "remount,rw", mount])
    consistent(s, "after read-only")


def run(T, faults, setup, consistent, batch):
    def full_disk_reserved(T, faults, setup, consistent, batch):
        full_disk(T, faults, setup, consistent, batch, ephemeral_mib=8)
    for fault in (full_map, full_disk, full_disk_reserved):
        try:
            fault(T, faults, setup, consistent, batch)
        except Exception as e:  # noqa: BLE001 - report, then go on
            import traceback
            traceback.print_exc()
            T.check(f"{fault.__name__} ran to the end", False, repr(e))
