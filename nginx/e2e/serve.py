#!/usr/bin/env python3
"""End-to-end checks of `attestctl serve` through real nginx (issue #7, items 11, 14, 15, 16,
18; issue #37 item 2: links the service user plants in DATA/log; A7: root's environment). Prints PASS/FAIL per check and `serve: N passed, M failed`; exits 1 on a failure."""
import http.server
import os
import pwd
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "lib"))
import raw_http  # noqa: E402
from check import Tally  # noqa: E402
from stack import BIN, Stack, app_headers, free_port  # noqa: E402

T = Tally()
A = app_headers()
SERVICE_USER = "attestedge"
HEX32 = re.compile(r"^[0-9a-f]{32}$")
# What root's shell holds when it starts serve (issue #37 A7): the service user must not read it.
ROOT_SECRET = "root-secret-" + os.urandom(8).hex()
ROOT_ENV = {"PGPASSWORD": ROOT_SECRET, "AWS_SECRET_ACCESS_KEY": ROOT_SECRET}


def setup(stack):
    stack.ctl("org", "add", "acme", "--tier", "pro", "--rate-limit", "0")
    stack.ctl("app", "add", "--org", "acme", "--team", "ABCDE12345", "--bundle", "com.example.app", "--env", "both")
    # nginx's own per-IP challenge limit as shipped, so the load below is mostly 429s (the
    # load that used to write two log lines per request); logs rotate at 1 MiB.
    stack.ctl("config", "set", "rateLimits.challengePerIPPerSecond", "10")
    stack.ctl("config", "set", "rateLimits.challengeBurst", "20")
    stack.ctl("config", "set", "server.logMaxMiB", "1")


# ---- processes -------------------------------------------------------------------------------

def children(pid):
    out = subprocess.run(["ps", "-o", "pid=", "--ppid", str(pid)], capture_output=True, text=True).stdout
    return [int(p) for p in out.split()]


def comm(pid):
    try:
        return open(f"/proc/{pid}/comm").read().strip()
    except OSError:
        return ""


def uid_of(pid):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("Uid:"):
            return int(line.split()[2])  # effective uid
    return -1


def capabilities(pid):
    """The effective capability set of `pid` (CapEff in /proc/PID/status)."""
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("CapEff:"):
            return int(line.split()[1], 16)
    return -1


CAP_NET_BIND_SERVICE = 1 << 10


def nginx_master(s):
    masters = [p for p in children(s.serve.pid) if comm(p) == "nginx"]
    return masters[0] if masters else None


