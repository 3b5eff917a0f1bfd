#!/usr/bin/env python3
"""The wall clock stepping under a running stack (issue 13): `attestctl serve`, nginx and
every pool run under libfaketime, whose offset is read from a file on every clock call
(FAKETIME_TIMESTAMP_FILE, FAKETIME_NO_CACHE=1); the suite rewrites the file to step the
wall clock forward 400 s, then back to 120 s before where it started, then to the start
again. The stack starts 600 s ahead of the real clock, so no step goes back to before
`attestctl init` made the data directory and its first signing key (earlier than that, no
key is active and token-issuing endpoints answer 500: a limit of a brand-new install, not
what is checked here). Monotonic clocks are left alone (FAKETIME_DONT_FAKE_MONOTONIC=1), as a
real NTP step does.

Checks: the pools follow each step (the challenge's expiresAt, the token's iat); a used
challenge is refused as used after the clock steps back (it is kept past its expiry); a
challenge issued "in the future" relative to the stepped clock is accepted once, then
refused as used; no counter is lost or goes back (each refresh is answered 200 and the
stored counter is the last one sent); no worker dies; the store stays consistent.

Why the `faketime` wrapper's environment: with only LD_PRELOAD and FAKETIME, a Swift
program sees an empty CommandLine.arguments (a pool then has no --socket). On Linux the Swift
runtime finds argv while libswiftCore initialises (stdlib CommandLine.cpp, ArgvGrabber: it
walks back from `environ`, which must still point into the initial stack). Earlier in that
same initialisation libswiftCore calls stat() (on /opt/swift/usr/libexec/swift/linux, where
the backtracer lives); libfaketime interposes stat, initialises itself there, and without
FAKETIME_SHARED creates its shared memory and calls setenv("FAKETIME_SHARED"), which moves
`environ` to the heap. ArgvGrabber then finds nothing. (A preloaded stat() that calls setenv
does the same; one that does not, does not.) With FAKETIME_SHARED already set libfaketime
calls no setenv: the suite keeps a `faketime` wrapper alive, which owns the shared memory,
and passes its FAKETIME_SHARED on.

Ends with `clock: N passed, M failed`."""
import base64
import glob
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "lib"))
from check import Tally  # noqa: E402
from stack import Stack, app_headers, unb64  # noqa: E402

T = Tally()
A = app_headers()
REFRESH = "/api/v1/attestation/refresh"
BASE = 600  # where the stack's clock starts, ahead of the real one


def setup(stack):
    stack.ctl("org", "add", "acme", "--tier", "pro", "--rate-limit", "0")
    stack.ctl("app", "add", "--org", "acme", "--team", "ABCDE12345", "--bundle", "com.example.app", "--env", "both")
    stack.ctl("config", "set", "rateLimits.validatePerIPPerMinute", "0")
    stack.ctl("config", "set", "rateLimits.refreshPerIPPerMinute", "0")


