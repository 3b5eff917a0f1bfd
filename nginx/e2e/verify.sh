#!/usr/bin/env bash
# End-to-end checks of `attestctl verify` on the release binary: Apple's guide sample at its
# time and after it, unusable input (exit 2), trust roots, and assertions signed independently
# by Python's `cryptography` (so the signing convention is not only checked against our own
# software device); receipts: Apple's sample and a public sandbox RECEIPT (Tests/Fixtures/Receipts).
# Prints PASS/FAIL per check and a summary; exits non-zero on any failure.
set -uo pipefail
cd "$(dirname "$0")/../.."
attestctl=${ATTESTCTL:-${ATTEST_BIN:-.build/release}/attestctl}
vector=Tests/AttestCoreTests/Vectors/apple-guide-2026.json
if [ ! -x "$attestctl" ]; then
  echo "FAIL: $attestctl not found; run 'swift build -c release --product attestctl' first" >&2
  exit 1
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
source nginx/e2e/lib/check.sh

# run NAME ARGS...: runs attestctl, keeping stdout, stderr and the exit status under $work/NAME.
run() {
  local name=$1; shift
  "$attestctl" "$@" >"$work/$name.out" 2>"$work/$name.err"
  echo $? >"$work/$name.rc"
}
rc() { [ "$(cat "$work/$1.rc")" = "$2" ]; }
# json_is NAME PYTHON-EXPRESSION: the expression over `j` (the parsed stdout) is true.
json_is() { python3 -c "import json,sys; j=json.load(open(sys.argv[1])); sys.exit(0 if ($2) else 1)" "$work/$1.out" 2>/dev/null; }
stderr_has() { grep -q -- "$2" "$work/$1.err"; }

# Inputs made from the vector: as given, base64url unpadded, a field missing, bad base64.
python3 - "$vector" "$work" <<'PY'
import json, sys, base64
v = json.load(open(sys.argv[1])); w = sys.argv[2]
base = {"attestationObject": v["attestationObject_b64"], "keyId": v["keyId_b64"],
        "clientDataHash": v["clientDataHash_b64"], "teamId": v["teamId"], "bundleId": v["bundleId"],
        "environment": "production", "capturedBy": "ignored field"}
def url(s): return base64.urlsafe_b64encode(base64.b64decode(s)).decode().rstrip("=")
def write(name, obj): json.dump(obj, open(f"{w}/{name}.json", "w"))
write("apple", base)
write("apple-url", {**base, **{k: url(base[k]) for k in ("attestationObject", "keyId", "clientDataHash")}})
write("missing-keyid", {k: x for k, x in base.items() if k != "keyId"})
write("bad-base64", {**base, "attestationObject": "o2Nm*bXRv"})
write("dev-only", {**base, "environment": "development"})
write("bad-env", {**base, "environment": "staging"})
PY

run ok verify attestation --input "$work/apple.json" --at 2026-04-21T12:00:00Z --json
check_cmd "Apple sample verifies at 2026-04-21T12:00:00Z (exit 0)" rc ok 0
check_cmd "JSON: valid true, environment production" json_is ok 'j["valid"] is True and j["environment"] == "production"'
check_cmd "JSON: publicKey is the 65-byte point whose SHA-256 is the keyId" python3 - "$work/ok.out" "$vector" <<'PY'
import json, sys, base64, hashlib
j = json.load(open(sys.argv[1])); v = json.load(open(sys.argv[2]))
point = base64.b64decode(j["publicKey"])
sys.exit(0 if len(point) == 65 and point[0] == 4 and hashlib.sha256(point).digest() == base64.b64decode(v["keyId_b64"]) else 1)
PY
check_cmd "JSON: every step passed" json_is ok 'all(s["result"] == "pass" for s in j["steps"]) and len(j["steps"]) == 8'

run human verify attestation --input "$work/apple.json" --at 2026-04-21T12:00:00Z
check_cmd "human output says VALID and lists the steps" grep -q "attestation: VALID" "$work/human.out"