def alive(pid):
    """Running, not a zombie (a container's init may be slow to reap orphans)."""
    try:
        return open(f"/proc/{pid}/stat").read().rsplit(") ", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def port_is_free(port):
    """Nobody listens on it (SO_REUSEADDR: TIME_WAIT leftovers of the load do not count)."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(("127.0.0.1", port))
        sock.listen(1)
        return True
    except OSError:
        return False
    finally:
        sock.close()


def wait_for(condition, seconds):
    deadline = time.time() + seconds
    while time.time() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return condition()


# ---- 15: nginx's own errors ------------------------------------------------------------------

def request(line, *headers, body=b""):
    head = [line, "Host: localhost", *headers, "Connection: close"]
    return ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + body


MALFORMED = [
    # name, raw request, status, code
    ("lowercase method", request("get /api/v1/attestation/challenge HTTP/1.1"), 400, "bad_request"),
    ("%00 in the path", request("GET /api/%00 HTTP/1.1"), 400, "bad_request"),
    ("/../ above the root", request("GET /../etc/passwd HTTP/1.1"), 400, "bad_request"),
    ("a query over the URI buffer", request("GET /api/v1/attestation/challenge?" + "a" * 9000 + " HTTP/1.1"), 414, "bad_request"),
    ("a header over the header buffer", request("GET / HTTP/1.1", "X-Big: " + "b" * 9000), 400, "bad_request"),
    ("HTTP/2.0 on a plain connection", request("GET /api/v1/attestation/challenge HTTP/2.0"), 505, "not_implemented"),
    ("Transfer-Encoding: identity", request("POST /api/v1/attestation/validate HTTP/1.1", "Transfer-Encoding: identity"), 501, "not_implemented"),
    ("a request line that is not HTTP", b"GARBAGE\r\n\r\n", 400, "bad_request"),
    ("HTTP/1.1 without Host", b"GET / HTTP/1.1\r\nConnection: close\r\n\r\n", 400, "bad_request"),
    ("two Host headers", request("GET / HTTP/1.1", "Host: other"), 400, "bad_request"),
    ("a Host with a slash", b"GET / HTTP/1.1\r\nHost: a/b\r\nConnection: close\r\n\r\n", 400, "bad_request"),
    ("a Content-Length that is not a number", request("POST /api/v1/attestation/validate HTTP/1.1", "Content-Length: abc"), 400, "bad_request"),
    ("a broken chunk", request("POST /api/v1/attestation/validate HTTP/1.1", "Transfer-Encoding: chunked", body=b"zz\r\n"), 400, "bad_request"),
    ("TRACE", request("TRACE / HTTP/1.1"), 405, "method_not_allowed"),
    ("POST to the JWKS file", request("POST /.well-known/jwks.json HTTP/1.1", "Content-Length: 0"), 405, "method_not_allowed"),
    ("a range past the JWKS file", request("GET /.well-known/jwks.json HTTP/1.1", "Range: bytes=999999-"), 416, "bad_request"),
    ("a body over 64 KiB", request("POST /api/v1/attestation/validate HTTP/1.1", "Content-Length: 70000"), 413, "payload_too_large"),
    ("an unknown path", request("GET /nope HTTP/1.1"), 404, "not_found"),
    ("an internal error location asked for directly", request("GET /.attestedge/error/500 HTTP/1.1"), 404, "not_found"),
]


def malformed_requests(s):
    for name, data, status, code in MALFORMED:
        r = raw_http.request(s.port, data, timeout=5)
        j = r.json if isinstance(r.json, dict) else {}
        ok = (r.status == status and (r.header("content-type") or "").startswith("application/json")
              and j.get("code") == code and isinstance(j.get("error"), str) and j.get("reason") == j.get("error")
              and bool(HEX32.match(str(j.get("requestId")))) and set(j) <= {"error", "code", "hint", "requestId", "reason"})
        T.check(f"{name}: {status} JSON {code}", ok, repr(r))


# ---- 11: privileges --------------------------------------------------------------------------

def privileges(s):
    if os.geteuid() != 0:
        print("NOTE: not root: the privilege checks need root and are not counted")
        return
    try:
        user = pwd.getpwnam(SERVICE_USER)
    except KeyError:
        T.check(f"serve created the system user {SERVICE_USER}", False)
        return
    master = nginx_master(s)
    workers = children(master) if master else []
    T.check(f"nginx's master runs as {SERVICE_USER}, with no capability (its port is above 1023)",
            master is not None and uid_of(master) == user.pw_uid and capabilities(master) == 0,
            str(master and (uid_of(master), hex(capabilities(master)))))
    T.check(f"nginx's workers run as {SERVICE_USER}", bool(workers) and all(uid_of(p) == user.pw_uid for p in workers),
            str([(p, uid_of(p)) for p in workers]))
    pools = [p for p in children(s.serve.pid) if comm(p).startswith("attest-")]  # nine pools, the deliver worker, attest-receipts
    pool_processes = pools + [w for p in pools for w in children(p)]
    T.check(f"every pool master and worker runs as {SERVICE_USER}", len(pools) == 11 and len(pool_processes) >= 28
            and all(uid_of(p) == user.pw_uid for p in pool_processes), str([(p, comm(p), uid_of(p)) for p in pool_processes]))
    ps = subprocess.run(["ps", "-o", "user:32=,args=", "-p", ",".join(map(str, workers + pool_processes))], capture_output=True, text=True).stdout
    T.check("ps shows them as the service user", ps and all(line.split()[0] == SERVICE_USER for line in ps.splitlines()), ps)

    # The stack's directory is mkdtemp's 0700 (like a checkout under /root): serve lets the
    # service user through with an ACL entry for it alone, and says so.
    T.check("a 0700 directory above the data gets a search ACL entry for the service user only, said loudly",
            "POSIX ACL u:attestedge:x" in s.serve_output() and os.stat(s.dir).st_mode & 0o007 == 0
            and os.getxattr(s.dir, "system.posix_acl_access"), s.serve_output()[:600])
    state = s.state("device")
    enroll = s.device(state, "enroll")
    T.check("a device enrolls through nginx with the unprivileged pools", enroll.returncode == 0, enroll.stdout + enroll.stderr)
    refresh = s.device(state, "refresh")
    T.check("and refreshes", refresh.returncode == 0, refresh.stdout + refresh.stderr)
    s.ctl("keys", "rotate")  # attestctl as root: writes as the data directory's owner
    keys = [os.path.join(s.data, "keys", f) for f in os.listdir(os.path.join(s.data, "keys")) if not f.endswith(".json")]
    T.check("signing keys stay 0600 and belong to the service user",
            bool(keys) and all(os.stat(k).st_mode & 0o777 == 0o600 and os.stat(k).st_uid == user.pw_uid for k in keys),
            str([(k, oct(os.stat(k).st_mode), os.stat(k).st_uid) for k in keys]))
    time.sleep(1.2)  # workers pick a new key up within a second
    again = s.device(state, "refresh")
    T.check("a refresh after 'attestctl keys rotate' (run as root) still works", again.returncode == 0, again.stdout + again.stderr)


# ---- issue 37 A7: root's environment ---------------------------------------------------------

def environ_of(pid):
    try:
        return open(f"/proc/{pid}/environ", "rb").read().split(b"\0")
    except OSError:
        return []


def memory_holds(pid, needle):
    """Whether `needle` is in the process's stack, heap or anonymous writable memory (read
    through /proc/PID/mem, as root). nginx moves its environment to the heap and writes its
    process title over the original (ngx_setproctitle), so /proc/PID/environ alone would not
    show what it was given; its heap copy stays readable to its user (ptrace, a core dump)."""
    try:
        maps = open(f"/proc/{pid}/maps").read().splitlines()
        with open(f"/proc/{pid}/mem", "rb", buffering=0) as mem:
            for line in maps:
                fields = line.split()
                if not fields[1].startswith("rw") or (len(fields) > 5 and fields[5] not in ("[heap]", "[stack]")):
                    continue
                start, end = (int(x, 16) for x in fields[0].split("-"))
                if end - start > 64 << 20:
                    continue
                try:
                    mem.seek(start)
                    if needle in mem.read(end - start):
                        return True
                except OSError:
                    continue
    except OSError:
        return False
    return False


def roots_environment(s):
    """serve starts as root with secrets in its environment (ROOT_ENV): no process running as
    the service user (nginx's master and workers, every pool master and worker, the deliverer)
    has them in /proc/PID/environ, which that user can read, or anywhere in its memory."""
    if os.geteuid() != 0:
        print("NOTE: not root: the environment checks need root and are not counted")
        return
    user = pwd.getpwnam(SERVICE_USER)
    T.check("serve itself was started with root's secrets (else the checks below prove nothing)",
            f"PGPASSWORD={ROOT_SECRET}".encode() in environ_of(s.serve.pid))
    master = nginx_master(s)
    pools = [p for p in children(s.serve.pid) if comm(p).startswith("attest-")]
    processes = ([master] + children(master) if master else []) + pools + [w for p in pools for w in children(p)]
    leaks = [(p, comm(p)) for p in processes
             if any(ROOT_SECRET.encode() in v for v in environ_of(p)) or memory_holds(p, ROOT_SECRET.encode())]
    T.check("no process of the service user has root's secrets in /proc/PID/environ or its memory",
            len(processes) >= 17 and all(uid_of(p) == user.pw_uid for p in processes) and not leaks,
            f"{len(processes)} processes, leaked to {leaks}")
    T.check("(the memory search finds the secret where it is: in serve's)", memory_holds(s.serve.pid, ROOT_SECRET.encode()))
    home = f"HOME={user.pw_dir}".encode()
    ours = [p for p in processes if comm(p) != "nginx"]
    T.check("the pools and the deliverer keep PATH and get the service user's HOME, not root's",
            all(home in environ_of(p) and any(v.startswith(b"PATH=") for v in environ_of(p)) for p in ours),
            str([(p, comm(p), [v for v in environ_of(p) if v.startswith(b"HOME=")]) for p in ours]))


class FakePostgres:
    """A PostgreSQL server on loopback that asks every client for a cleartext password and
    records what it is sent: where root's PGPASSWORD would go if libpq used it."""

    def __init__(self):
        self.server = socket.socket()
        self.server.bind(("127.0.0.1", 0))
        self.server.listen(8)
        self.port = self.server.getsockname()[1]
        self.connections, self.passwords = 0, []
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self):
        while True:
            try:
                conn, _ = self.server.accept()
            except OSError:
                return
            with conn:
                try:
                    self.answer(conn)
                except (OSError, struct.error):
                    pass

    @staticmethod
    def read(conn, n):
        data = b""
        while len(data) < n:
            chunk = conn.recv(n - len(data))
            if not chunk:
                raise OSError("closed")
            data += chunk
        return data

    def answer(self, conn):
        while True:  # SSLRequest / GSSENCRequest: refused, then the startup message comes
            length, code = struct.unpack("!ii", self.read(conn, 8))
            body = self.read(conn, length - 8)
            if code not in (80877103, 80877104):
                break
            conn.sendall(b"N")
        self.connections += 1
        conn.sendall(b"R" + struct.pack("!ii", 8, 3))  # AuthenticationCleartextPassword
        kind = self.read(conn, 1)
        if kind == b"p":
            length = struct.unpack("!i", self.read(conn, 4))[0]
            self.passwords.append(self.read(conn, length - 4).rstrip(b"\0").decode(errors="replace"))
        error = b"SFATAL\0C28P01\0Mpassword authentication failed\0\0"
        conn.sendall(b"E" + struct.pack("!i", len(error) + 4) + error)

    def close(self):
        self.server.close()


