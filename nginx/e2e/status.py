"""attestctl status against a synthetic metrics server (see status.sh).

The server's counters grow linearly with its clock: refresh answers 100 200s, 4 429s and 2 503s
a second, challenge 50 200s; 100 refresh observations a second, 60 of them at most 5 ms, 90 at
most 10 ms, 98 at most 25 ms and all at most 50 ms, so the 99th percentile is halfway through
(25 ms, 50 ms]: 37.5 ms whatever the interval. Rates are checked to 5% (the two clocks read a
request's time a little apart); everything else exactly."""
import http.server
import json
import os
import pty
import select
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "lib"))
from check import Tally  # noqa: E402

CTL = os.path.join(os.environ.get("ATTEST_BIN", os.path.join(os.getcwd(), ".build/release")), "attestctl")
BOUNDS = ["0.001", "0.0025", "0.005", "0.01", "0.025", "0.05", "0.1", "0.25", "0.5", "1", "2.5", "+Inf"]
PER_SECOND = [0, 0, 60, 90, 98, 100, 100, 100, 100, 100, 100, 100]  # cumulative refresh observations


class Metrics:
    mode = "ok"  # ok | 501 | html | garbage | foreign
    start = time.monotonic()

    @classmethod
    def exposition(cls):
        t = time.monotonic() - cls.start + 100  # as if the pools had served for 100 s already
        lines = ["# HELP attestedge_requests_total Answers by pool, endpoint and HTTP status.",
                 "# TYPE attestedge_requests_total counter"]
        for pool, status, rate in [("refresh", "200", 100), ("refresh", "429", 4), ("refresh", "503", 2),
                                   ("challenge", "200", 50)]:
            lines.append(f'attestedge_requests_total{{pool="{pool}",endpoint="{pool}",status="{status}"}} {rate * t}')
        lines += ["# HELP attestedge_request_duration_seconds Request durations.",
                  "# TYPE attestedge_request_duration_seconds histogram"]
        labels = 'pool="refresh",endpoint="refresh"'
        for le, n in zip(BOUNDS, PER_SECOND):
            lines.append(f'attestedge_request_duration_seconds_bucket{{{labels},le="{le}"}} {n * t}')
        lines += [f"attestedge_request_duration_seconds_sum{{{labels}}} {0.9 * t}",
                  f"attestedge_request_duration_seconds_count{{{labels}}} {100 * t}",
                  "# TYPE attestedge_pool_workers gauge",
                  'attestedge_pool_workers{pool="refresh"} 4',
                  'attestedge_pool_workers{pool="challenge"} 2',
                  'attestedge_pool_workers{pool="monitor"} 1',
                  "# TYPE attestedge_pool_worker_restarts_total counter",
                  'attestedge_pool_worker_restarts_total{pool="refresh"} 1',
                  "# TYPE attestedge_store_map_used_bytes gauge",
                  'attestedge_store_map_used_bytes{environment="durable"} 268435456',
                  'attestedge_store_map_used_bytes{environment="ephemeral"} 1048576',
                  "# TYPE attestedge_store_map_size_bytes gauge",
                  'attestedge_store_map_size_bytes{environment="durable"} 1073741824',
                  'attestedge_store_map_size_bytes{environment="ephemeral"} 67108864',
                  "# TYPE attestedge_webhook_backlog gauge",
                  "attestedge_webhook_backlog 5",
                  "# TYPE attestedge_webhook_attempts_total counter",
                  f'attestedge_webhook_attempts_total{{class="2xx"}} {10 * t}',
                  f'attestedge_webhook_attempts_total{{class="5xx"}} {1 * t}',
                  "# TYPE attestedge_monthly_active_devices gauge",
                  'attestedge_monthly_active_devices{org="acme"} 250',
                  'attestedge_monthly_active_devices{org="beta"} 7',
                  'attestedge_monthly_active_devices{org="\x1b]0;owned\x07\x1b[2J"} 1',
                  "# TYPE attestedge_monthly_active_devices_limit gauge",
                  'attestedge_monthly_active_devices_limit{org="acme"} 1000',
                  'attestedge_monthly_active_devices_limit{org="beta"} 0',
                  "# TYPE attestedge_time_seconds gauge",
                  f"attestedge_time_seconds {time.time()}"]
        return "\n".join(lines) + "\n"


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        mode = Metrics.mode
        if mode == "501":
            status, kind = 501, "application/json"
            body = '{"error":"not_implemented","message":"Metrics are not built yet.","requestId":"x"}'
        elif mode == "html":
            status, kind, body = 200, "text/html", "<html><body>It works!</body></html>"
        elif mode == "garbage":
            status, kind, body = 200, "text/plain", "It works!\n"
        elif mode == "foreign":
            status, kind, body = 200, "text/plain; version=0.0.4", "# TYPE go_goroutines gauge\ngo_goroutines 12\n"
        else:
            status, kind, body = 200, "text/plain; version=0.0.4; charset=utf-8", Metrics.exposition()
        data = body.encode()
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