run late verify attestation --input "$work/apple.json" --at 2026-05-01T00:00:00Z --json
check_cmd "Apple sample fails on 2026-05-01 (exit 1)" rc late 1
check_cmd "JSON: valid false, code certificate_chain" json_is late 'j["valid"] is False and j["code"] == "certificate_chain"'
check_cmd "JSON: steps after the chain did not run" json_is late '[s["result"] for s in j["steps"]][1:3] == ["fail", "not run"]'

run late-human verify attestation --input "$work/apple.json" --at 2026-05-01T00:00:00Z
check_cmd "human output marks the failing step and the rest not run" \
  bash -c "grep -q 'FAIL' '$work/late-human.out' && grep -q 'not run' '$work/late-human.out'"

run stdin-url verify attestation --input - --at 2026-04-21T12:00:00Z --json <"$work/apple-url.json"
check_cmd "stdin input with base64url, unpadded fields verifies (exit 0)" rc stdin-url 0

run missing verify attestation --input "$work/missing-keyid.json" --at 2026-04-21T12:00:00Z
check_cmd "a missing field gives exit 2" rc missing 2
check_cmd "the message names the missing field (keyId)" stderr_has missing '"keyId" is missing'

run badb64 verify attestation --input "$work/bad-base64.json" --at 2026-04-21T12:00:00Z
check_cmd "bad base64 gives exit 2" rc badb64 2
check_cmd "the message names the field (attestationObject)" stderr_has badb64 '"attestationObject" is not base64'

run badenv verify attestation --input "$work/bad-env.json" --at 2026-04-21T12:00:00Z
check_cmd "an unknown environment gives exit 2 naming the field" bash -c "[ \"\$(cat '$work/badenv.rc')\" = 2 ] && grep -q environment '$work/badenv.err'"

run nofile verify attestation --input "$work/does-not-exist.json"
check_cmd "an unreadable file gives exit 2" rc nofile 2

run devonly verify attestation --input "$work/dev-only.json" --at 2026-04-21T12:00:00Z --json
check_cmd "a development-only policy rejects the production key (exit 1, environment)" \
  bash -c "[ \"\$(cat '$work/devonly.rc')\" = 1 ] && python3 -c 'import json,sys; sys.exit(json.load(open(sys.argv[1]))[\"code\"] != \"environment\")' '$work/devonly.out'"

run appleroot verify attestation --input "$work/apple.json" --at 2026-04-21T12:00:00Z \
  --trust-root Tests/AttestCoreTests/Vectors/Apple_App_Attestation_Root_CA.pem
check_cmd "--trust-root naming Apple's root verifies (exit 0)" rc appleroot 0

if command -v openssl >/dev/null; then
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-384 -nodes -subj "/CN=Not Apple" -days 2 \
    -keyout "$work/other.key" -out "$work/other.pem" 2>/dev/null
  run otherroot verify attestation --input "$work/apple.json" --at 2026-04-21T12:00:00Z --trust-root "$work/other.pem" --json
  check_cmd "--trust-root with another root replaces Apple's (exit 1, certificate_chain)" \
    bash -c "[ \"\$(cat '$work/otherroot.rc')\" = 1 ] && grep -q certificate_chain '$work/otherroot.out'"
else
  echo "SKIP: --trust-root with another root (no openssl command)"
fi

# Assertions made by Python: nonce = SHA-256(authenticatorData || clientDataHash), signed with
# ECDSA P-256 / SHA-256 over the nonce, CBOR {"signature", "authenticatorData"}.
if python3 -c 'import cryptography' 2>/dev/null; then
  python3 - "$work" <<'PY'
