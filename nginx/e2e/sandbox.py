#!/usr/bin/env python3
"""End-to-end: webhook registration inside the webhooks pool's network sandbox, delivery
guarded outside it (nginx/e2e/sandbox.sh). Prints PASS/FAIL per check; exits 1 on a failure."""
import os
import re
import shutil
import socket
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REAL_BIN = os.environ.get("ATTEST_BIN", os.path.join(HERE, "..", "..", ".build", "release"))
# A bin directory whose attest-webhooks starts its pool (not its `deliver` worker) in the
# sandbox. attestctl serve starts the pools from the directory its own executable is in, so
# attestctl is copied there, not linked.
SANDBOXED_BIN = tempfile.mkdtemp(prefix="attestedge-sandbox-bin-")
os.environ["ATTEST_BIN"] = SANDBOXED_BIN
sys.path.insert(0, os.path.join(HERE, "lib"))
from check import Tally  # noqa: E402
from stack import Stack  # noqa: E402

T = Tally()


def make_bin():
    for name in os.listdir(REAL_BIN):
        path = os.path.join(os.path.abspath(REAL_BIN), name)
        if not name.startswith("attest") or not os.path.isfile(path) or not os.access(path, os.X_OK):
            continue
        if name == "attestctl":
            shutil.copy2(path, os.path.join(SANDBOXED_BIN, name))
        elif name == "attest-webhooks":
            wrapper = os.path.join(SANDBOXED_BIN, name)
            with open(wrapper, "w") as f:
                f.write("#!/bin/sh\n"
                        f'[ "$1" = deliver ] && exec {path} "$@"\n'
                        f'exec unshare --net python3 {os.path.join(HERE, "lib", "sandbox_exec.py")} {path} "$@"\n')
            os.chmod(wrapper, 0o755)
        else:
            os.symlink(path, os.path.join(SANDBOXED_BIN, name))


def setup(s):
    # The pools stay root: unshare needs it (the units' other properties are not the point here).
    s.ctl("config", "set", "server.user", "root")
    s.ctl("config", "set", "webhooks.retrySchedule", "[60]")
    s.ctl("org", "add", "acme", "--tier", "pro", "--rate-limit", "0")


def webhooks_pool(s):
    """The pid of the webhooks pool's master (the wrapper execs, so it keeps the pid)."""
    for pid in s.processes():
        try:
            args = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")
        except OSError:
            continue
        if args and args[0].endswith(b"attest-webhooks") and b"deliver" not in args:
            return pid
    return None


class Listener:
    """A TCP port on 127.0.0.1 that counts connections (nothing should reach it)."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.connections = 0
        threading.Thread(target=self.accept, daemon=True).start()

    def accept(self):
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            self.connections += 1
            c.close()


def main():
    if os.geteuid() != 0:
        print("SKIP: needs root (unshare --net)")
        return T.summary("sandbox")
    make_bin()
    listener = Listener()
    s = Stack(setup=setup)
    try:
        pool = webhooks_pool(s)
        T.check("the webhooks pool runs", pool is not None)
        if pool:
            T.check("in a network namespace of its own (PrivateNetwork=yes)",
                    os.readlink(f"/proc/{pool}/ns/net") != os.readlink("/proc/self/ns/net"))
            status = open(f"/proc/{pool}/status").read()
            T.check("under a seccomp filter (RestrictAddressFamilies=AF_UNIX)", re.search(r"Seccomp:\s+2\b", status) is not None, status[-400:])
        key = s.ctl_json("apikey", "create", "--org", "acme")["key"]
        auth = {"Authorization": "Bearer " + key}

        r = s.http("POST", "/api/v1/org/webhooks", auth, {"url": "https://hooks.example.com/attest"})
        T.check("a URL with a host name registers in the sandbox: 201 (was 400 'does not resolve')", r.status == 201, repr(r))
        r = s.http("POST", "/api/v1/org/webhooks", auth, {"url": "https://[2002:7f00:1::1]/x"})
        T.check("an address literal is still judged there: 6to4 of 127.0.0.1 is 400 loopback",
                r.status == 400 and "loopback" in r.json["error"], repr(r))

        # localhost resolves (/etc/hosts) to 127.0.0.1: registered, then refused by the sender.
        r = s.http("POST", "/api/v1/org/webhooks", auth, {"url": f"https://localhost:{listener.port}/in", "events": ["webhook.test"]})
        T.check("a host name that resolves to loopback registers too", r.status == 201, repr(r))
        hook = r.json.get("id") if r.status == 201 else None
        if hook:
            r = s.http("POST", f"/api/v1/org/webhooks/{hook}/test", auth)
            T.check("a test event is queued", r.status == 202, repr(r))
            attempts, deadline = [], time.time() + 20
            while time.time() < deadline and not attempts:
                log = s.http("GET", f"/api/v1/org/webhooks/{hook}/deliveries", auth).json["deliveries"]
                attempts = log[0]["attempts"] if log else []
                time.sleep(0.2)
            errors = [a["error"] or "" for a in attempts]
            T.check("the delivery worker refuses it at connection time: the attempt's error names loopback",
                    len(attempts) >= 1 and all("loopback" in e for e in errors) and all(a["status"] is None for a in attempts), repr(attempts))
            T.check("and nothing connected to the port", listener.connections == 0, f"{listener.connections} connections")
    finally:
        s.stop()
        s.remove_if_passed(T)
        shutil.rmtree(SANDBOXED_BIN, ignore_errors=True)
    return T.summary("sandbox")


if __name__ == "__main__":
    sys.exit(main())