def run(*args, timeout=30):
    p = subprocess.run([CTL, "status", *args], capture_output=True, text=True, timeout=timeout)
    return p.returncode, p.stdout, p.stderr


def near(value, expected, tolerance=0.05):
    return value is not None and abs(value - expected) <= tolerance * expected


def column(text, first, index):
    """Field `index` (0-based, split on 2+ spaces) of the line starting with `first`."""
    for line in text.splitlines():
        if line.startswith(first + " "):
            return [f for f in line.split("  ") if f.strip()][index].strip()
    return None


def on_terminal(args, seconds, during=None):
    """Runs attestctl status ARGS on a pseudo-terminal for SECONDS (calling `during` halfway),
    then Ctrl-C (SIGINT); returns its exit status and everything it wrote."""
    master, slave = pty.openpty()
    p = subprocess.Popen([CTL, "status", *args], stdin=slave, stdout=slave, stderr=slave, close_fds=True)
    os.close(slave)
    out = b""
    deadline = time.monotonic() + seconds
    halfway = time.monotonic() + seconds / 2
    while time.monotonic() < deadline:
        if during and time.monotonic() >= halfway:
            during()
            during = None
        ready, _, _ = select.select([master], [], [], 0.1)
        if ready:
            try:
                out += os.read(master, 65536)
            except OSError:
                break
    p.send_signal(signal.SIGINT)
    rc = p.wait(timeout=10)
    while True:
        ready, _, _ = select.select([master], [], [], 0.2)
        if not ready:
            break
        try:
            chunk = os.read(master, 65536)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    os.close(master)
    return rc, out.decode("utf-8", "replace")