def hostile_postgres_url(s):
    """`attestctl doctor` and `backup` run as root on a data directory the service user owns;
    config.json is that user's, so it names the store's server: a host name root may have saved
    a password for, at an address of its choice (`host=db1 hostaddr=127.0.0.1 port=…`). Root's
    PGPASSWORD must not be what libpq answers that server's password request with."""
    if os.geteuid() != 0:
        print("NOTE: not root: the PostgreSQL URL checks need root and are not counted")
        return
    fake = FakePostgres()
    work = tempfile.mkdtemp(prefix="attestedge-pg-")
    data = os.path.join(work, "data")
    attestctl = os.path.join(BIN, "attestctl")
    try:
        subprocess.run([attestctl, "init", "--data", data], check=True, capture_output=True)
        url = f"host=db1 hostaddr=127.0.0.1 port={fake.port} dbname=attest user=attest sslmode=disable connect_timeout=5"
        # What the service user writes into its config.json (written here, then handed to it).
        subprocess.run([attestctl, "config", "set", "store.postgres.url", f'"{url}"', "--data", data], check=True, capture_output=True)
        subprocess.run([attestctl, "config", "set", "store.backend", "postgres", "--data", data], check=True, capture_output=True)
        subprocess.run(["chown", "-R", f"{SERVICE_USER}:", data], check=True)
        os.chmod(work, 0o755)
        env = {**os.environ, **ROOT_ENV, "PGUSER": "root-user"}
        doctor = subprocess.run([attestctl, "doctor", "--data", data], capture_output=True, text=True, env=env)
        backup = subprocess.run([attestctl, "backup", "--data", data, "--to", os.path.join(work, "b.aebk")], capture_output=True, text=True, env=env)
        T.check("doctor and backup as root reached the server config.json names (else this proves nothing)",
                fake.connections >= 2, f"{fake.connections} connections\n{doctor.stdout}{doctor.stderr}{backup.stderr}")
        T.check("root's PGPASSWORD was not sent to it", ROOT_SECRET not in fake.passwords, str(fake.passwords))
        T.check("doctor says it cannot reach the store, backup fails", doctor.returncode != 0 and backup.returncode != 0,
                doctor.stdout[-600:] + backup.stderr[-300:])
    finally:
        fake.close()
        shutil.rmtree(work, ignore_errors=True)


