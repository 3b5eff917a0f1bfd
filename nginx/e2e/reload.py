#!/usr/bin/env python3
"""Issue #11 item 1 end to end: `attestctl reload` swaps the refresh pool to a new binary in
the middle of load on refresh and challenge with no failed request on either endpoint (every
request nginx logged for them is a 200, and wrk saw no socket error); a binary that exits at
start is refused and the running pool keeps serving; a pid file naming any other process is refused
(issue #37 item 4). The stack runs from a copy of the release
binaries so they can be replaced. Prints PASS/FAIL per check and a summary; exits 1 on a failure."""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
RELEASE = os.path.join(ROOT, ".build", "release")
BIN = tempfile.mkdtemp(prefix="attestedge-reload-bin-")
os.chmod(BIN, 0o755)  # the pools run as the service user when this runs as root
for name in ["attestctl", "attest-challenge", "attest-validate", "attest-refresh", "attest-mad", "attest-webhooks",
             "attest-monitor", "attest-flags", "attest-feedback", "attest-org", "attest-receipts", "attest-device"]:
    if os.path.exists(os.path.join(RELEASE, name)):
        shutil.copy2(os.path.join(RELEASE, name), os.path.join(BIN, name))
os.environ["ATTEST_BIN"] = BIN
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "lib"))
from check import Tally  # noqa: E402
from stack import run_suite, Stack  # noqa: E402

T = Tally()
TEAM, BUNDLE = "ABCDE12345", "com.example.app"
REFRESHES = int(os.environ.get("RELOAD_REFRESHES", "4000"))


def setup(s):
    s.ctl("config", "set", "rateLimits.refreshPerIPPerMinute", "0")
    s.ctl("config", "set", "rateLimits.validatePerIPPerMinute", "0")
    s.ctl("org", "add", "acme", "--tier", "enterprise")
    s.ctl("app", "add", "--org", "acme", "--team", TEAM, "--bundle", BUNDLE)


def replace_binary(name, source):
    """Installs `source` as BIN/name the way an upgrade does: a new file renamed over the old."""
    target = os.path.join(BIN, name)
    shutil.copy2(source, target + ".new")
    os.rename(target + ".new", target)


def statuses(s, path, since):
    """Statuses nginx logged for `path` from byte offset `since` of the access log."""
    with open(os.path.join(s.data, "log", "access.log"), "rb") as f:
        f.seek(since)
        text = f.read().decode(errors="replace")
    found = {}
    for line in text.splitlines():
        m = re.search(r'"[A-Z]+ ([^ ?]+)[^"]*" (\d{3}) ', line)
        if m and m.group(1) == path:
            found[m.group(2)] = found.get(m.group(2), 0) + 1
    return found