class FakeClock:
    """libfaketime for a process tree, with an offset file the suite rewrites."""

    def __init__(self, directory):
        libs = sorted(glob.glob("/usr/lib/*/faketime/libfaketimeMT.so.1"))
        if not libs:
            raise RuntimeError("libfaketime is not installed (apt-get install faketime)")
        # The pools and nginx's workers may run as another user (serve as root): they read
        # the offset file on every clock call.
        os.chmod(directory, 0o755)
        self.file = os.path.join(directory, "offset")
        self.step(0)
        # The wrapper creates the shared memory and keeps it until its child exits.
        # The wrapper creates the shared memory and removes it when its child (a `cat` that
        # waits for its standard input to close) exits.
        self.wrapper = subprocess.Popen(["faketime", "-f", "+0", "sh", "-c", 'echo "$FAKETIME_SHARED"; exec cat'],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        shared = self.wrapper.stdout.readline().strip()
        self.env = {"LD_PRELOAD": libs[0], "FAKETIME_SHARED": shared, "FAKETIME_TIMESTAMP_FILE": self.file,
                    "FAKETIME_NO_CACHE": "1", "FAKETIME_DONT_FAKE_MONOTONIC": "1"}

    def step(self, seconds):
        """Sets the offset from the real clock; every faked process sees it at its next call."""
        self.offset = seconds
        with open(self.file + ".new", "w") as f:
            f.write(f"{seconds:+d}\n")
        os.chmod(self.file + ".new", 0o644)
        os.replace(self.file + ".new", self.file)

    def close(self):
        self.wrapper.stdin.close()
        self.wrapper.wait(timeout=10)


def challenge(s):
    r = s.http("GET", "/api/v1/attestation/challenge", A)
    assert r.status == 200, r
    return r.json


def expires_in_from_real(s):
    """The challenge pool's clock, as seen in expiresAt, minus the real clock (seconds)."""
    j = challenge(s)
    expires = time.mktime(time.strptime(j["expiresAt"], "%Y-%m-%dT%H:%M:%SZ")) - time.timezone
    return expires - j["expiresIn"] - time.time(), j["challenge"]


def refresh_body(s, state, challenge_text=None):
    args = ["body", "refresh"] + (["--challenge", challenge_text] if challenge_text else [])
    p = s.device(state, *args)
    assert p.returncode == 0, p.stderr
    return p.stdout.strip()


def post(s, body):
    r = s.http("POST", REFRESH, A, body.encode())
    return r.status, (r.json or {})


def iat_from_real(answer):
    payload = answer["token"].split(".")[1]
    return json.loads(unb64(payload.replace("-", "+").replace("_", "/")))["iat"] - time.time()


def near(value, target, slack=5):
    return abs(value - target) <= slack


def run(s, clock):
    state = s.state("device")
    pools = {ep: s.pool_workers(ep) for ep in ("challenge", "validate", "refresh")}
    T.check(f"the pools start under libfaketime (workers {pools})", all(len(w) == 2 for w in pools.values()))
    offset, _ = expires_in_from_real(s)
    T.check(f"the challenge pool's clock starts {BASE} s ahead ({offset:+.1f} s)", near(offset, BASE))
    p = s.device(state, "enroll")
    T.check("a device enrolls", p.returncode == 0, p.stderr[-500:])

    used = refresh_body(s, state)
    status, answer = post(s, used)
    T.check("refresh 1 at the start: 200", status == 200, str(answer))
    counter = 1

    clock.step(BASE + 400)
    offset, _ = expires_in_from_real(s)
    T.check(f"clock stepped forward 400 s: the challenge pool follows ({offset - BASE:+.1f} s)", near(offset, BASE + 400))
    status, answer = post(s, used)
    T.check(f"+400 s: refresh 1's challenge, past its expiry, is refused ({status} {answer.get('code')})",
            status == 400 and answer.get("code") in ("challenge_expired", "challenge_already_used"))
    second = refresh_body(s, state)
    status, answer = post(s, second)
    counter += 1
    T.check(f"+400 s: refresh 2 is 200 and its token's iat follows the clock ({iat_from_real(answer) - BASE if status == 200 else 0:+.1f} s)",
            status == 200 and near(iat_from_real(answer), BASE + 400), str(answer))
    _, future = expires_in_from_real(s)

    clock.step(BASE - 120)
    offset, _ = expires_in_from_real(s)
    T.check(f"clock stepped back 520 s to 120 s before the start: the challenge pool follows ({offset - BASE:+.1f} s)",
            near(offset, BASE - 120))
    for name, body in (("refresh 1 (used at the start, expired at +300)", used), ("refresh 2 (used at +400)", second)):
        status, answer = post(s, body)
        T.check(f"after the step back, {name} is refused as used ({status} {answer.get('code')})",
                status == 400 and answer.get("code") == "challenge_already_used")
    from_future = refresh_body(s, state, future)
    status, answer = post(s, from_future)
    counter += 1
    T.check(f"a challenge issued at +400 s, 'in the future' after the step, is accepted once ({status} {answer.get('code', '')})",
            status == 200 and near(iat_from_real(answer), BASE - 120), str(answer))
    status, answer = post(s, from_future)
    T.check(f"... and refused as used the second time ({status} {answer.get('code')})",
            status == 400 and answer.get("code") == "challenge_already_used")
    status, answer = post(s, refresh_body(s, state))
    counter += 1
    T.check("after the step back, a fresh refresh is 200 (the counter goes on)", status == 200, str(answer))

    clock.step(BASE)
    status, answer = post(s, refresh_body(s, state))
    counter += 1
    T.check("back at the start, a refresh is 200", status == 200, str(answer))
    for body in (used, second, from_future):
        status, answer = post(s, body)
        T.check(f"back at the start, an earlier body is still refused ({status} {answer.get('code')})",
                status == 400 and answer.get("code") in ("challenge_already_used", "challenge_expired"))

    stored = s.ctl_json("device", "show", json.loads(used)["keyId"])
    T.check(f"no counter lost: the stored counter is {counter}, the last one sent ({stored['counter']})", stored["counter"] == counter)
    T.check("the device is still active", stored.get("status", "active") == "active", str(stored.get("status")))
    after = {ep: s.pool_workers(ep) for ep in ("challenge", "validate", "refresh")}
    T.check("no worker died across the steps (same worker pids)", pools == after, f"{pools} -> {after}")
    log = s.serve_output()
    T.check("serve logged no crash or restart", "killed by signal" not in log and "restarting" not in log,
            "\n".join(line for line in log.splitlines() if "killed" in line or "restarting" in line)[:1000])
    check = s.ctl("store", "check", check=False)
    T.check("attestctl store check: consistent", check.returncode == 0, check.stdout[-1500:])


def main():
    started = time.time()
    base = os.environ.get("TMPDIR", "/tmp")
    work = subprocess.run(["mktemp", "-d", os.path.join(base, "attestedge-clock.XXXXXX")], capture_output=True, text=True).stdout.strip()
    clock = FakeClock(work)
    clock.step(BASE)
    s = None
    try:
        s = Stack(setup=setup, env=clock.env)
        run(s, clock)
    except Exception as e:  # noqa: BLE001 - report, then fail
        import traceback
        traceback.print_exc()
        T.check("suite ran to the end", False, repr(e))
    finally:
        if s:
            rc = s.stop()
            T.check("serve stops cleanly on SIGTERM", rc == 0, f"exit {rc}")
            if T.failed:
                log = os.path.join(s.data, "log")
                for name in sorted(os.listdir(log)):
                    if name.startswith("attest-"):
                        with open(os.path.join(log, name), errors="replace") as f:
                            print(f"--- {name}\n" + "".join(f.readlines()[-15:]))
            s.remove()
        clock.close()
        subprocess.run(["rm", "-rf", work])
    print(f"clock: wall clock stepped +400 s, -520 s, +120 s in {time.time() - started:.1f}s")
    return T.summary("clock")


if __name__ == "__main__":
    sys.exit(main())
