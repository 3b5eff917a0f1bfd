import AttestCore
import AttestStore
import FastCGI

/// `POST /api/v1/attestation/refresh`: prove possession of an attested key, get a new token.
///
/// ```
/// → {"keyId", "assertion", "clientDataHash", "challenge", "subjectId"?}
/// ← 200 {"token", "expiresAt"}
/// ```
/// 400 `bad_request` (missing field, bad base64, not CBOR), `client_data_hash_invalid`,
/// challenge codes; 404 `not_found` (unknown keyId); 403 `forbidden` (revoked); 409
/// `reattest_required` (bad signature, another app, counter not increasing, or already
/// invalidated: the stored attestation is invalidated and stays so until the device attests
/// a new key). The counter advance and the challenge consumption commit together, so two
/// refreshes presenting the same counter cannot both succeed.
public enum RefreshEndpoint {
    public static func handle(_ request: Request, _ ctx: ServiceContext) -> Response {
        ctx.respond(request, endpoint: "refresh") { try refresh(request, ctx) }
    }

    enum Outcome {
        case advanced(DeviceRecord, fingerprintKeys: UInt32)
        case challengeUsed
        case failed(ServiceError)
    }

    static func refresh(_ request: Request, _ ctx: ServiceContext) throws -> Response {
        try ValidateEndpoint.requirePOST(request, "/api/v1/attestation/refresh")
        let now = ctx.clock.now()
        let app = try ctx.appContext(request)!
        try ctx.enforceRateLimits(org: app.org, clientIP: nil, now: now)
        let fields = try RequestFields(body: request.body)
        func required(_ name: String, count: Int? = nil) throws -> [UInt8] {
            guard let text = try fields.string(name) else {
                throw ServiceError(.badRequest, "The field \(name) is required.")
            }
            guard let bytes = RequestFields.base64(text, count: count) else {
                throw ServiceError(.badRequest, "The field \(name) must be base64\(count.map { " of \($0) bytes" } ?? "").")
            }
            return bytes
        }
        let keyID = try required("keyId", count: 32)
        let assertion = try required("assertion")
        let clientDataHash = try required("clientDataHash", count: 32)
        guard let challenge = try fields.string("challenge") else {
            throw ServiceError(.badRequest, "The field challenge is required.")
        }
        guard clientDataHash == SHA256.hash(challenge.utf8) else {
            throw ServiceError(.clientDataHashInvalid, "clientDataHash must be the base64 SHA-256 of the challenge string.")
        }
        let token = try ctx.checkChallenge(challenge, appID: app.app.appID, now: now)
        let subjectID = try fields.optionalText("subjectId")

        guard let device = try ctx.store.read({ try $0.device(keyID: keyID) }) else {
            try ctx.consumeAlone(token, now: now)
            throw ServiceError(.notFound, "No attestation found for this keyId: the device must attest first.",
                               hint: "Call POST /api/v1/attestation/validate with a fresh attestation.")
        }
        // Checks that need no signature: their failures still consume the challenge.
        if let failure = precheck(device, app: app) {
            try ctx.store.write { txn in
                guard try ctx.consume(token, in: txn, now: now) else { return }
                if failure.code == .reattestRequired { try invalidate(keyID, in: txn) }
            }
            throw failure
        }
        let publicKey = try ctx.publicKey(for: device)
        let verified: VerifiedAssertion
        do {
            verified = try AssertionVerifier.verify(assertion: assertion[...], clientDataHash: clientDataHash,
                                                    publicKey: publicKey, appID: app.app.appID, previousCounter: device.counter)
        } catch where error.code == .assertionFormat {
            // Not an assertion at all: refuse it without touching the device.
            try ctx.consumeAlone(token, now: now)
            throw ServiceError(.badRequest, "assertion must be the base64-encoded CBOR from generateAssertion().", log: error.reason)
        } catch {
            try ctx.store.write { txn in
                guard try ctx.consume(token, in: txn, now: now) else { return }
                try invalidate(keyID, in: txn)
            }
            throw reattest("assertion \(error.code.rawValue): \(error.reason)")
        }
        let outcome: Outcome = try ctx.store.write { txn in
            guard try ctx.consume(token, in: txn, now: now) else { return .challengeUsed }
            guard var current = try txn.device(keyID: keyID) else {
                return .failed(ServiceError(.notFound, "No attestation found for this keyId: the device must attest first."))
            }
            if let failure = precheck(current, app: app) {
                if failure.code == .reattestRequired { try invalidate(keyID, in: txn) }
                return .failed(failure)
            }
            guard verified.counter > current.counter else {
                // A concurrent refresh advanced the counter first: this assertion is a replay now.
                try invalidate(keyID, in: txn)
                return .failed(reattest("counter \(verified.counter) is not above the stored \(current.counter)"))
            }
            current.counter = verified.counter
            current.lastSeenAt = now
            if let subjectID { current.subjectID = subjectID }
            try txn.put(current)
            try ctx.recordActivity(.refreshed, device: current, app: app, in: txn, now: now)
            let keys = current.fingerprint.isEmpty ? 1 : max(1, try txn.fingerprintKeyCount(current.fingerprint))
            return .advanced(current, fingerprintKeys: keys)
        }
        switch outcome {
        case .challengeUsed:
            throw ServiceError.challengeAlreadyUsed
        case .failed(let failure):
            throw failure
        case .advanced(let device, let keys):
            let issued = try ctx.issueToken(device: device, app: app, fingerprintKeys: keys, now: now)
            return ServiceContext.json(["token": .string(issued.token), "expiresAt": .string(issued.expiresAt.iso8601)])
        }
    }

    /// Status and app checks, in the order the client should see them.
    static func precheck(_ device: DeviceRecord, app: AppContext) -> ServiceError? {
        switch device.status {
        case .revoked:
            return ServiceError(.forbidden, "The stored attestation for this key has been revoked.", log: "revoked device \(device.deviceID)")
        case .invalidated:
            return reattest("device \(device.deviceID) was invalidated by an earlier failure")
        case .active:
            break
        }
        if device.appID != app.app.appID {
            return reattest("key registered for \(device.appID), presented for \(app.app.appID)")
        }
        return nil
    }

    static func invalidate(_ keyID: [UInt8], in txn: Transaction) throws {
        guard var device = try txn.device(keyID: keyID), device.status == .active else { return }
        device.status = .invalidated
        device.failedAssertions &+= 1
        try txn.put(device)
    }

    static func reattest(_ log: String) -> ServiceError {
        ServiceError(.reattestRequired,
                     "The device's key state has diverged from the server: drop the local key and attest again.",
                     hint: "The SDK (2.0.3+) does this automatically: it clears the keyId and re-runs attestation once.",
                     log: log)
    }
}
