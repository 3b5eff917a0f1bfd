#!/usr/bin/env python3
"""docs/operations.md's "Behind a load balancer or proxy" end to end, through real nginx and the refresh
pool's per-IP bucket (`rateLimits.refreshPerIPPerMinute` at 3; a refresh with an empty body is
a 400 that still charges the client's address, so the 4th from one address in a minute is 429):

- `attestctl serve`'s nginx, which has no realip: X-Forwarded-For changes nothing, every
  request counts against the peer's address.
- a second nginx, as a user with a system nginx would run it: `attestctl site` renders the
  server block, included from an http block with the documented two lines, trusting 127.0.0.1.
  Each forwarded address gets a bucket of its own; a request without the header counts as the
  peer; a peer not trusted (127.0.0.2) cannot choose its address with the header.

Prints PASS/FAIL per check and a summary; exits 1 on a failure."""
import http.client
import json
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "lib"))
from check import Tally  # noqa: E402
from stack import BIN, ROOT, Stack, app_headers, free_port, run_suite, within_one_rate_window  # noqa: E402

T = Tally()
TEAM, BUNDLE = "RIPAB12345", "com.example.realip"
LIMIT = 3


def setup(s):
    s.ctl("config", "set", "rateLimits.refreshPerIPPerMinute", str(LIMIT))
    s.ctl("org", "add", "acme", "--tier", "enterprise")
    s.ctl("app", "add", "--org", "acme", "--team", TEAM, "--bundle", BUNDLE)


def refresh(port, forwarded=None, source="127.0.0.1"):
    """A refresh with an empty body (400, charged to the client's address) from `source`,
    with X-Forwarded-For: `forwarded` when given; the status."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30, source_address=(source, 0))
    headers = {"Content-Type": "application/json", **app_headers(TEAM, BUNDLE)}
    if forwarded:
        headers["X-Forwarded-For"] = forwarded
    conn.request("POST", "/api/v1/attestation/refresh", body=b"{}", headers=headers)
    status = conn.getresponse().status
    conn.close()
    return status


def without_realip(s):
    within_one_rate_window(20)
    seen = [refresh(s.port, f"10.1.0.{i}") for i in range(1, LIMIT + 2)]
    T.check(f"serve's nginx ignores X-Forwarded-For: {LIMIT + 1} addresses in the header, one bucket",
            seen == [400] * LIMIT + [429], str(seen))


def start_realip_nginx(s):
    """A second nginx on another port: the rendered server block inside an http block with the
    documented realip lines; returns (process, port, its directory)."""
    d = os.path.join(s.dir, "realip")
    os.makedirs(d)
    subprocess.run([os.path.join(BIN, "attestctl"), "site", "--out", d, "--run-dir", os.path.join(s.data, "run"),
                    "--metrics-listen", f"127.0.0.1:{free_port()}", "--data", s.data, "--nginx-templates", os.path.join(ROOT, "nginx", "conf")], check=True, capture_output=True)
    port = free_port()
    site = os.path.join(d, "site.conf")
    with open(site) as f:
        text = f.read()
    text, n = re.subn(r"(?m)^(\s*)listen\s+[^;]+;", rf"\1listen 127.0.0.1:{port};", text, count=1)
    T.check("attestctl site renders a server block with a listen line", n >= 1, text[:300])
    # serve's nginx holds the flag stream's publisher socket in the run directory: this one gets its own.
    text = text.replace(f"listen unix:{os.path.join(s.data, 'run')}/flags-publish.sock;", f"listen unix:{d}/flags-publish.sock;")
    with open(site, "w") as f:
        f.write(text)
    # The user nginx's workers run as, as serve's own configuration has it (they must reach
    # the pools' sockets).
    with open(os.path.join(s.data, "nginx", "nginx.conf")) as f:
        user = re.search(r"(?m)^user [^;]+;", f.read())
    temp = "\n".join(f"    {k}_temp_path {d}/{k};" for k in ("client_body", "fastcgi", "proxy", "uwsgi", "scgi"))
    conf = os.path.join(d, "nginx.conf")
    with open(conf, "w") as f:
        f.write(f"""load_module /usr/lib/nginx/modules/ngx_nchan_module.so;
{user.group(0) if user else ""}
daemon off;
worker_processes 1;
pid {d}/nginx.pid;
error_log {d}/error.log warn;
events {{ worker_connections 64; }}
http {{
{temp}
    log_format realip '$remote_addr "$request" $status';
    access_log {d}/access.log realip;
    set_real_ip_from 127.0.0.1;
    real_ip_header X-Forwarded-For;
    include {site};
}}
""")
    os.chmod(d, 0o755)
    proc = subprocess.Popen(["nginx", "-p", d, "-c", conf], stdout=subprocess.DEVNULL, stderr=open(os.path.join(d, "nginx.out"), "w"))
    deadline = time.time() + 15
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError("nginx exited: " + open(os.path.join(d, "nginx.out")).read())
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            conn.request("GET", "/jwks.json")
            conn.getresponse().read()
            conn.close()
            return proc, port, d
        except OSError:
            time.sleep(0.1)
    proc.kill()
    raise RuntimeError("nginx with realip did not come up")


def with_realip(s):
    proc, port, d = start_realip_nginx(s)
    try:
        within_one_rate_window(20)
        # The peer's own bucket (127.0.0.1) may be spent already by the check above: fill it.
        for _ in range(LIMIT):
            refresh(port)
        seen = [refresh(port, "10.2.0.1") for _ in range(LIMIT + 1)]
        T.check(f"through realip, one forwarded address gets its own bucket of {LIMIT}", seen == [400] * LIMIT + [429], str(seen))
        seen = [refresh(port, f"10.2.0.{i}") for i in range(2, 6)]
        T.check("other forwarded addresses are not charged for it", seen == [400] * 4, str(seen))
        T.check("a request without the header counts as the peer, whose bucket is spent", refresh(port) == 429)
        seen = [refresh(port, f"10.3.0.{i}", source="127.0.0.2") for i in range(1, LIMIT + 2)]
        T.check("from a peer not trusted (127.0.0.2) the header is ignored: one bucket", seen == [400] * LIMIT + [429], str(seen))
        with open(os.path.join(d, "access.log")) as f:
            addresses = {line.split(" ")[0] for line in f}
        T.check("nginx logs the forwarded address from the trusted peer and the peer's own otherwise",
                {"10.2.0.1", "10.2.0.5", "127.0.0.1", "127.0.0.2"} <= addresses and "10.3.0.1" not in addresses, str(sorted(addresses)))
    finally:
        proc.terminate()
        proc.wait(timeout=10)


if __name__ == "__main__":
    sys.exit(run_suite(T, "realip", Stack(setup=setup), [without_realip, with_realip]))
