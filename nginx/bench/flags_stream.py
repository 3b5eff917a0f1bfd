#!/usr/bin/env python3
"""The flag stream's capacity on this host (docs/flag-stream.md, "Capacity"): `attestctl serve`
with real nginx + nchan, N idle EventSource subscribers on one environment channel, each with
its own API key and so its own holder channel as N devices would have (`--shared`: all on one
enrolled device's token, one holder channel), asyncio, paced so the auth subrequests are not
what is measured.

Prints: the connect rate; nginx's workers' RSS and PSS before and after (÷ N = bytes per
stream); nchan's shared memory in use; then one publish, sent from this process over the
publisher socket (no process start in the timing), and each subscriber's receipt of the event
on a monotonic clock: first, p50, p99, last.

    python3 nginx/bench/flags_stream.py [N] [--shared]     (default 1000; needs the release build)
"""
import asyncio
import json
import os
import re
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "e2e", "lib"))
from stack import Stack, app_headers  # noqa: E402

A = app_headers()
APP = f"{A['X-Team-ID']}.{A['X-Bundle-ID']}"
N = int(sys.argv[1]) if len(sys.argv) > 1 and sys.argv[1].isdigit() else 1000
SHARED = "--shared" in sys.argv  # every stream on one device's token: one holder channel for all


def setup(s):
    s.ctl("org", "add", "acme", "--tier", "pro", "--rate-limit", "0")
    s.ctl("app", "add", "--org", "acme", "--team", A["X-Team-ID"], "--bundle", A["X-Bundle-ID"], "--env", "both")
    s.ctl("config", "set", "rateLimits.validatePerIPPerMinute", "0")
    s.ctl("flags", "add", "--app", APP, "--key", "beta", "--type", "bool", "--value", "false")


def memory(pids):
    rss = pss = 0
    for p in pids:
        with open(f"/proc/{p}/smaps_rollup") as f:
            text = f.read()
        rss += int(re.search(r"^Rss:\s+(\d+)", text, re.M).group(1)) * 1024
        pss += int(re.search(r"^Pss:\s+(\d+)", text, re.M).group(1)) * 1024
    return rss, pss


def unix_http(path, request):
    c = socket.socket(socket.AF_UNIX)
    c.connect(path)
    c.sendall(request)
    out = b""
    while True:
        d = c.recv(65536)
        if not d:
            break
        out += d
    c.close()
    return out


async def subscriber(port, token, opened, received, marker):  # token: a device's, or an API key
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write((f"GET /api/v1/flags/stream HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n"
                  f"X-Team-ID: {A['X-Team-ID']}\r\nX-Bundle-ID: {A['X-Bundle-ID']}\r\n"
                  f"Authorization: Bearer {token}\r\n\r\n").encode())
    await writer.drain()
    seen = b""
    while b'"beta":false' not in seen:  # the on-connect event (the stored defaults)
        seen += await reader.read(4096)
    opened.append(time.monotonic())
    seen = b""
    while marker not in seen:
        chunk = await reader.read(4096)
        if not chunk:
            return
        seen += chunk
    received.append(time.monotonic())
    writer.close()


async def run(s, tokens):
    master = int(open(os.path.join(s.data, "run", "nginx.pid")).read())
    workers = [int(p) for p in subprocess.run(["pgrep", "-P", str(master)], capture_output=True,
                                              text=True).stdout.split()]
    before = memory(workers)
    opened, received = [], []
    marker = b'"beta":true'
    t0 = time.monotonic()
    tasks = []
    for i in range(N):
        tasks.append(asyncio.create_task(subscriber(s.port, tokens[i % len(tokens)], opened, received, marker)))
        if i % 100 == 99:
            await asyncio.sleep(0.2)  # paced: 500 connects/s at most
    while len(opened) < N and time.monotonic() - t0 < 120:
        await asyncio.sleep(0.05)
    connect = time.monotonic() - t0
    await asyncio.sleep(2)
    after = memory(workers)
    status = unix_http(os.path.join(s.data, "run", "flags-publish.sock"),
                       b"GET /status HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").decode()
    shm = re.search(r"shared memory used: (\S+)", status)
    subs = re.search(r"subscribers: (\d+)", status)
    body = b'{"flags":{"beta":true}}'
    sock = os.path.join(s.data, "run", "flags-publish.sock")
    loop = asyncio.get_running_loop()
    sent = time.monotonic()
    await loop.run_in_executor(None, unix_http, sock,
                               (f"POST /pub/{APP}/production HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                                f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode() + body)
    while len(received) < len(opened) and time.monotonic() - sent < 30:
        await asyncio.sleep(0.01)
    for t in tasks:
        t.cancel()
    times = sorted((r - sent) * 1000 for r in received)

    def pct(p):
        return times[min(len(times) - 1, int(len(times) * p))] if times else float("nan")
    print(f"nginx workers: {len(workers)}; subscribers connected: {len(opened)}/{N} in {connect:.2f} s "
          f"({len(opened) / connect:.0f}/s, paced at 500/s; nchan counts {subs.group(1) if subs else '?'})")
    print(f"nginx workers RSS {before[0] / 1e6:.1f} MB → {after[0] / 1e6:.1f} MB: "
          f"{(after[0] - before[0]) / max(1, len(opened)) / 1024:.1f} KiB per stream; "
          f"PSS {(after[1] - before[1]) / max(1, len(opened)) / 1024:.1f} KiB per stream")
    print(f"nchan shared memory used: {shm.group(1) if shm else '?'}")
    print(f"publish → receipt, {len(times)} subscribers: first {pct(0):.1f} ms, p50 {pct(0.5):.1f} ms, "
          f"p99 {pct(0.99):.1f} ms, last {times[-1] if times else float('nan'):.1f} ms")


def main():
    s = Stack(setup=setup)
    try:
        if SHARED:
            p = s.device(s.state("bench"), "enroll")
            if p.returncode != 0:
                raise RuntimeError(p.stdout + p.stderr)
            tokens = [re.search(r'"token"\s*:\s*"([^"]+)"', open(s.state("bench")).read()).group(1)]
        else:
            # Each stream its own credential, so its own holder channel (~key/<hex>), as N
            # devices would have: API keys, since making one is a row, not an attestation.
            t0 = time.monotonic()
            tokens = [re.search(r"aat_[A-Za-z0-9_-]+", s.ctl("apikey", "create", "--org", "acme").stdout).group(0)
                      for _ in range(N)]
            print(f"{N} API keys made in {time.monotonic() - t0:.1f} s (one holder channel per stream)")
        asyncio.run(run(s, tokens))
    finally:
        s.stop()
        s.remove()


if __name__ == "__main__":
    main()