import json, sys, base64, hashlib
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives import hashes, serialization
w = sys.argv[1]
key = ec.generate_private_key(ec.SECP256R1())
pub = key.public_key()
point = pub.public_bytes(serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)
pem = pub.public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo).decode()
app = "ABCDE12345.com.example.e2e"
cdh = hashlib.sha256(b"e2e challenge").digest()
auth = hashlib.sha256(app.encode()).digest() + bytes([0]) + (5).to_bytes(4, "big")
sig = key.sign(hashlib.sha256(auth + cdh).digest(), ec.ECDSA(hashes.SHA256()))
def bstr(b): return (bytes([0x58, len(b)]) if len(b) < 256 else bytes([0x59]) + len(b).to_bytes(2, "big")) + b
def tstr(s): return bytes([0x60 + len(s)]) + s.encode() if len(s) < 24 else bytes([0x78, len(s)]) + s.encode()
cbor = bytes([0xA2]) + tstr("signature") + bstr(sig) + tstr("authenticatorData") + bstr(auth)
base = {"assertion": base64.b64encode(cbor).decode(), "clientDataHash": base64.b64encode(cdh).decode(),
        "publicKey": pem, "teamId": "ABCDE12345", "bundleId": "com.example.e2e", "previousCounter": 4}
json.dump(base, open(f"{w}/assert.json", "w"))
json.dump({**base, "publicKey": base64.b64encode(point).decode()}, open(f"{w}/assert-point.json", "w"))
json.dump({**base, "previousCounter": 5}, open(f"{w}/assert-replay.json", "w"))
json.dump({**base, "bundleId": "com.example.other"}, open(f"{w}/assert-otherapp.json", "w"))
json.dump({**base, "clientDataHash": base64.b64encode(hashlib.sha256(b"other").digest()).decode()}, open(f"{w}/assert-othercdh.json", "w"))
json.dump({k: x for k, x in base.items() if k != "previousCounter"}, open(f"{w}/assert-nocounter.json", "w"))
PY
  run a-ok verify assertion --input "$work/assert.json" --json
  check_cmd "assertion signed by Python verifies with its PEM key (exit 0, counter 5)" \
    bash -c "[ \"\$(cat '$work/a-ok.rc')\" = 0 ] && python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); sys.exit(not (j[\"valid\"] and j[\"counter\"] == 5))' '$work/a-ok.out'"
  run a-point verify assertion --input "$work/assert-point.json"
  check_cmd "the same assertion verifies with the base64 X9.62 point (exit 0)" rc a-point 0
  run a-replay verify assertion --input "$work/assert-replay.json" --json
  check_cmd "previousCounter equal to the counter fails (exit 1, counter)" bash -c "[ \"\$(cat '$work/a-replay.rc')\" = 1 ] && grep -q '\"code\":\"counter\"' '$work/a-replay.out'"
  run a-app verify assertion --input "$work/assert-otherapp.json" --json
  check_cmd "another bundle id fails (exit 1, rp_id_hash)" bash -c "[ \"\$(cat '$work/a-app.rc')\" = 1 ] && grep -q rp_id_hash '$work/a-app.out'"
  run a-cdh verify assertion --input "$work/assert-othercdh.json" --json
  check_cmd "another clientDataHash fails (exit 1, signature)" bash -c "[ \"\$(cat '$work/a-cdh.rc')\" = 1 ] && grep -q '\"code\":\"signature\"' '$work/a-cdh.out'"
  run a-nocounter verify assertion --input "$work/assert-nocounter.json"
  check_cmd "a missing previousCounter gives exit 2 naming it" bash -c "[ \"\$(cat '$work/a-nocounter.rc')\" = 2 ] && grep -q previousCounter '$work/a-nocounter.err'"
else
  echo "SKIP: assertion checks (python3 cryptography is not installed; nginx/scripts/deps.sh installs it)"
fi