# ---- 16: a pool crashing at run time ---------------------------------------------------------

def crashing_pool(s):
    for attempt in range(3):
        master = s.pool_master("validate")
        if master is None and not wait_for(lambda: s.pool_master("validate") is not None, 10):
            break
        master = s.pool_master("validate")
        os.kill(master, signal.SIGKILL)
        wait_for(lambda: s.pool_master("validate") not in (None, master), 10)
    T.check("serve survives a pool master killed three times in a row", s.serve.poll() is None, s.serve_output()[-1500:])
    codes = [s.http("GET", "/.well-known/jwks.json").status for _ in range(5)]
    T.check("the other endpoints keep serving meanwhile", codes == [200] * 5, str(codes))
    back = wait_for(lambda: s.http("POST", "/api/v1/attestation/validate", A, b"{}").status == 400, 40)
    T.check("the crashed pool is restarted and answers again", back, repr(s.http("POST", "/api/v1/attestation/validate", A, b"{}")))
    T.check("serve says so loudly", "restarting" in s.serve_output() and "attest-validate" in s.serve_output(), s.serve_output()[-800:])


# ---- 18: logs --------------------------------------------------------------------------------

def bounded_logs(s):
    log = os.path.join(s.data, "log")
    url = f"{s.base}/api/v1/attestation/challenge"
    out = subprocess.run(["wrk", "-t1", "-c4", "-d3s", "-H", "X-Bundle-ID: com.example.app", "-H", "X-Team-ID: ABCDE12345", url],
                         capture_output=True, text=True).stdout
    m = re.search(r"(\d+) requests in", out)
    requests = int(m.group(1)) if m else 0
    time.sleep(1.5)  # serve looks at the logs twice a second
    sizes = {f: os.path.getsize(os.path.join(log, f)) for f in os.listdir(log)}
    mib = 1 << 20
    print(f"NOTE: {requests} requests under the challenge limit; log directory: {sizes}")
    T.check("the load was mostly 429s from nginx's limit", requests > 20000, out)
    T.check("access.log was rotated and is back under server.logMaxMiB", "access.log.1" in sizes and sizes["access.log"] <= mib, str(sizes))
    T.check("one previous generation is kept, no more", not any(f.endswith(".2") for f in sizes), str(sizes))
    T.check("a rate-limited request writes its access line only (no error.log line)", sizes.get("error.log", 0) < 64 * 1024, str(sizes))
    total = sum(sizes.values())
    T.check("the whole log directory stays bounded", total < 40 * mib, f"{total} bytes")


# ---- issue 37 item 2: links the service user plants in DATA/log -----------------------------

def as_service_user(*argv):
    """Runs a command as the service user: what an attacker with its shell can do."""
    return subprocess.run(["runuser", "-u", SERVICE_USER, "--", *argv], capture_output=True, text=True)


def hostile_log_links(s):
    """serve runs as root and rotates/opens logs in DATA/log, which the service user owns. It
    plants `NAME.log.1 -> root's file` next to a log over server.logMaxMiB, and a pool's log as
    a link before that pool is restarted: root's file must stay untouched, rotation must go on,
    the refused restart must say why, and the pool must come back once the link is gone."""
    if os.geteuid() != 0:
        print("NOTE: not root: the hostile-link checks need root and are not counted")
        return
    log = os.path.join(s.data, "log")
    victims = tempfile.mkdtemp(prefix="attestedge-victim-")  # root's own directory, 0700
    victim = os.path.join(victims, "passwd")
    content = "root:x:0:0:root's file, must stay as it is:/root:/bin/bash\n" * 40
    with open(victim, "w") as f:
        f.write(content)
    untouched = lambda: open(victim, "rb").read() == content.encode() and os.stat(victim).st_uid == 0 and os.stat(victim).st_size == len(content)
    try:
        pool_log = os.path.join(log, "attest-validate.log")
        planted = as_service_user("ln", "-sfn", victim, pool_log + ".1")
        T.check("the service user plants attest-validate.log.1 -> root's file", planted.returncode == 0 and os.path.islink(pool_log + ".1"),
                planted.stderr)
        # serve created the pool's log (root's, 0644); the user owns the directory, so it swaps the
        # log for a file of its own, past server.logMaxMiB: the content rotation copies.
        # Written beside it and renamed into place: a rotation that caught the file half written
        # truncated it under the writer, which went on at its offset (a hole, copied as zeros).
        grown = as_service_user("sh", "-c", f"head -c 1200000 /dev/zero | tr '\\0' A > {pool_log}.new && mv -f {pool_log}.new {pool_log}")
        T.check("and swaps attest-validate.log for its own file past server.logMaxMiB (1 MiB)", grown.returncode == 0, grown.stderr)
        rotated = wait_for(lambda: not os.path.islink(pool_log + ".1") and os.path.getsize(pool_log) < (1 << 20), 5)
        T.check("root's file is untouched by the rotation", untouched(), repr(open(victim, "rb").read()[:200]))
        T.check("rotation still works: attest-validate.log.1 is a regular file holding the log's newest MiB, the log is truncated",
                rotated and os.path.isfile(pool_log + ".1") and not os.path.islink(pool_log + ".1")
                and open(pool_log + ".1", "rb").read() == b"A" * (1 << 20), str({f: os.path.getsize(os.path.join(log, f)) for f in os.listdir(log)}))
        said = "attest-validate.log.1 was not a regular file (a symbolic link?): replaced, not followed"
        T.check("serve says so on its output, once", s.serve_output().count(said) == 1, s.serve_output()[-800:])

        # A sparse 500 GiB log of its own: root's copy used to write it all as real blocks.
        huge = os.path.join(log, "x.log")
        planted = as_service_user("sh", "-c", f"truncate -s 500G {huge} && echo the-last-line >> {huge}")
        T.check("the service user plants a sparse 500 GiB x.log", planted.returncode == 0, planted.stderr)
        rotated = wait_for(lambda: os.path.getsize(huge) == 0 and os.path.isfile(huge + ".1"), 5)
        st = os.stat(huge + ".1") if os.path.exists(huge + ".1") else None
        T.check("root copies only its newest server.logMaxMiB (1 MiB) to x.log.1 and truncates it",
                rotated and st is not None and st.st_size <= 1 << 20 and st.st_blocks * 512 <= 1 << 20
                and open(huge + ".1", "rb").read().endswith(b"the-last-line\n"), repr(st))
        T.check("serve kept running through it", s.serve.poll() is None, s.serve_output()[-800:])

        mad_log = os.path.join(log, "attest-mad.log")
        planted = as_service_user("sh", "-c", f"rm -f {mad_log} && ln -s {victim} {mad_log}")
        T.check("the service user replaces attest-mad.log with a link to root's file", planted.returncode == 0 and os.path.islink(mad_log),
                planted.stderr)
        master = s.pool_master("mad")
        os.kill(master, signal.SIGKILL)
        refused = wait_for(lambda: "cannot restart attest-mad" in s.serve_output() and "attest-mad.log: a symbolic link, not followed" in s.serve_output(), 15)
        T.check("its restart is refused with a clear line (the log is a link, not followed)", refused, s.serve_output()[-800:])
        T.check("and root's file got no line from the restarted pool", untouched(), repr(open(victim, "rb").read()[-300:]))
        as_service_user("rm", "-f", mad_log)
        back = wait_for(lambda: s.pool_master("mad") not in (None, master), 40)
        T.check("once the link is gone the pool restarts with a fresh log", back and os.path.isfile(mad_log) and not os.path.islink(mad_log),
                s.serve_output()[-800:])
        T.check("serve kept running throughout", s.serve.poll() is None, s.serve_output()[-800:])
    finally:
        shutil.rmtree(victims, ignore_errors=True)


