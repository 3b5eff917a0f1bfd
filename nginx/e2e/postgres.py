"""The PostgreSQL backend on one host: moving a serving LMDB store into PostgreSQL with
`attestctl store copy`, switching, `store migrate`, `doctor`, and a database that becomes
unreachable (through a TCP relay this suite cuts) and then returns."""
import os
import re
import socket
import sys
import threading
import time
import uuid

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "lib"))
from check import Tally  # noqa: E402
from stack import Stack, run_suite, app_headers  # noqa: E402
import subprocess  # noqa: E402

T = Tally()
URL = os.environ["ATTEST_TEST_POSTGRES_URL"]


def psql(url, sql):
    return subprocess.run(["psql", url, "-v", "ON_ERROR_STOP=1", "-qAt", "-c", sql], capture_output=True, text=True, check=True).stdout


def fresh_schema():
    name = "e2e_" + uuid.uuid4().hex[:10]
    psql(URL, f"CREATE SCHEMA {name}")
    return name, f"{URL} options='-c search_path={name}'"


class Relay:
    """A TCP relay to the database that can be cut (every connection closed, new ones
    refused) and restored, as a network partition would."""

    def __init__(self, host, port):
        self.target = (host, port)
        self.listener = socket.socket()
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(64)
        self.port = self.listener.getsockname()[1]
        self.open = True
        self.conns = []
        self.lock = threading.Lock()
        threading.Thread(target=self.accept, daemon=True).start()

    def accept(self):
        while True:
            client, _ = self.listener.accept()
            if not self.open:
                client.close()
                continue
            try:
                upstream = socket.create_connection(self.target)
            except OSError:
                client.close()
                continue
            with self.lock:
                self.conns += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self.pump, args=(a, b), daemon=True).start()

    @staticmethod
    def pump(a, b):
        try:
            while data := a.recv(65536):
                b.sendall(data)
        except OSError:
            pass
        for s in (a, b):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def cut(self):
        self.open = False
        with self.lock:
            for s in self.conns:
                try:
                    s.shutdown(socket.SHUT_RDWR)
                    s.close()
                except OSError:
                    pass
            self.conns = []

    def restore(self):
        self.open = True


def refresh_all(s, states):
    return [s.device(st, "refresh").returncode for st in states]


def lmdb_setup(s):
    s.ctl("org", "add", "acme")
    s.ctl("app", "add", "--org", "acme", "--team", "ABCDE12345", "--bundle", "com.example.app", "--env", "both")


