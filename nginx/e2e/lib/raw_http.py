"""HTTP/1.1 sent byte for byte over a socket, for requests an HTTP library would refuse to send
or would normalise: a lowercase method, %00, /../, HTTP/2.0 on a plain connection, control
bytes in headers, duplicated headers, bodies that do not match Content-Length, slow bodies."""
import json
import socket
import time


class RawResponse:
    """The first response read back; a server that answered nothing gives status 0."""

    def __init__(self, status, headers, body):
        self.status = status
        self.headers = headers  # lower-case name -> list of values
        self.body = body

    @property
    def json(self):
        try:
            return json.loads(self.body)
        except ValueError:
            return None

    def header(self, name):
        values = self.headers.get(name.lower(), [])
        return values[0] if values else None

    def __repr__(self):
        return f"HTTP {self.status} {self.body[:200]!r}"


def parse(data):
    """Parses the first response in `data` (its body cut at its Content-Length, if any)."""
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    parts = lines[0].split(b" ", 2) if lines and lines[0] else [b"", b"0"]
    status = int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else 0
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(b":")
        headers.setdefault(name.strip().lower().decode("latin-1"), []).append(value.strip().decode("latin-1"))
    length = headers.get("content-length")
    if length and length[0].isdigit():
        body = body[: int(length[0])]
    return RawResponse(status, headers, body)


def request(port, raw, timeout=15, chunks=None, pause=0.0):
    """Sends `raw` bytes as they are (or `chunks` one by one, `pause` seconds apart) to
    127.0.0.1:`port` and reads until the first response is complete (its Content-Length of
    body has come), the server closes or resets, or `timeout` seconds pass without a byte.
    Returns a RawResponse (status 0 when nothing came back)."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        for piece in (chunks or [raw]):
            s.sendall(piece)
            if pause:
                time.sleep(pause)
        data = b""
        while not _complete(data):
            try:
                got = s.recv(65536)
            except (socket.timeout, ConnectionResetError):
                break
            if not got:
                break
            data += got
        return parse(data)


def _complete(data):
    """Whether `data` holds a whole response head and the Content-Length of body it names."""
    head, sep, body = data.partition(b"\r\n\r\n")
    if not sep:
        return False
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length" and value.strip().isdigit():
            return len(body) >= int(value.strip())
    return False


def build(method, path, headers, body=b"", content_length=True):
    """An HTTP/1.1 request with Connection: close; `headers` is a list of (name, value) pairs
    (bytes or str), sent exactly as given, duplicates included."""
    def b(x):
        return x if isinstance(x, bytes) else x.encode("latin-1")
    out = b(method) + b" " + b(path) + b" HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
    for name, value in headers:
        out += b(name) + b": " + b(value) + b"\r\n"
    if content_length and body is not None and method not in ("GET", "HEAD"):
        out += b"Content-Length: " + str(len(body)).encode() + b"\r\n"
    return out + b"\r\n" + (body or b"")