def hostile_backup(s):
    """Issue #37 item 2: `attestctl backup` runs as root on the service user's directory. A key
    planted as a link to root's file is left out (and named), and a link planted as the
    store's lock.mdb (LMDB opens it for writing) cannot make root write root's file."""
    if os.geteuid() != 0:
        print("NOTE: not root: the hostile-backup checks need root and are not counted")
        return
    victims = tempfile.mkdtemp(prefix="attestedge-victim-")
    victim = os.path.join(victims, "shadow")
    content = "root:$6$secret-hash-of-root:19000:0:99999:7:::\n" * 20
    with open(victim, "w") as f:
        f.write(content)
    os.chmod(victim, 0o600)
    untouched = lambda: open(victim, "rb").read() == content.encode() and os.stat(victim).st_size == len(content)
    stolen = os.path.join(s.data, "keys", "stolen.pem")
    lock = os.path.join(s.data, "store", "durable", "lock.mdb")
    try:
        planted = as_service_user("ln", "-s", victim, stolen)
        T.check("the service user plants keys/stolen.pem -> root's file", planted.returncode == 0, planted.stderr)
        out = os.path.join(victims, "backup.aebk")
        backup = s.ctl("backup", "--to", out, check=False)
        T.check("backup as root still succeeds and names what it left out",
                backup.returncode == 0 and "left out keys/stolen.pem" in backup.stderr and "symbolic link" in backup.stderr,
                backup.stdout + backup.stderr)
        T.check("root's file is not in the backup", os.path.exists(out) and b"secret-hash-of-root" not in open(out, "rb").read())
        as_service_user("rm", "-f", stolen)

        moved = as_service_user("sh", "-c", f"mv {lock} {lock}.real && ln -s {victim} {lock}")
        T.check("the service user swaps store/durable/lock.mdb for a link to root's file", moved.returncode == 0, moved.stderr)
        backup = s.ctl("backup", "--to", os.path.join(victims, "second.aebk"), check=False)
        T.check("root's file is untouched by backup opening the store (LMDB opens lock.mdb for writing)", untouched(),
                repr(open(victim, "rb").read()[:120]))
        T.check("backup refuses cleanly: exit 1 with the store's error", backup.returncode == 1 and "store" in backup.stderr,
                backup.stdout + backup.stderr)
    finally:
        as_service_user("sh", "-c", f"[ -e {lock}.real ] && mv -f {lock}.real {lock}; rm -f {stolen}")
        shutil.rmtree(victims, ignore_errors=True)


# ---- 14: nginx killed with -9 ----------------------------------------------------------------

def hostile_nginx_paths(s):
    """serve runs as root; nginx opens its pid file, temporary directories and logs by path in
    DATA, the service user's. With nginx entirely the service user's (master included), a link
    planted there reaches nothing that user could not reach: before, root's master chowned a
    linked temporary directory (DATA/run/nginx-client-body -> /etc gave /etc to the user)."""
    if os.geteuid() != 0:
        print("NOTE: not root: the hostile nginx path checks need root and are not counted")
        return
    victim = tempfile.mkdtemp(prefix="attestedge-victim-dir-")  # root's, 0700
    before = os.stat(victim)
    try:
        s.stop()
        body = os.path.join(s.data, "run", "nginx-client-body")
        planted = as_service_user("sh", "-c", f"rm -rf {body} && ln -s {victim} {body}")
        T.check("the service user plants run/nginx-client-body -> root's directory", planted.returncode == 0 and os.path.islink(body),
                planted.stderr)
        s.start()
        after = os.stat(victim)
        T.check("root's directory keeps its owner and mode after serve started nginx",
                (after.st_uid, after.st_gid, after.st_mode) == (before.st_uid, before.st_gid, before.st_mode),
                f"{before} -> {after}")
        T.check("and nginx serves", s.http("GET", "/api/v1/attestation/challenge", A).status == 200)
        os.unlink(body)
    finally:
        shutil.rmtree(victim, ignore_errors=True)