# Receipts (issue #40): the receipt inside Apple's sample, as DER and as base64, at its time and
# after its signing certificate expired; a tampered copy; a file that is neither.
python3 - "$vector" "$work" <<'PY'
import json, sys, base64
v = json.load(open(sys.argv[1])); w = sys.argv[2]
obj = base64.b64decode(v["attestationObject_b64"])
at = obj.index(b"\x67receipt") + 8          # the text key "receipt", then its byte string
head = obj[at]
assert head >> 5 == 2, "the receipt is a CBOR byte string"
n = head & 0x1F
length, start = (obj[at + 1], at + 2) if n == 24 else (int.from_bytes(obj[at + 1:at + 3], "big"), at + 3) if n == 25 else (n, at + 1)
receipt = obj[start:start + length]
open(f"{w}/receipt.der", "wb").write(receipt)
open(f"{w}/receipt.b64", "w").write(base64.b64encode(receipt).decode() + "\n")
i = receipt.index(b"1234567890.com.example.myapp")
open(f"{w}/receipt-tampered.der", "wb").write(receipt[:i] + b"2" + receipt[i + 1:])
open(f"{w}/not-a-receipt.txt", "w").write("hello, receipt\n")
PY
run r-der verify receipt --input "$work/receipt.der" --at 2026-04-21T18:20:00Z --json
check "Apple's sample receipt (DER) verifies against G3 (exit 0)" "rc r-der 0" "$(cat "$work/r-der.err")"
check "its JSON names type, app, environment, times, no risk metric, the credential's hash" \
  "json_is r-der 'j[\"valid\"] and j[\"type\"] == \"ATTEST\" and j[\"appId\"] == \"1234567890.com.example.myapp\" and j[\"environment\"] == \"production\" and j[\"createdAt\"] == \"2026-04-21T18:13:12Z\" and j[\"expiresAt\"] == \"2026-07-20T18:13:12Z\" and j[\"notBefore\"] is None and j[\"riskMetric\"] is None and len(j[\"credentialCertSha256\"]) == 64'" \
  "$(cat "$work/r-der.out")"
run r-b64 verify receipt --input "$work/receipt.b64" --at 2026-04-21T18:20:00Z
check "the same receipt as base64 text verifies (exit 0) and prints its fields" \
  "rc r-b64 0 && grep -q 'type *ATTEST' '$work/r-b64.out' && grep -q 'riskMetric *-' '$work/r-b64.out'"
run r-late verify receipt --input "$work/receipt.der" --at 2027-03-01T00:00:00Z --json
check "after the signing certificate expired it is invalid (exit 1, receipt_chain)" \
  "rc r-late 1 && json_is r-late 'not j[\"valid\"] and j[\"code\"] == \"receipt_chain\" and j[\"appId\"] is None'"
run r-tampered verify receipt --input "$work/receipt-tampered.der" --at 2026-04-21T18:20:00Z --json
check "one changed byte of the signed payload is invalid (exit 1, receipt_signature)" \
  "rc r-tampered 1 && json_is r-tampered 'j[\"code\"] == \"receipt_signature\"'"
run r-root verify receipt --input "$work/receipt.der" --at 2026-04-21T18:20:00Z --trust-root Tests/AttestCoreTests/Vectors/Apple_App_Attestation_Root_CA.pem --json
check "against the App Attestation root instead of G3 it is invalid (exit 1, receipt_chain)" \
  "rc r-root 1 && json_is r-root 'j[\"code\"] == \"receipt_chain\"'"
run r-junk verify receipt --input "$work/not-a-receipt.txt"
check "a file that is neither DER nor base64 is unusable input (exit 2, says what it expected)" \
  "rc r-junk 2 && stderr_has r-junk 'neither a DER receipt'"
run r-none verify receipt --input "$work/absent.der"
check "a missing file is unusable input (exit 2)" "rc r-none 2"

