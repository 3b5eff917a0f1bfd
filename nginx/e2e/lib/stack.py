"""Helpers for the end-to-end suites: a whole AttestEdge stack started with `attestctl serve`
in a temporary data directory, HTTP through its nginx, the CLIs (the PASS/FAIL tally is
check.py's)."""
import base64
import hashlib
import http.client
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
BIN = os.environ.get("ATTEST_BIN", os.path.join(ROOT, ".build", "release"))


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def unb64(text: str) -> bytes:
    return base64.b64decode(text + "=" * (-len(text) % 4))


def sha256(data: bytes) -> bytes:
    return hashlib.sha256(data).digest()


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Response:
    def __init__(self, status, headers, body):
        self.status = status
        self.headers = {k.lower(): v for k, v in headers}
        self.body = body

    @property
    def json(self):
        try:
            return json.loads(self.body)
        except ValueError:
            return None

    def __repr__(self):
        return f"HTTP {self.status} {self.body[:300]!r}"


class Stack:
    """`attestctl serve` on a free loopback port with a fresh data directory."""

    def __init__(self, setup=None, workers=2, sync=None, data=None, serve_args=(), env=None, postgres=None, share_with=None):
        """`data`: where the data directory is (default: in a fresh temporary directory); an
        existing one (e.g. a restored backup) is served as it is; `serve_args`: more arguments for `attestctl serve`; `env`: extra environment for
        `attestctl serve` and everything it starts.
        `postgres`: a libpq connection string: the store is that database (store.backend
        postgres, schema migrated before `setup` runs) instead of LMDB.
        `share_with`: another Stack (host A) this one is a second host of: before anything
        else its data directory gets copies of A's config.json (so the same store and
        database, rate limits and test roots), challenge secret, signing keys, jwks.json and
        test CA, as every host of one deployment must; it has its own data directory, nginx,
        pools and port. Give `setup` to A only: organizations, apps and the rest live in the
        shared database and are created once, not per host (this data directory is
        initialised, so `attestctl serve` does not add its demo tenant either)."""
        self.dir = tempfile.mkdtemp(prefix="attestedge-e2e-")
        self.data = data or os.path.join(self.dir, "data")
        self.port = free_port()
        self.metrics_port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.workers = workers
        self.serve_args = list(serve_args)
        self.env = env
        self.postgres = postgres or (share_with.postgres if share_with else None)
        if share_with:
            self.copy_host_files(share_with)
            self.ctl("init")  # only the layout is missing: the copied secret and keys are kept
        elif not os.path.exists(os.path.join(self.data, "config.json")):
            self.ctl("init", "--test-ca")
            self.ctl("config", "set", "rateLimits.challengePerIPPerSecond", "100000")
            self.ctl("config", "set", "rateLimits.challengeBurst", "100000")
        if not postgres and not share_with and data is None and os.environ.get("ATTEST_E2E_STORE") == "postgres":
            postgres = self.fresh_database()
        if postgres:
            self.use_postgres(postgres)
        if sync:
            self.ctl("config", "set", "store.sync", sync)
        if setup:
            setup(self)
        self.start()

    def fresh_database(self):
        """With ATTEST_E2E_STORE=postgres (nginx/scripts/test.sh runs some suites twice): a database
        of this stack's own in the cluster at ATTEST_TEST_POSTGRES_URL, dropped by `remove`."""
        base = os.environ["ATTEST_TEST_POSTGRES_URL"]
        self.own_database = "e2e_" + os.path.basename(self.dir).replace("-", "_").lower()
        subprocess.run(["psql", base, "-qc", f"CREATE DATABASE {self.own_database}"], check=True, capture_output=True)
        return re.sub(r"dbname=\S+", f"dbname={self.own_database}", base)

    def use_postgres(self, url):
        """Switches this data directory's store to the PostgreSQL database at `url` (a libpq
        connection string) and creates or upgrades its schema (`attestctl store migrate`)."""
        self.postgres = url
        self.ctl("config", "set", "store.postgres.url", json.dumps(url))  # first: the backend needs it
        self.ctl("config", "set", "store.backend", "postgres")
        self.ctl("store", "migrate")

    # What every host of one deployment has the same copy of (DESIGN.md, Store); the store
    # itself is the shared database.
    HOST_FILES = ("config.json", "secrets/challenge.key", "keys", "jwks.json", "test-ca")

    def copy_host_files(self, other):
        """Copies `other`'s HOST_FILES into this data directory (modes kept)."""
        import shutil
        os.makedirs(self.data, exist_ok=True)
        for name in self.HOST_FILES:
            src, dst = os.path.join(other.data, name), os.path.join(self.data, name)
            if os.path.isdir(src):
                shutil.copytree(src, dst, dirs_exist_ok=True)
            elif os.path.exists(src):
                os.makedirs(os.path.dirname(dst), mode=0o700, exist_ok=True)
                shutil.copy2(src, dst)

    def start(self):
        """Starts `attestctl serve` (again, after a stop) and waits until it says it is up."""
        self.log = open(os.path.join(self.dir, "serve.out"), "w")
        self.serve = subprocess.Popen(
            [os.path.join(BIN, "attestctl"), "serve", "--data", self.data, "--listen", f"127.0.0.1:{self.port}",
             "--metrics-listen", f"127.0.0.1:{self.metrics_port}", "--workers", str(self.workers), "--nginx-templates", os.path.join(ROOT, "nginx", "conf"), *self.serve_args],
            stdout=self.log, stderr=subprocess.STDOUT, env={**os.environ, **(self.env or {})})
        deadline = time.time() + 60
        while time.time() < deadline:
            if self.serve.poll() is not None:
                raise RuntimeError("attestctl serve exited:\n" + self.serve_output())
            if "AttestEdge is up" in self.serve_output():
                return
            time.sleep(0.1)
        raise RuntimeError("attestctl serve did not come up:\n" + self.serve_output())

    def serve_output(self):
        with open(os.path.join(self.dir, "serve.out")) as f:
            return f.read()

    def stop(self):
        if self.serve.poll() is None:
            self.serve.send_signal(signal.SIGTERM)
            try:
                self.serve.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.serve.kill()
        return self.serve.returncode

    def processes(self):
        """The pids of `attestctl serve` and everything under it (nginx, pools, workers, the
        delivery worker)."""
        children = {}
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                try:
                    parent = int(open(f"/proc/{entry}/stat").read().rsplit(") ", 1)[1].split()[1])
                except (OSError, IndexError, ValueError):
                    continue
                children.setdefault(parent, []).append(int(entry))
        found, todo = [], [self.serve.pid]
        while todo:
            pid = todo.pop()
            found.append(pid)
            todo += children.get(pid, [])
        return found

    def kill(self):
        """The host dies: `attestctl serve` and every process under it are SIGKILLed, with no
        clean shutdown. First each is stopped (SIGSTOP) and seen stopped, top down, until no
        new process appears: a stopped parent cannot restart or respawn a child (nginx's
        master respawns a worker it sees die); then all are killed, children first. Returns
        how many processes were killed."""
        def state(pid):
            try:
                return open(f"/proc/{pid}/stat").read().rsplit(") ", 1)[1].split()[0]
            except (OSError, IndexError):
                return "gone"

        stopped = []
        while True:
            new = [pid for pid in self.processes() if pid not in stopped]
            if not new:
                break
            for pid in new:
                try:
                    os.kill(pid, signal.SIGSTOP)
                except ProcessLookupError:
                    continue
                stopped.append(pid)
                deadline = time.time() + 5
                while state(pid) not in ("T", "t", "Z", "X", "gone") and time.time() < deadline:
                    time.sleep(0.001)
        # Children before parents: a stopped group whose parent dies first is orphaned, and the
        # kernel sends it SIGHUP and SIGCONT (nginx would reload and start new workers).
        for pid in reversed(stopped):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.serve.wait()
        return len(stopped)

    def remove(self):
        """Deletes the stack's temporary directory and data directory (after `stop`)."""
        import shutil
        if getattr(self, "own_database", None):
            subprocess.run(["psql", os.environ["ATTEST_TEST_POSTGRES_URL"], "-qc", f"DROP DATABASE IF EXISTS {self.own_database}"],
                           capture_output=True)
        shutil.rmtree(self.dir, ignore_errors=True)
        shutil.rmtree(self.data, ignore_errors=True)

    def remove_if_passed(self, tally):
        """After `stop`: deletes the stack's directories (about 270 MB) when every check of
        `tally` passed; keeps them, and says where, when one failed."""
        if tally.failed:
            print(f"kept for inspection: {self.dir} (data {self.data})", flush=True)
        else:
            self.remove()

    def ctl(self, *args, check=True):
        p = subprocess.run([os.path.join(BIN, "attestctl"), *args, "--data", self.data], capture_output=True, text=True)
        if check and p.returncode != 0:
            raise RuntimeError(f"attestctl {' '.join(args)} failed: {p.stdout}{p.stderr}")
        return p

    def ctl_json(self, *args):
        return json.loads(self.ctl(*args, "--json").stdout)

    def device(self, state, *args, team="ABCDE12345", bundle="com.example.app"):
        return subprocess.run(
            [os.path.join(BIN, "attest-device"), "--server", self.base, "--team", team, "--bundle", bundle,
             "--state", state, "--test-ca", os.path.join(self.data, "test-ca", "ca.pem"), *args],
            capture_output=True, text=True)

    def state(self, name):
        return os.path.join(self.dir, name + ".json")

    def http(self, method, path, headers=None, body=None, timeout=30):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        data = body if isinstance(body, (bytes, type(None))) else json.dumps(body).encode()
        h = {"Content-Type": "application/json"}
        h.update(headers or {})
        conn.request(method, path, body=data, headers=h)
        r = conn.getresponse()
        result = Response(r.status, r.getheaders(), r.read())
        conn.close()
        return result

    def access_log_has(self, request_id, status, wait=3.0):
        # nginx writes the access-log line in its log phase, after the response has left, so a
        # fast client can look before the line exists: poll briefly instead of reading once.
        deadline = time.time() + wait
        while True:
            with open(os.path.join(self.data, "log", "access.log")) as f:
                if any(f"request_id={request_id}" in line and f'" {status} ' in line for line in f):
                    return True
            if time.time() >= deadline:
                return False
            time.sleep(0.05)

    def pool_master(self, endpoint):
        out = subprocess.run(["pgrep", "-f", f"attest-{endpoint} --socket"], capture_output=True, text=True).stdout.split()
        pids = [int(p) for p in out]
        parents = {p: int(open(f"/proc/{p}/stat").read().split(") ")[1].split()[1]) for p in pids if os.path.exists(f"/proc/{p}")}
        masters = [p for p in pids if parents.get(p) == self.serve.pid]
        return masters[0] if masters else None

    def deliver_pid(self):
        """The pid of this stack's webhook delivery worker (`attest-webhooks deliver`), or None."""
        out = subprocess.run(["pgrep", "-f", "attest-webhooks deliver"], capture_output=True, text=True).stdout.split()
        for p in out:
            try:
                if int(open(f"/proc/{p}/stat").read().split(") ")[1].split()[1]) == self.serve.pid:
                    return int(p)
            except OSError:
                pass
        return None

    def pool_workers(self, endpoint):
        master = self.pool_master(endpoint)
        if master is None:
            return []
        out = subprocess.run(["pgrep", "-P", str(master)], capture_output=True, text=True).stdout.split()
        return sorted(int(p) for p in out)