def linked_nginx_directory(s):
    """serve renders nginx's files into DATA/nginx; the service user replaces that directory with
    a link to one of root's (/etc/nginx, /etc/sudoers.d): root must write nothing there."""
    if os.geteuid() != 0:
        print("NOTE: not root: the linked nginx directory check needs root and is not counted")
        return
    victim = tempfile.mkdtemp(prefix="attestedge-victim-dir-")  # root's, 0700
    os.chmod(victim, 0o755)  # reachable, but only root may write in it
    nginx_dir = os.path.join(s.data, "nginx")
    try:
        s.stop()
        planted = as_service_user("sh", "-c", f"mv {nginx_dir} {nginx_dir}.away && ln -s {victim} {nginx_dir}")
        T.check("the service user replaces DATA/nginx with a link to root's directory", planted.returncode == 0
                and os.path.islink(nginx_dir), planted.stderr)
        try:
            s.start()
            s.stop()
        except RuntimeError:
            pass  # the service user's nginx files cannot be written there: serve stops, saying why
        T.check("serve (root) wrote nothing into root's directory", os.listdir(victim) == [], str(os.listdir(victim)))
    finally:
        if os.path.islink(nginx_dir):
            os.unlink(nginx_dir)
            os.rename(nginx_dir + ".away", nginx_dir)
        shutil.rmtree(victim, ignore_errors=True)
        if s.serve.poll() is not None:
            s.start()


def reinitialised(s):
    """The service user deletes secrets/challenge.key (so serve, root, initialises DATA again)
    and plants store/ephemeral.boot as a link to root's file: the store's files were opened
    through it as root and the target handed to the service user. Now initialising runs as
    DATA's owner and the store opens that file without following a link."""
    if os.geteuid() != 0:
        print("NOTE: not root: the re-initialisation check needs root and is not counted")
        return
    victims = tempfile.mkdtemp(prefix="attestedge-victim-")
    os.chmod(victims, 0o755)
    victim = os.path.join(victims, "passwd")
    with open(victim, "w") as f:
        f.write("root's own\n")
    os.chmod(victim, 0o600)
    boot = os.path.join(s.data, "store", "ephemeral.boot")
    try:
        s.stop()
        planted = as_service_user("sh", "-c", f"rm -f {s.data}/secrets/challenge.key {boot} && ln -s {victim} {boot}")
        T.check("the service user deletes the challenge key and plants store/ephemeral.boot -> root's file",
                planted.returncode == 0 and os.path.islink(boot), planted.stderr)
        try:
            s.start()
        except RuntimeError:
            pass
        st = os.stat(victim)
        T.check("root's file keeps its owner and content", st.st_uid == 0 and open(victim).read() == "root's own\n",
                f"uid {st.st_uid}: {open(victim).read()!r}")
        key = os.path.join(s.data, "secrets", "challenge.key")
        T.check("the data directory was initialised again, by its owner",
                os.path.exists(key) and os.stat(key).st_uid == pwd.getpwnam(SERVICE_USER).pw_uid)
    finally:
        if s.serve.poll() is None:
            s.stop()
        if os.path.islink(boot):
            os.unlink(boot)
        shutil.rmtree(victims, ignore_errors=True)
        s.start()


def low_port(s):
    """A port below 1024: nginx, the service user's, keeps CAP_NET_BIND_SERVICE and nothing else."""
    if os.geteuid() != 0:
        print("NOTE: not root: the low-port check needs root and is not counted")
        return
    port = next((p for p in range(1023, 900, -1) if port_is_free(p)), None)
    if port is None:
        T.check("a free port below 1024 was found", False)
        return
    s.stop()
    high = s.port
    s.port, s.base = port, f"http://127.0.0.1:{port}"
    try:
        s.start()
        master = nginx_master(s)
        user = pwd.getpwnam(SERVICE_USER)
        T.check(f"on port {port} nginx's master runs as {SERVICE_USER} with CAP_NET_BIND_SERVICE alone",
                master is not None and uid_of(master) == user.pw_uid and capabilities(master) == CAP_NET_BIND_SERVICE,
                str(master and (uid_of(master), hex(capabilities(master)))))
        T.check("and serves there", s.http("GET", "/api/v1/attestation/challenge", A).status == 200)
        s.stop()
    finally:
        s.port, s.base = high, f"http://127.0.0.1:{high}"
    s.start()


