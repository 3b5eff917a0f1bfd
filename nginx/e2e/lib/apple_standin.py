"""A stand-in for Apple's App Attest data endpoint (POST /v1/attestationData) for the receipts
suite: HTTPS on a free loopback port with a certificate from a CA of its own (`ca_file`, given
to attest-receipts as receipts.appleCAFile). Every request's provider token is checked with the
registered DeviceCheck key's public half (ES256, header kid, claims iss and a fresh iat); a
token that fails is answered 401, as Apple does. Otherwise the answer is the next one scripted
(`answer(...)`), else 200: a new RECEIPT receipt signed with the data directory's test receipt
authority (test-ca/receipts.pem), fields 2-5 and 7 copied from the posted receipt, the risk
metric scripted."""
import base64
import collections
import datetime
import http.server
import json
import os
import re
import ssl
import subprocess
import tempfile
import threading
import time

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature
from cryptography.hazmat.primitives.serialization import pkcs7
from cryptography.x509.oid import NameOID

from stack import free_port

BODIES = {400: b"Incorrect Environment", 401: b"Unauthorized", 404: b"No data available for the supplied receipt",
          429: b"Too Many Requests", 500: b"Internal Server Error"}


def b64url(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def der(tag, content):
    n = len(content)
    if n < 0x80:
        length = bytes([n])
    else:
        raw = n.to_bytes((n.bit_length() + 7) // 8, "big")
        length = bytes([0x80 | len(raw)]) + raw
    return bytes([tag]) + length + content


def der_int(v):
    raw = v.to_bytes(max(1, (v.bit_length() + 8) // 8), "big")
    return der(0x02, raw)


def read_tlv(data, i):
    """(tag, content start, content end) of the definite-length TLV at `i`."""
    tag, n = data[i], data[i + 1]
    i += 2
    if n & 0x80:
        k = n & 0x7F
        n = int.from_bytes(data[i:i + k], "big")
        i += k
    return tag, i, i + n


def payload_fields(payload):
    """The receipt payload (SET OF SEQUENCE {INTEGER type, INTEGER version, OCTET STRING value}):
    {type: value}, the first of each type."""
    tag, start, end = read_tlv(payload, 0)
    assert tag == 0x31, "payload is not a SET"
    fields, i = {}, start
    while i < end:
        _, s, e = read_tlv(payload, i)
        _, ts, te = read_tlv(payload, s)
        _, vs, ve = read_tlv(payload, te)
        _, os_, oe = read_tlv(payload, ve)
        fields.setdefault(int.from_bytes(payload[ts:te], "big"), payload[os_:oe])
        i = e
    return fields


def iso_ms(t):
    return datetime.datetime.fromtimestamp(int(t), datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S") + ".153Z"


class AppleStandIn(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, receipts_pem, team, key_id, public_key_pem):
        self.port = free_port()
        self.dir = tempfile.mkdtemp(prefix="apple-standin-")
        self.team, self.key_id = team, key_id
        self.public_key = serialization.load_pem_public_key(public_key_pem)
        with open(receipts_pem, "rb") as f:
            pem = f.read()
        # receipts.pem: signer certificate, its key, intermediate, root (TestReceiptAuthority+PEM).
        blocks = [(m.group(1), m.group(0)) for m in re.finditer(rb"-----BEGIN ([A-Z ]+)-----.*?-----END \1-----\n?", pem, re.S)]
        self.certs = [x509.load_pem_x509_certificate(b) for label, b in blocks if label == b"CERTIFICATE"]
        self.signer_key = next(serialization.load_pem_private_key(b, None) for label, b in blocks if label == b"PRIVATE KEY")
        spki = lambda k: k.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)  # noqa: E731
        self.signer = next(c for c in self.certs if spki(c.public_key()) == spki(self.signer_key.public_key()))
        self.lock = threading.Lock()
        self.script = collections.deque()  # (status, body or None, risk metric)
        self.got = []  # dicts: time, status, token_ok, reason, authorization, body
        self.risk_metric = 2
        self.not_before_seconds = 86_400
        self.ca_file = self.make_tls()
        super().__init__(("127.0.0.1", self.port), Handler)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(os.path.join(self.dir, "server.pem"), os.path.join(self.dir, "server.key"))
        self.socket = context.wrap_socket(self.socket, server_side=True)
        threading.Thread(target=self.serve_forever, daemon=True).start()

    @property
    def url(self):
        return f"https://127.0.0.1:{self.port}"

    def make_tls(self):
        """A CA and a server certificate for 127.0.0.1 (1 day); returns the CA's PEM file."""
        now = datetime.datetime.now(datetime.timezone.utc)
        ca_key, key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
        ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "Apple stand-in test CA")])
        ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name).public_key(ca_key.public_key())
              .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(hours=1))
              .not_valid_after(now + datetime.timedelta(days=1))
              .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
              .sign(ca_key, hashes.SHA256()))
        server = (x509.CertificateBuilder().subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")]))
                  .issuer_name(ca_name).public_key(key.public_key()).serial_number(x509.random_serial_number())
                  .not_valid_before(now - datetime.timedelta(hours=1)).not_valid_after(now + datetime.timedelta(days=1))
                  .add_extension(x509.SubjectAlternativeName([x509.IPAddress(__import__("ipaddress").ip_address("127.0.0.1"))]),
                                 critical=False)
                  .sign(ca_key, hashes.SHA256()))
        with open(os.path.join(self.dir, "server.pem"), "wb") as f:
            f.write(server.public_bytes(serialization.Encoding.PEM))
        with os.fdopen(os.open(os.path.join(self.dir, "server.key"), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "wb") as f:
            f.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                      serialization.NoEncryption()))
        # attest-receipts runs as the service user: the CA certificate must be readable by it.
        os.chmod(self.dir, 0o755)
        ca_file = os.path.join(self.dir, "ca.pem")
        with open(ca_file, "wb") as f:
            f.write(ca.public_bytes(serialization.Encoding.PEM))
        os.chmod(ca_file, 0o644)
        return ca_file

    def close(self):
        """Stops serving and deletes its directory."""
        import shutil
        self.shutdown()
        self.server_close()
        shutil.rmtree(self.dir, ignore_errors=True)

    def answer(self, status, body=None, risk=None):
        """Scripts the next answer (FIFO)."""
        with self.lock:
            self.script.append((status, body, risk))

    def requests(self):
        with self.lock:
            return list(self.got)

    def wait(self, count, seconds):
        deadline = time.time() + seconds
        while time.time() < deadline and len(self.requests()) < count:
            time.sleep(0.05)
        return self.requests()

    def check_token(self, authorization):
        """'' when the provider token verifies, else why not."""
        try:
            head, claims, sig = authorization.split(".")
            header, payload = json.loads(b64url(head)), json.loads(b64url(claims))
        except Exception as e:  # noqa: BLE001 - any malformed token is a 401
            return f"malformed token: {e}"
        if header != {"alg": "ES256", "kid": self.key_id}:
            return f"header {header}"
        if payload.get("iss") != self.team or set(payload) != {"iss", "iat"}:
            return f"claims {payload}"
        if not isinstance(payload["iat"], int) or abs(time.time() - payload["iat"]) > 3600:
            return f"iat {payload['iat']} is not fresh"
        raw = b64url(sig)
        if len(raw) != 64:
            return "signature is not r||s"
        try:
            self.public_key.verify(encode_dss_signature(int.from_bytes(raw[:32], "big"), int.from_bytes(raw[32:], "big")),
                                   f"{head}.{claims}".encode(), ec.ECDSA(hashes.SHA256()))
        except Exception:  # noqa: BLE001
            return "signature does not verify with the registered key"
        return ""

    def new_receipt(self, posted, risk):
        """A RECEIPT about the posted receipt's key, signed by the test receipt authority."""
        content = subprocess.run(["openssl", "cms", "-verify", "-noverify", "-inform", "DER", "-binary"],
                                 input=posted, capture_output=True, check=True).stdout
        old = payload_fields(content)
        now = time.time()
        fields = [(17, str(risk).encode()), (6, b"RECEIPT"), (2, old[2]), (3, old[3]), (5, old.get(5, b"dG9rZW4=")),
                  (19, iso_ms(now + self.not_before_seconds).encode()), (4, old.get(4, b"")),
                  (7, old.get(7, b"sandbox")), (12, iso_ms(now).encode()), (21, iso_ms(now + 90 * 86_400).encode())]
        payload = der(0x31, b"".join(der(0x30, der_int(t) + der_int(1) + der(0x04, v)) for t, v in fields))
        builder = pkcs7.PKCS7SignatureBuilder().set_data(payload).add_signer(self.signer, self.signer_key, hashes.SHA256())
        for cert in self.certs:
            if cert != self.signer:
                builder = builder.add_certificate(cert)
        return builder.sign(serialization.Encoding.DER, [pkcs7.PKCS7Options.Binary, pkcs7.PKCS7Options.NoAttributes])


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_POST(self):
        server = self.server
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        authorization = self.headers.get("Authorization", "")
        reason = "wrong path" if self.path != "/v1/attestationData" else server.check_token(authorization)
        with server.lock:
            scripted = server.script.popleft() if server.script and not reason else (200, None, None)
        status, answer, risk = (401, b"Unauthorized", None) if reason else scripted
        if status == 200 and answer is None:
            try:
                answer = base64.b64encode(server.new_receipt(base64.b64decode(body, validate=True),
                                                             risk or server.risk_metric))
            except Exception as e:  # noqa: BLE001 - a body that is no receipt: Apple's 400
                status, answer = 400, f"Bad Payload ({e})".encode()
        if answer is None:
            answer = BODIES.get(status, b"")
        with server.lock:
            server.got.append({"time": time.time(), "status": status, "token_ok": not reason, "reason": reason,
                               "authorization": authorization, "body": body})
        try:
            self.send_response(status)
            if status == 429:
                self.send_header("Retry-After", "1")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)
        except OSError:
            pass