def run_suite(tally, title, stack, steps, cleanup=None):
    """Runs each step with `stack`; an exception is reported as a failed check (with its
    traceback) instead of ending the suite; then stops the stack, checks it stopped cleanly,
    runs `cleanup`, deletes the stack's directories when every check passed (they are kept, and
    named, for inspection when one failed) and returns the exit status of the tally's summary."""
    try:
        for step in steps:
            step(stack)
    except Exception as e:  # noqa: BLE001 - report, then fail
        import traceback
        traceback.print_exc()
        tally.check("suite ran to the end", False, repr(e))
    finally:
        rc = stack.stop()
        tally.check("serve stops cleanly", rc == 0, f"exit {rc}")
        if cleanup:
            cleanup()
        stack.remove_if_passed(tally)
    return tally.summary(title)


def within_one_rate_window(seconds_needed=10):
    """Waits until the current fixed one-minute rate window (aligned to Unix time, as the
    server's are) has `seconds_needed` left, so a check that fills a bucket cannot straddle
    two windows."""
    while 60 - time.time() % 60 < seconds_needed:
        time.sleep(0.2)


def app_headers(team="ABCDE12345", bundle="com.example.app"):
    return {"X-Bundle-ID": bundle, "X-Team-ID": team}


def cbor_map_of_bytes(pairs):
    """CBOR for {text: bytes, …}: all a hand-made assertion needs."""
    def head(major, n):
        if n < 24:
            return bytes([major << 5 | n])
        if n < 256:
            return bytes([major << 5 | 24, n])
        return bytes([major << 5 | 25]) + n.to_bytes(2, "big")
    out = head(5, len(pairs))
    for k, v in pairs:
        kb = k.encode()
        out += head(3, len(kb)) + kb + head(2, len(v)) + v
    return out


ISO_SECONDS = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")