def chosen_user(s):
    """server.user comes from config.json, which the service user can write: naming root (or any
    other account) there must not make root's serve run as it."""
    if os.geteuid() != 0:
        print("NOTE: not root: the server.user checks need root and are not counted")
        return
    s.stop()
    config = os.path.join(s.data, "config.json")
    written = as_service_user("python3", "-c", f"""
import json
c = json.load(open({config!r}))
c.setdefault("server", {{}})["user"] = "root"
json.dump(c, open({config!r}, "w"))
""")
    T.check("the service user writes server.user root into config.json", written.returncode == 0, written.stderr)
    try:
        s.start()
        started = True
    except RuntimeError:
        started = False
    T.check("serve as root refuses it, naming the way for root to choose (--user)",
            not started and "--user root" in s.serve_output() and "cannot choose another account" in s.serve_output(),
            s.serve_output()[-800:])
    if started:
        s.stop()
    s.ctl("config", "set", "server.user", '"attestedge"')
    s.start()
    T.check("with server.user back to the owner, serve starts", s.serve.poll() is None)


def nginx_killed(s):
    master = nginx_master(s)
    workers = children(master)
    os.kill(master, signal.SIGKILL)
    exited = wait_for(lambda: s.serve.poll() is not None, 20)
    T.check("serve notices nginx's death and stops", exited and s.serve.returncode != 0, s.serve_output()[-800:])
    left = [p for p in workers if alive(p) and comm(p) == "nginx"]
    T.check("no orphaned nginx worker is left", bool(workers) and not left, f"workers {workers}, left {left}")
    T.check("nothing holds the port", wait_for(lambda: port_is_free(s.port), 5))
    try:
        s.start()
        started = True
    except RuntimeError as e:
        started = False
        print(e)
    T.check("a new serve starts cleanly on the same port", started)
    time.sleep(3)  # nginx gives up binding after about 2.5 s: it must still be there
    r = s.http("GET", "/api/v1/attestation/challenge", A)
    T.check("and keeps serving", started and s.serve.poll() is None and r.status in (200, 429), repr(r) + s.serve_output()[-800:])


def hangup(s):
    """A closed terminal or ssh session: SIGHUP to serve and to everything in its process group
    (nginx leads its own). Everything stops, as on SIGTERM; before, serve died at once and left
    nginx and the pools running unsupervised, and the next serve could not bind the port."""
    group = os.getpgid(s.serve.pid)
    for pid in s.processes():
        try:
            if os.getpgid(pid) == group:
                os.kill(pid, signal.SIGHUP)
        except ProcessLookupError:
            pass
    exited = wait_for(lambda: s.serve.poll() is not None, 30)
    T.check("serve stops everything on SIGHUP (exit 0)", exited and s.serve.returncode == 0, s.serve_output()[-800:])
    running = lambda: subprocess.run(["pgrep", "-f", s.data], capture_output=True, text=True).stdout.split()
    T.check("nothing is left running after the hangup", wait_for(lambda: not running(), 15), str(running()))
    T.check("and the port is free again", wait_for(lambda: port_is_free(s.port), 5))
    s.start()