def swap_under_load(s):
    bodies = os.path.join(s.dir, "refresh.jsonl")
    p = s.device(s.state("loader"), "batch", "refresh", "--count", str(REFRESHES), "--devices", "200", "--out", bodies)
    T.check("generated the refresh bodies (200 enrolled devices)", p.returncode == 0, p.stderr)
    log_size = os.path.getsize(os.path.join(s.data, "log", "access.log"))
    master = open(os.path.join(s.data, "run", "refresh.sock.pid")).read().strip()
    old_workers = set(subprocess.run(["pgrep", "-P", master], capture_output=True, text=True).stdout.split())
    lua = os.path.join(ROOT, "nginx", "bench", "replay.lua")
    replay_out = os.path.join(s.dir, "replay.out")
    refresh_load = subprocess.Popen(["wrk", "-t2", "-c8", "-d120s", "--timeout", "30s", "-s", lua, s.base + "/api/v1/attestation/refresh",
                                     "--", bodies, "2", BUNDLE, TEAM], stdout=open(replay_out, "w"), stderr=subprocess.STDOUT)
    challenge_load = subprocess.Popen(["wrk", "-t1", "-c4", "-d4s", "-H", f"X-Bundle-ID: {BUNDLE}", "-H", f"X-Team-ID: {TEAM}",
                                       s.base + "/api/v1/attestation/challenge"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    time.sleep(1.0)
    replace_binary("attest-refresh", os.path.join(RELEASE, "attest-refresh"))
    reload = s.ctl("reload", "refresh", check=False)
    T.check("attestctl reload refresh under load exits 0 and says swapped", reload.returncode == 0 and "swapped" in reload.stdout,
            reload.stdout + reload.stderr)
    T.check("the master kept its PID", open(os.path.join(s.data, "run", "refresh.sock.pid")).read().strip() == master)
    deadline = time.time() + 15
    while time.time() < deadline:
        new_workers = set(subprocess.run(["pgrep", "-P", master], capture_output=True, text=True).stdout.split())
        if new_workers and not (new_workers & old_workers):
            break
        time.sleep(0.1)
    T.check("the old workers finish and leave; new ones serve", bool(new_workers) and not (new_workers & old_workers),
            f"{old_workers} -> {new_workers}")
    challenge_out, _ = challenge_load.communicate(timeout=60)
    # The replay prints a REPLAY line per thread once its bodies are answered; wrk then idles.
    deadline = time.time() + 110
    out = ""
    while time.time() < deadline:
        out = open(replay_out).read()
        if out.count("REPLAY ") >= 2 or refresh_load.poll() is not None:
            break
        time.sleep(0.2)
    refresh_load.terminate()
    refresh_load.wait(timeout=30)
    out = open(replay_out).read()
    replay_lines = [line for line in out.splitlines() if line.startswith("REPLAY ")]
    fields = [dict(kv.split("=") for kv in line.split()[1:]) for line in replay_lines]
    ok = sum(int(f["ok"]) for f in fields)
    failed = sum(int(f["failed"]) for f in fields)
    T.check("the refresh replay finished", len(replay_lines) == 2, out[-500:])
    T.check(f"refresh: every body answered 200 during the swap ({ok} ok)", failed == 0 and ok == REFRESHES, f"ok={ok} of {REFRESHES}, failed={failed}")
    time.sleep(0.5)
    refresh = statuses(s, "/api/v1/attestation/refresh", log_size)
    challenge = statuses(s, "/api/v1/attestation/challenge", log_size)
    T.check("every refresh nginx logged during the swap is a 200", set(refresh) == {"200"}, str(refresh))
    # 499 is nginx's "client closed the connection": wrk cuts its connections when its -d runs out.
    T.check("every challenge nginx logged during the swap is a 200 (or 499 from wrk's own stop)",
            set(challenge) - {"499"} == {"200"} and challenge["200"] > 100 and challenge.get("499", 0) <= 4, str(challenge))
    T.check("wrk saw no socket error or non-2xx on challenge", "Socket errors" not in challenge_out and "Non-2xx" not in challenge_out,
            challenge_out)


def broken_binary_is_refused(s):
    broken = os.path.join(s.dir, "broken")
    with open(broken, "w") as f:
        f.write("#!/bin/sh\necho 'this build is broken' >&2\nexit 3\n")
    os.chmod(broken, 0o755)
    replace_binary("attest-refresh", broken)
    reload = s.ctl("reload", "refresh", check=False)
    T.check("a binary that exits at start is refused: exit 1 naming the check", reload.returncode == 1
            and "--check exited with status 3" in reload.stderr and "this build is broken" in reload.stderr, reload.stdout + reload.stderr)
    st = s.state("after")
    p1 = s.device(st, "enroll")
    p2 = s.device(st, "refresh")
    T.check("the old refresh binary keeps serving after the refusal", p1.returncode == 0 and p2.returncode == 0, p1.stderr + p2.stderr)
    replace_binary("attest-refresh", os.path.join(RELEASE, "attest-refresh"))
    reload = s.ctl("reload", "refresh", check=False)
    T.check("a good binary swaps in again", reload.returncode == 0, reload.stderr)
    p3 = s.device(st, "refresh")
    T.check("and serves", p3.returncode == 0, p3.stderr)


def plant_pid(s, text):
    """Writes `text` into the refresh pool's pid file as its owner would (the service user
    when the suite runs as root): the file root's `attestctl reload` reads."""
    path = os.path.join(s.data, "run", "refresh.sock.pid")
    if os.geteuid() == 0:
        p = subprocess.run(["runuser", "-u", "attestedge", "--", "sh", "-c", 'printf "%s\\n" "$1" > "$2"', "sh", text, path],
                           capture_output=True, text=True)
        assert p.returncode == 0, p.stderr
    else:
        with open(path, "w") as f:
            f.write(text + "\n")


def foreign_pids(s):
    """Issue #37 item 4: the pid file is the service user's to write. A PID in it that is not
    the refresh pool's master (a root process, -1, 0, garbage) is refused with a clear error and
    nothing is signalled; the real master's PID still reloads."""
    path = os.path.join(s.data, "run", "refresh.sock.pid")
    master = open(path).read().strip()
    victim = subprocess.Popen(["sleep", "300"])  # root's own process when the suite runs as root
    try:
        plant_pid(s, str(victim.pid))
        reload = s.ctl("reload", "refresh", check=False)
        time.sleep(0.3)
        T.check("a foreign PID (a sleep of the suite's) is refused: exit 1, saying it is not the pool's master",
                reload.returncode == 1 and "not the refresh pool's master" in reload.stderr and "nothing signalled" in reload.stderr,
                reload.stdout + reload.stderr)
        survived = victim.poll() is None
        T.check("and that process got no SIGHUP (it is still running)", survived, f"exit {victim.returncode}")
        if not survived:
            print("NOTE: reload signalled a foreign PID: the -1 and 0 cases are skipped (they would signal every process / this suite)")
            return
        for text in ["-1", "0", "garbage", "12 13"]:
            plant_pid(s, text)
            reload = s.ctl("reload", "refresh", check=False)
            T.check(f"pid file {text!r}: refused as not a process id, exit 1", reload.returncode == 1 and "not a process id" in reload.stderr
                    and "nothing signalled" in reload.stderr, reload.stdout + reload.stderr)
        T.check("the suite and the sleep are still alive after the -1 and 0 attempts", victim.poll() is None)
    finally:
        victim.kill()
        victim.wait()
        plant_pid(s, master)
    reload = s.ctl("reload", "refresh", check=False)
    T.check("the real master's PID still reloads", reload.returncode == 0 and "swapped" in reload.stdout, reload.stdout + reload.stderr)


def main():
    return run_suite(T, "reload", Stack(setup=setup), [swap_under_load, broken_binary_is_refused, foreign_pids], cleanup=lambda: shutil.rmtree(BIN, ignore_errors=True))


if __name__ == "__main__":
    sys.exit(main())