def main():
    schema, url = fresh_schema()
    stack = Stack(setup=lmdb_setup)
    states = [stack.state(f"d{i}") for i in range(3)]

    def copy_and_switch(s):
        enrolled = [s.device(st, "enroll").returncode for st in states]
        T.check("three devices enroll on the LMDB store", enrolled == [0, 0, 0], repr(enrolled))
        T.check("and refresh", refresh_all(s, states) == [0, 0, 0])
        lmdb_counts = s.ctl_json("store", "stats")["databases"]
        p = s.ctl("store", "copy", "--to", "postgres", "--url", url, check=False)
        T.check("store copy while serving (a rehearsal) copies and checks the copy", p.returncode == 0 and "passes the consistency check" in p.stdout,
                p.stdout + p.stderr)
        p = s.ctl("store", "copy", "--to", "postgres", "--url", url, check=False)
        T.check("a second copy is refused without --replace", p.returncode == 1 and "--replace" in p.stderr, p.stdout + p.stderr)
        T.check("the devices still refresh on LMDB after the rehearsal", refresh_all(s, states) == [0, 0, 0])
        s.stop()
        # Two webhook events wait in LMDB's outbox (serving is stopped: nothing delivers them),
        # after whatever the deliverer had not taken yet when it stopped (the devices' events, on
        # a busy machine).
        waiting = s.ctl_json("store", "stats")["databases"].get("outbox", 0)
        s.ctl("config", "set", "webhooks.allowPrivateDestinations", "true")
        hook = s.ctl_json("webhooks", "add", "--org", "acme", "https://127.0.0.1:9/hook")["id"]
        for _ in range(2):
            s.ctl("webhooks", "test", hook)
        p = s.ctl("store", "copy", "--to", "postgres", "--url", url, "--replace", check=False)
        T.check("store copy --replace with serving stopped", p.returncode == 0, p.stdout + p.stderr)
        lmdb_counts = s.ctl_json("store", "stats")["databases"]
        T.check("the copy had queued webhook events to carry (the two tests)", lmdb_counts.get("outbox") == waiting + 2,
                f"{waiting} waiting before the tests: {lmdb_counts}")
        s.ctl("config", "set", "store.postgres.url", url)
        s.ctl("config", "set", "store.backend", "postgres")
        pg_counts = s.ctl_json("store", "stats")["databases"]
        T.check("after the switch, store stats count in PostgreSQL what LMDB held", pg_counts == lmdb_counts, f"{pg_counts} vs {lmdb_counts}")
        p = s.ctl("store", "migrate", check=False)
        current = psql(url, "SELECT max(version) FROM ae_schema").strip()
        T.check(f"store migrate on a current database says so (version {current}, the database's last migration)",
                p.returncode == 0 and f"up to date (version {current})" in p.stdout, p.stdout + p.stderr)
        copied_last = psql(url, "SELECT encode(k, 'hex') FROM ae_outbox ORDER BY k DESC LIMIT 1").strip()
        s.ctl("webhooks", "test", hook)
        T.check("an event queued on PostgreSQL is numbered after the copied ones (the outbox's sequence)",
                psql(url, f"SELECT count(*), count(*) FILTER (WHERE k > decode('{copied_last}', 'hex')) FROM ae_outbox").strip()
                == f"{waiting + 3}|1",
                psql(url, "SELECT encode(k, 'hex') FROM ae_outbox ORDER BY k"))
        s.start()
        T.check("every device refreshes on PostgreSQL, its counter continuing", refresh_all(s, states) == [0, 0, 0])
        show = s.device(states[0], "show")
        T.check("attest-device show reads the device back", show.returncode == 0, show.stderr)
        p = s.ctl("store", "check", check=False)
        T.check("store check passes on PostgreSQL", p.returncode == 0 and "consistent" in p.stdout, p.stdout[-500:])
        p = s.ctl("doctor", check=False)
        T.check("doctor is healthy on PostgreSQL", "healthy" in p.stdout, p.stdout + p.stderr)

    def schema_versions(s):
        psql(url, "INSERT INTO ae_schema (version) VALUES (99)")
        p = s.ctl("doctor", check=False)
        T.check("doctor names a database newer than the build", p.returncode != 0 and "schema version 99" in p.stdout, p.stdout + p.stderr)
        psql(url, "DELETE FROM ae_schema WHERE version = 99")

    def unreachable(s):
        host = re.search(r"host=(\S+)", URL).group(1)
        port = int(re.search(r"port=(\d+)", URL).group(1))
        relay = Relay(host, port)
        s.stop()
        s.ctl("config", "set", "store.postgres.url", f"host=127.0.0.1 port={relay.port} dbname=attestedge user=attestedge options='-c search_path={schema}'")
        s.start()
        T.check("refreshes through the relay", refresh_all(s, states) == [0, 0, 0])
        relay.cut()
        r = s.http("GET", "/api/v1/attestation/challenge", headers=app_headers())
        T.check("the challenge endpoint needs no database and still answers", r.status == 200, repr(r))
        outcomes = [s.device(st, "refresh") for st in states]
        codes = [p.returncode for p in outcomes]
        T.check("with the database cut, refreshes fail (503), nothing crashes", all(c != 0 for c in codes) and all("503" in p.stdout + p.stderr for p in outcomes),
                repr([(p.stdout + p.stderr)[-200:] for p in outcomes]))
        r = s.http("POST", "/api/v1/attestation/refresh", headers={**app_headers(), "Content-Type": "application/json"}, body=b"{}")
        T.check("answers stay JSON errors", r.status in (400, 503) and r.json.get("error") is not None, repr(r))
        relay.restore()
        deadline, ok = time.time() + 30, False
        while time.time() < deadline and not ok:
            ok = refresh_all(s, states) == [0, 0, 0]
            if not ok:
                time.sleep(1)
        T.check("once the database is back the same workers reconnect and refresh (no restart)", ok)

    def cleanup():
        stack.remove()
        psql(URL, f"DROP SCHEMA {schema} CASCADE")

    return run_suite(T, "postgres", stack, [copy_and_switch, schema_versions, unreachable], cleanup)


if __name__ == "__main__":
    sys.exit(main())
