"""HTTP/1.1 sent byte for byte over a socket, for requests an HTTP library would refuse to
send or would normalise (a lowercase method, %00, /../, HTTP/2.0 on a plain connection, …)."""
import socket

from stack import Response


def send(port, data, timeout=5):
    """Sends `data` as is and reads one response (up to its Content-Length, or until the
    server closes). A server that answers nothing gives status 0."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(data)
        out = b""
        while True:
            try:
                chunk = s.recv(65536)
            except (socket.timeout, ConnectionResetError):
                break
            if not chunk:
                break
            out += chunk
            head, sep, body = out.partition(b"\r\n\r\n")
            if sep:
                length = _content_length(head)
                if length is not None and len(body) >= length:
                    break
    head, _, body = out.partition(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    parts = lines[0].split(b" ") if lines and lines[0] else []
    status = int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else 0
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(b":")
        headers[name.strip().lower().decode("latin-1")] = value.strip().decode("latin-1")
    return Response(status, headers.items(), body)


def _content_length(head):
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length" and value.strip().isdigit():
            return int(value.strip())
    return None
