"""Peer benchmark: pyattest (PyPI) verifying Apple's guide sample attestation on one core.

pyattest validates the chain with pyhanko_certvalidator at the current time; the sample's
leaf has expired, so the validation time is pinned to the vector's `verifyAt` (the same time
`attest-bench verify` uses). pyattest takes the raw challenge and appends its SHA-256 to
authData; this sample appended the raw challenge bytes (see the vector's clientDataHashNote),
so `verify_nonce` is given those bytes as they are: the same work (one SHA-256, one compare). Prints `pyattest_per_s=<rate> seconds=<cpu s> runs=<n>`.
Run pinned to one core: `taskset -c 0 python3 nginx/bench/pyattest_peer.py VECTOR [SECONDS]`.
"""
import asyncio, base64, datetime, json, sys, time

import pyhanko_certvalidator
from pyattest.attestation import Attestation
from pyattest.configs.apple import AppleConfig
from pyattest.verifiers import apple_attestation

vector = json.load(open(sys.argv[1]))
seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 3.0
moment = datetime.datetime.fromisoformat(vector["verifyAt"].replace("Z", "+00:00"))


class PinnedContext(pyhanko_certvalidator.ValidationContext):
    def __init__(self, *args, **kwargs):
        kwargs.setdefault("moment", moment)
        super().__init__(*args, **kwargs)


apple_attestation.ValidationContext = PinnedContext  # the module's own reference


def verify_nonce(self, auth_data, client_data_hash, cert):
    nonce = apple_attestation.sha256(auth_data + client_data_hash).digest()
    if nonce != self._get_extension(self.attestation.config.oid, cert)[2].contents[6:]:
        raise apple_attestation.InvalidNonceException


apple_attestation.AppleAttestationVerifier.verify_nonce = verify_nonce

raw = base64.b64decode(vector["attestationObject_b64"])
key_id = base64.b64decode(vector["keyId_b64"])
client_data_hash = base64.b64decode(vector["clientDataHash_b64"])
config = AppleConfig(key_id=key_id, app_id=vector["appId"], production=vector["environment"] == "production")


async def once():
    attestation = Attestation(raw, client_data_hash, config)
    await attestation.verify()
    assert attestation.verified


async def main():
    await once()  # fails loudly if pyattest does not accept the sample
    runs, start = 0, time.process_time()
    while time.process_time() - start < seconds:
        await once()
        runs += 1
    elapsed = time.process_time() - start
    print(f"pyattest_per_s={runs / elapsed:.1f} seconds={elapsed:.2f} runs={runs}")


asyncio.run(main())
