"""The webhook receiver of the end-to-end suites (webhooks.py, hosts.py): an HTTP server on a free
loopback port that records every POST a delivery worker sends it."""
import http.server
import threading
import time

from stack import free_port


class Receiver(http.server.ThreadingHTTPServer):
    """Records every POST; /flaky answers 500 twice then 200, /slow takes 0.2 s."""
    daemon_threads = True

    def __init__(self):
        self.port = free_port()
        self.lock = threading.Lock()
        self.got = []  # (path, headers, body, time)
        self.flaky = 0
        super().__init__(("127.0.0.1", self.port), Handler)
        threading.Thread(target=self.serve_forever, daemon=True).start()

    def on(self, path):
        with self.lock:
            return [g for g in self.got if g[0] == path]

    def wait(self, path, count, seconds):
        deadline = time.time() + seconds
        while time.time() < deadline and len(self.on(path)) < count:
            time.sleep(0.05)
        return self.on(path)


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        r = self.server
        status = 200
        if self.path == "/slow":
            time.sleep(0.2)
        with r.lock:
            if self.path == "/flaky":
                r.flaky += 1
                status = 500 if r.flaky <= 2 else 200
            r.got.append((self.path, {k.lower(): v for k, v in self.headers.items()}, body, time.time()))
        answer = b'{"received":true}' if status == 200 else b"temporarily broken"
        try:
            self.send_response(status)
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)
        except OSError:
            pass  # the worker was killed mid-request