class Impostor(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(b'{"challenge":"x"}')

    def log_message(self, *args):
        pass


def impostor_on_port(s):
    """Something else answering 200 on the port must not pass serve's readiness probe."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", s.port), Impostor)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        try:
            s.start()
            came_up = True
        except RuntimeError:
            came_up = False
        T.check("serve does not report up when another server answers on its port", not came_up, s.serve_output()[-800:])
        T.check("and says nginx could not bind", "Address already in use" in s.serve_output(), s.serve_output()[-800:])
    finally:
        if s.serve.poll() is None:
            s.stop()
        server.shutdown()
        server.server_close()


# Edits config.json in place, as its owner (the service user) may: sets key.path to a value.
EDIT_CONFIG = ("import json, sys; c = json.load(open(sys.argv[1])); c[sys.argv[2]][sys.argv[3]] = sys.argv[4]; "
               "open(sys.argv[1], 'w').write(json.dumps(c))")


def hostile_listen(s):
    """Issue 37, item 1: the service user puts nginx syntax into server.listen (the issue's
    payload: it ends in a valid port, and would make root's nginx write an access line of the
    attacker's choice into any file). `config set` refuses it; written by hand, serve (root)
    refuses to start, naming the key, and renders nothing from it."""
    victims = tempfile.mkdtemp(prefix="attestedge-victim-")  # root's own, 0700
    written = os.path.join(victims, "written")
    payload = (f"127.0.0.1:{s.port}; }} log_format p escape=none '$http_x'; server {{ listen 127.0.0.1:{free_port()}; "
               f"access_log {written} p; }} server {{ listen 127.0.0.1:{free_port()}")
    config = os.path.join(s.data, "config.json")
    saved = open(config).read()
    as_service = ["runuser", "-u", SERVICE_USER, "--"]
    ctl = [os.path.join(BIN, "attestctl")]
    try:
        r = subprocess.run(as_service + ctl + ["config", "set", "server.listen", payload, "--data", s.data], capture_output=True, text=True)
        T.check("config set (as the service user) refuses nginx syntax in server.listen, naming the key",
                r.returncode != 0 and "server.listen" in r.stdout + r.stderr and open(config).read() == saved, r.stdout + r.stderr)
        r = subprocess.run(as_service + ctl + ["config", "set", "server.user", "attestedge; user root", "--data", s.data],
                           capture_output=True, text=True)
        T.check("and in server.user", r.returncode != 0 and "server.user" in r.stdout + r.stderr and open(config).read() == saved, r.stdout + r.stderr)
        subprocess.run(as_service + ["python3", "-c", EDIT_CONFIG, config, "server", "listen", payload], check=True, cwd="/")
        T.check("(the payload is in config.json, written by the service user)", written in open(config).read())
        nginx_dir = nginx_directory(s)
        rendered = {f: open(os.path.join(nginx_dir, f)).read() for f in ("nginx.conf", "site.conf")}
        try:
            s.start()
            came_up = True
        except RuntimeError:
            came_up = False
        out = s.serve_output()
        T.check("serve (root) refuses to start on it, naming server.listen", not came_up and "server.listen" in out, out[-800:])
        T.check("and renders nothing from it", all(open(os.path.join(nginx_dir, f)).read() == text for f, text in rendered.items()))
        T.check("no nginx wrote where the payload pointed", not os.path.exists(written))
    finally:
        if s.serve.poll() is None:
            s.stop()
        with open(config, "w") as f:  # as root: the file keeps its owner
            f.write(saved)
        subprocess.run(["rm", "-rf", victims])


def nginx_directory(s):
    """Where serve renders nginx's files (DATA/nginx)."""
    return os.path.join(s.data, "nginx")


def planted_links(s):
    """Issue 37: nginx's master creates (and, as root, chowns) its temporary directories and
    writes its pid file, following links, and `nginx -t` does the same. With them under
    DATA/run, a link the service user put there handed any directory of root's to it when the
    master ran as root. Planted as the service user: serve (nginx now the service user's) and
    doctor (root) must leave root's files as they were. nginx, unprivileged, cannot open the
    linked pid file, so serve may refuse to start: what matters is root's files."""
    victims = tempfile.mkdtemp(prefix="attestedge-victim-")  # root's own, 0700
    os.makedirs(os.path.join(victims, "dir"))
    os.makedirs(os.path.join(victims, "doctor-dir"))
    with open(os.path.join(victims, "file"), "w") as f:
        f.write("root's own\n")
    def owners():
        return {n: (os.lstat(os.path.join(victims, n)).st_uid, os.lstat(os.path.join(victims, n)).st_mode)
                for n in ("dir", "doctor-dir", "file")}
    before = owners()
    run = os.path.join(s.data, "run")
    as_service = ["runuser", "-u", SERVICE_USER, "--"]
    planted = []
    try:
        for name in ("nginx-client-body", "nginx-fastcgi", "nginx-proxy", "nginx-uwsgi", "nginx-scgi"):
            subprocess.run(["rm", "-rf", os.path.join(run, name)], check=True)
            planted.append(os.path.join(run, name))
            subprocess.run(as_service + ["ln", "-s", os.path.join(victims, "dir"), planted[-1]], check=True)
        planted.append(os.path.join(run, "nginx.pid"))
        subprocess.run(["rm", "-f", planted[-1]], check=True)
        subprocess.run(as_service + ["ln", "-s", os.path.join(victims, "file"), planted[-1]], check=True)
        # An nginx.conf of the service user's where serve used to render it, for doctor.
        hostile_conf = os.path.join(s.data, "nginx", "nginx.conf")
        subprocess.run(as_service + ["python3", "-c", "import os, sys; open(sys.argv[1] + '.new', 'w').write(sys.argv[2]); os.replace(sys.argv[1] + '.new', sys.argv[1])",
                                     hostile_conf,
                                     f"events {{}}\nhttp {{ client_body_temp_path {victims}/doctor-dir; }}\n"], check=True, cwd="/")
        try:
            s.start()
            s.stop()
        except RuntimeError:
            pass  # nginx (the service user) cannot write its pid into root's file: it stops
        subprocess.run([os.path.join(BIN, "attestctl"), "doctor", "--data", s.data], capture_output=True, text=True)
        T.check("root's nginx (serve) and nginx -t (doctor) hand nothing of root's over through them", owners() == before,
                f"{before} -> {owners()}")
        T.check("and write no pid into root's file", open(os.path.join(victims, "file")).read() == "root's own\n")
    finally:
        if s.serve.poll() is None:
            s.stop()
        for path in planted:
            subprocess.run(["rm", "-f", path])
        subprocess.run(["rm", "-rf", victims])


def section(name, body, *args):
    """Runs one group of checks; an exception fails that group and the suite goes on."""
    try:
        body(*args)
    except Exception as e:  # noqa: BLE001 - report, then fail
        import traceback
        traceback.print_exc()
        T.check(f"{name} ran to the end", False, repr(e))


def main():
    started = time.time()
    s = Stack(setup=setup, env=ROOT_ENV)
    try:
        section("malformed requests", malformed_requests, s)
        section("privileges", privileges, s)
        section("root's environment", roots_environment, s)
        section("hostile PostgreSQL URL", hostile_postgres_url, s)
        section("bounded logs", bounded_logs, s)
        section("hostile log links", hostile_log_links, s)
        section("hostile backup", hostile_backup, s)
        section("hostile nginx paths", hostile_nginx_paths, s)
        section("linked nginx directory", linked_nginx_directory, s)
        section("re-initialised as root", reinitialised, s)
        section("low port", low_port, s)
        section("server.user chosen by the service user", chosen_user, s)
        section("nginx killed", nginx_killed, s)
        section("crashing pool", crashing_pool, s)
        section("hangup", hangup, s)
        rc = s.stop()
        T.check("serve stops cleanly on SIGTERM", rc == 0, f"exit {rc}\n{s.serve_output()[-1500:]}")
        section("hostile listen", hostile_listen, s)
        section("planted links", planted_links, s)
        section("impostor", impostor_on_port, s)
    finally:
        s.stop()
        leftovers = subprocess.run(["pgrep", "-f", s.data], capture_output=True, text=True).stdout.split()
        T.check("nothing is left running", not leftovers, str(leftovers))
        s.remove_if_passed(T)
    print(f"NOTE: {time.time() - started:.1f} s")
    return T.summary("serve")


if __name__ == "__main__":
    sys.exit(main())