def main():
    t = Tally()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/metrics"

    rc, out, err = run("--url", url)
    t.check("one screen: exit 0", rc == 0, err)
    t.check("refresh: 4 workers, 1 restart", column(out, "refresh", 1) == "4" and column(out, "refresh", 2) == "1", out)
    rps = float(column(out, "refresh", 3) or "nan")
    t.check(f"refresh: 106 requests/s ({rps})", near(rps, 106), out)
    t.check("refresh: p99 37.5 ms from the buckets' increase", column(out, "refresh", 4) == "37.5 ms", out)
    t.check("refresh: 2.0 5xx/s and 4.0 4xx/s",
            near(float(column(out, "refresh", 5) or "nan"), 2) and near(float(column(out, "refresh", 6) or "nan"), 4),
            out)
    t.check("challenge: 50 requests/s, no p99 without its histogram",
            near(float(column(out, "challenge", 3) or "nan"), 50) and column(out, "challenge", 4) == "-", out)
    t.check("durable map 256 MiB of 1 GiB: 25.0%; ephemeral 1.6%",
            column(out, "durable", 3) == "25.0%" and column(out, "ephemeral", 3) == "1.6%", out)
    t.check("webhooks: backlog 5, 1.0 failures/s", "WEBHOOKS  backlog 5 · " in out and " 1.0 failures/s" in out, out)
    t.check("acme 250 of 1000: 25.0%; beta unlimited",
            column(out, "acme", 3) == "25.0%" and column(out, "beta", 2) == "unlimited", out)
    t.check("a label's escape sequence never reaches the terminal", "\x1b" not in out and "?]0;owned??[2J" in out, out)

    rc, out, err = run("--url", url, "--json")
    try:
        j = json.loads(out)
    except ValueError:
        j = {}
    t.check("--json: exit 0, one object with the documented members",
            rc == 0 and list(j) == ["url", "seconds", "hostTime", "pools", "stores", "webhooks", "organizations"],
            out + err)
    pools = {p["pool"]: p for p in j.get("pools", [])}
    refresh = pools.get("refresh", {})
    t.check("--json: the interval measured near 1 s", 0.9 <= j.get("seconds", 0) <= 1.5, out)
    t.check("--json: refresh 106 requests/s, 2 5xx/s, 4 4xx/s",
            near(refresh.get("requestsPerSecond"), 106) and near(refresh.get("serverErrorsPerSecond"), 2)
            and near(refresh.get("clientErrorsPerSecond"), 4), out)
    t.check("--json: p99Seconds 0.0375", abs((refresh.get("p99Seconds") or 0) - 0.0375) < 1e-9
            and refresh.get("p99AboveLargestBucket") is False, out)
    t.check("--json: challenge's p99 is null", "challenge" in pools and pools["challenge"]["p99Seconds"] is None, out)
    t.check("--json: webhooks", j.get("webhooks", {}).get("backlog") == 5
            and near(j.get("webhooks", {}).get("attemptsPerSecond"), 11)
            and near(j.get("webhooks", {}).get("failuresPerSecond"), 1), out)
    orgs = {o["org"]: o for o in j.get("organizations", [])}
    t.check("--json: organizations' limits (beta's null)", orgs.get("acme") == {
        "org": "acme", "activeDevices": 250, "limit": 1000, "percent": 25}
        and orgs.get("beta", {}).get("limit", 0) is None, out)
    t.check("--json: the host's clock", j.get("hostTime", "").endswith("Z") and len(j.get("hostTime", "")) == 20, out)

    with tempfile.TemporaryDirectory(prefix="attestedge-status.") as d:
        data = os.path.join(d, "data")
        subprocess.run([CTL, "init", "--data", data], check=True, capture_output=True)
        subprocess.run([CTL, "config", "set", "server.metricsListen", f"127.0.0.1:{server.server_address[1]}",
                        "--data", data], check=True, capture_output=True)
        rc, out, err = run("--data", data)
        t.check("--data: the URL is server.metricsListen's", rc == 0 and out.startswith(f"AttestEdge · {url} · "),
                out + err)

    rc, out = on_terminal(["--url", url, "--watch", "1"], 4.5)
    frames = out.count("\x1b[H")
    t.check(f"--watch on a terminal: Ctrl-C exits 0 ({rc})", rc == 0, out[-500:])
    t.check(f"--watch redraws in place: {frames} frames, each ending in erase-below",
            frames >= 2 and out.count("\x1b[J") == frames and "\x1b[K" in out, repr(out[:300]))
    t.check("--watch uses no alternate screen and never clears the whole screen",
            "\x1b[?1049h" not in out and "\x1b[?47h" not in out and "\x1b[2J" not in out)
    t.check("--watch says how to quit", "every 1 s · Ctrl-C quits" in out, out[-500:])

    def fail_for_a_while():
        Metrics.mode = "501"
        time.sleep(1.6)
        Metrics.mode = "ok"
    # 10 s: the failures start at 5 s and last 1.6 s; after them a frame needs two good scrapes
    # a second apart (rates are differences), which a loaded box can push past a 7 s run.
    rc, out = on_terminal(["--url", url, "--watch", "1"], 10, during=lambda: threading.Thread(
        target=fail_for_a_while).start())
    shown = out.find("answered HTTP 501")
    t.check("--watch shows a failed scrape and keeps going", rc == 0 and shown >= 0
            and "retrying every 1 s" in out and out.rfind("REQ/S") > shown, repr(out[-800:]))
    Metrics.mode = "ok"

    p = subprocess.Popen([CTL, "status", "--url", url, "--watch", "1", "--json"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    time.sleep(4.5)
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=10)
    lines = [line for line in out.splitlines() if line]
    try:
        parsed = [json.loads(line) for line in lines]
    except ValueError:
        parsed = []
    t.check(f"--watch --json through a pipe: one object a line ({len(lines)}), no escapes, exit 0",
            p.returncode == 0 and len(parsed) >= 2 and len(parsed) == len(lines) and "\x1b" not in out, out + err)

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{s.getsockname()[1]}/metrics"
    rc, out, err = run("--url", closed)
    t.check("nothing listening: exit 1 naming the URL and what must run",
            rc == 1 and f"nothing answers at {closed}" in err and "attestctl serve" in err and "monitor" in err, err)
    for mode, says in [("501", f"GET {url} answered HTTP 501, not 200 with Prometheus metrics: "
                               '{"error":"not_implemented"'),
                       ("html", f"GET {url} answered Content-Type text/html, not Prometheus's text format"),
                       ("garbage", f"GET {url} did not answer Prometheus's text format: line 1: "),
                       ("foreign", "the answer has no attestedge_pool_workers, attestedge_time_seconds: it is not")]:
        Metrics.mode = mode
        rc, out, err = run("--url", url)
        t.check(f"{mode}: exit 1 and says so", rc == 1 and says in err and out == "", err)
    Metrics.mode = "ok"
    rc, out, err = run("--url", "ftp://127.0.0.1/metrics")
    t.check("--url must be http or https: usage error, exit 2", rc == 2 and "--url must be" in err, err)
    server.shutdown()
    return t.summary("status")


if __name__ == "__main__":
    sys.exit(main())
