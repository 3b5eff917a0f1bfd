"""Load for the fault suite: pre-generated request bodies (attest-device batch) sent by one
thread per device in counter order, with every outcome recorded for the store checks."""
import base64
import http.client
import json
import threading


def assertion_counter(assertion_b64):
    """signCount of an assertion: CBOR {text: bytes} → authenticatorData[33:37]."""
    data = base64.b64decode(assertion_b64 + "=" * (-len(assertion_b64) % 4))
    i = 0

    def arg(info):
        nonlocal i
        if info < 24:
            return info
        width = {24: 1, 25: 2, 26: 4, 27: 8}[info]
        value = int.from_bytes(data[i:i + width], "big")
        i += width
        return value

    head = data[i]
    i += 1
    fields = {}
    for _ in range(arg(head & 0x1F)):
        k = data[i]
        i += 1
        n = arg(k & 0x1F)
        key = data[i:i + n].decode()
        i += n
        v = data[i]
        i += 1
        n = arg(v & 0x1F)
        fields[key] = data[i:i + n]
        i += n
    return int.from_bytes(fields["authenticatorData"][33:37], "big")


def post(port, path, headers, body, timeout=30):
    """(status or None on a connection error, parsed JSON or None)."""
    try:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
        conn.request("POST", path, body=body, headers={"Content-Type": "application/json", **headers})
        r = conn.getresponse()
        raw = r.read()
        conn.close()
        try:
            return r.status, json.loads(raw)
        except ValueError:
            return r.status, None
    except (OSError, http.client.HTTPException):
        return None, None


class Outcomes:
    """Every request sent: kind, body text, status (None: connection error), JSON answer."""

    def __init__(self):
        self.lock = threading.Lock()
        self.items = []

    def add(self, kind, body, status, answer):
        with self.lock:
            self.items.append((kind, body, status, answer))

    def statuses(self):
        counts = {}
        for _, _, status, _ in self.items:
            counts[status] = counts.get(status, 0) + 1
        return counts

    def acknowledged(self, kind):
        return [body for k, body, status, _ in self.items if k == kind and status == 200]


def run(port, headers, refresh_lines, validate_lines, outcomes, fault=None):
    """Sends every body once: refresh bodies by device (in file order, so counters rise),
    validate bodies from one more thread; `fault(stop_event)` runs beside them."""
    by_device = {}
    for line in refresh_lines:
        by_device.setdefault(json.loads(line)["keyId"], []).append(line)

    def device_thread(lines):
        for line in lines:
            outcomes.add("refresh", line, *post(port, "/api/v1/attestation/refresh", headers, line))

    def validate_thread():
        for line in validate_lines:
            outcomes.add("validate", line, *post(port, "/api/v1/attestation/validate", headers, line))

    threads = [threading.Thread(target=device_thread, args=(lines,)) for lines in by_device.values()]
    threads.append(threading.Thread(target=validate_thread))
    stop = threading.Event()
    faults = threading.Thread(target=fault, args=(stop,)) if fault else None
    for t in threads:
        t.start()
    if faults:
        faults.start()
    for t in threads:
        t.join()
    stop.set()
    if faults:
        faults.join()