# A real sandbox RECEIPT (risk metric 3) from the public fixtures (Tests/Fixtures/Receipts, see
# NOTICE): verified at the time its source recorded it, every field compared with what the source
# states, and the credential certificate's SHA-256 with one taken from OpenSSL's own reading of
# the payload (`openssl cms`, no AttestEdge code), then refused after its signing certificate expired.
fixtures=Tests/Fixtures/Receipts/receipts.json
python3 - "$fixtures" "$work" <<'PY'
import json, sys, base64, datetime
f = next(r for r in json.load(open(sys.argv[1]))["receipts"] if r["name"] == "veehaitch ios-14.4 RECEIPT risk 3")
w = sys.argv[2]
open(f"{w}/real.b64", "w").write(f["receipt_b64"] + "\n")
open(f"{w}/real.der", "wb").write(base64.b64decode(f["receipt_b64"]))
json.dump(f, open(f"{w}/real.json", "w"))
open(f"{w}/real.at", "w").write(f["recordedAt"])
late = datetime.datetime.fromisoformat(f["signingCertificate"]["notAfter"].replace("Z", "+00:00")) + datetime.timedelta(seconds=1)
open(f"{w}/real.late", "w").write(late.strftime("%Y-%m-%dT%H:%M:%SZ"))
PY
real_cert_sha256() {  # SHA-256 of field 3 (the credential certificate) of the payload OpenSSL extracts
  openssl cms -verify -noverify -binary -inform DER -in "$work/real.der" -out "$work/real.payload" 2>/dev/null &&
  python3 - "$work/real.payload" <<'PY'
import sys, hashlib
b = open(sys.argv[1], "rb").read()
def tlv(b, i):
    t, l, i = b[i], b[i + 1], i + 2
    if l & 0x80:
        n = l & 0x7F; l = int.from_bytes(b[i:i + n], "big"); i += n
    return t, b[i:i + l], i + l
_, body, _ = tlv(b, 0)
i = 0
while i < len(body):
    _, attribute, i = tlv(body, i)
    _, kind, j = tlv(attribute, 0); _, _, j = tlv(attribute, j); _, value, _ = tlv(attribute, j)
    if int.from_bytes(kind, "big") == 3: print(hashlib.sha256(value).hexdigest())
PY
}
run r-real verify receipt --input "$work/real.b64" --at "$(cat "$work/real.at")" --json
check "a public sandbox RECEIPT verifies at its recorded time (exit 0)" "rc r-real 0" "$(cat "$work/r-real.err")"
check "its JSON has the source's type, app, environment, times and risk metric 3" \
  "python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); e=json.load(open(sys.argv[2]))[\"expected\"]; s=lambda t: t[:19]+\"Z\"; sys.exit(not (j[\"valid\"] and j[\"type\"] == e[\"type\"] == \"RECEIPT\" and j[\"appId\"] == e[\"appId\"] and j[\"environment\"] == e[\"environment\"] and j[\"createdAt\"] == s(e[\"createdAt\"]) and j[\"notBefore\"] == s(e[\"notBefore\"]) and j[\"expiresAt\"] == s(e[\"expiresAt\"]) and j[\"riskMetric\"] == e[\"riskMetric\"] == 3))' '$work/r-real.out' '$work/real.json'" \
  "$(cat "$work/r-real.out")"
if command -v openssl >/dev/null; then
  openssl_sha=$(real_cert_sha256)
  attestctl_sha=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get("credentialCertSha256"))' "$work/r-real.out" 2>/dev/null)
  check "its credentialCertSha256 is the SHA-256 of field 3 as OpenSSL reads the payload" \
    '[ ${#openssl_sha} = 64 ] && [ "$openssl_sha" = "$attestctl_sha" ]' "openssl: $openssl_sha, attestctl: $attestctl_sha"
else
  echo "SKIP: the credential certificate's hash through OpenSSL (no openssl command)"
fi
run r-real-late verify receipt --input "$work/real.der" --at "$(cat "$work/real.late")" --json
check "a second after its signing certificate expired it is invalid (exit 1, receipt_chain)" \
  "rc r-real-late 1 && json_is r-real-late 'j[\"code\"] == \"receipt_chain\"'"

check_summary verify
