import AttestCore
import AttestStore
import FastCGI

/// `POST /api/v1/attestation/validate`: verify an attestation, store the device, return a token.
///
/// ```
/// → {"challenge", "keyId", "attestationObject", "clientDataHash", "bundleId", "teamId",
///    "deviceModel"?, "osVersion"?, "appVersion"?, "appBuildNumber"?, "platform"?,
///    "deviceFingerprint"?, "subjectId"?}
/// ← 200 {"isValid": true, "token", "expiresAt",
///        "deviceIntelligence": {"deviceId", "riskScore" (null on free), "riskCategory", "deviceIntegrity",
///                               "jailbreakDetected", "attestationCount", "lastAttestationDate"},
///        "customClaims": {string: string}}
/// ```
/// Steps in SPEC §2 order, each with its code: app and rate limits; decoding (`key_id_invalid`,
/// `attestation_object_invalid`, `client_data_hash_invalid`); the challenge; Apple's nine
/// steps (`apple_validation_failed`, the log names the step); a keyId already attested; then
/// one write transaction consuming the challenge and storing the device.
public enum ValidateEndpoint {
    public static func handle(_ request: Request, _ ctx: ServiceContext) -> Response {
        ctx.respond(request, endpoint: "validate") { try validate(request, ctx) }
    }

    enum Outcome {
        case stored(DeviceRecord, fingerprintKeys: UInt32)
        case alreadyAttested
        case challengeUsed
    }

    static func validate(_ request: Request, _ ctx: ServiceContext) throws -> Response {
        try requirePOST(request, "/api/v1/attestation/validate")
        let now = ctx.clock.now()
        // 1. App, rate limits.
        let app = try ctx.appContext(request)!
        try ctx.enforceRateLimits(org: app.org, clientIP: request.remoteAddress, now: now)
        // 2. Decoding.
        let fields = try RequestFields(body: request.body)
        guard let bundleID = try fields.string("bundleId"), let teamID = try fields.string("teamId") else {
            throw ServiceError(.badRequest, "The fields bundleId and teamId are required.")
        }
        guard bundleID == app.app.bundleID, teamID == app.app.teamID else {
            throw ServiceError(.badRequest, "bundleId and teamId in the body must equal the X-Bundle-ID and X-Team-ID headers.")
        }
        guard let keyID = try fields.string("keyId").flatMap({ RequestFields.base64($0, count: 32) }) else {
            throw ServiceError(.keyIDInvalid, "keyId must be the base64 key identifier from DCAppAttestService.generateKey() (32 bytes).")
        }
        guard let objectBytes = try fields.string("attestationObject").flatMap({ RequestFields.base64($0) }),
              let objectCBOR = try? CBORReader.decode(objectBytes[...]), objectCBOR.mapEntries != nil else {
            throw ServiceError(.attestationObjectInvalid, "attestationObject must be the base64-encoded CBOR object from attestKey().")
        }
        guard let challenge = try fields.string("challenge") else {
            throw ServiceError.challengeInvalid(log: "no challenge field")
        }
        guard let clientDataHash = try fields.string("clientDataHash").flatMap({ RequestFields.base64($0, count: 32) }),
              clientDataHash == SHA256.hash(challenge.utf8) else {
            throw ServiceError(.clientDataHashInvalid, "clientDataHash must be the base64 SHA-256 of the challenge string.")
        }
        // 3. Challenge.
        let token = try ctx.checkChallenge(challenge, appID: app.app.appID, now: now)
        // 4. Apple's verification.
        let verified: VerifiedAttestation
        do {
            verified = try ctx.attestationVerifier.verify(AttestationObject(cbor: objectCBOR), keyID: keyID, clientDataHash: clientDataHash,
                                                         appID: app.app.appID, policy: app.app.policy, at: now)
        } catch {
            try ctx.consumeAlone(token, now: now)
            throw ServiceError.appleValidationFailed(log: "step \(error.code.rawValue): \(error.reason)")
        }
        // 5–7. One transaction: consume the challenge, refuse a known key, store the device.
        let metadata = DeviceRecord.Metadata(
            deviceModel: try fields.optionalText("deviceModel") ?? "", osVersion: try fields.optionalText("osVersion") ?? "",
            appVersion: try fields.optionalText("appVersion") ?? "", appBuildNumber: try fields.optionalText("appBuildNumber") ?? "",
            platform: try fields.optionalText("platform") ?? "")
        let fingerprint = try fields.optionalText("deviceFingerprint") ?? ""
        let subjectID = try fields.optionalText("subjectId") ?? ""
        let outcome: Outcome = try ctx.store.write { txn in
            guard try ctx.consume(token, in: txn, now: now) else { return .challengeUsed }
            guard try txn.device(keyID: keyID) == nil else { return .alreadyAttested }
            let keys = fingerprint.isEmpty ? 1 : try txn.noteFingerprint(fingerprint, keyID: keyID)
            let device = DeviceRecord(keyID: keyID, deviceID: DeviceIdentity.deviceID(keyID: keyID), appID: app.app.appID,
                                      publicKey: verified.publicKey, counter: verified.signCount, environment: verified.environment,
                                      attestationCount: keys, createdAt: now, fingerprint: fingerprint, subjectID: subjectID,
                                      metadata: metadata, validationCategory: verified.validationCategory,
                                      bundleVersion: verified.bundleVersion ?? "")
            try txn.put(device)
            try txn.putReceipt(verified.receipt, keyID: keyID)
            try ctx.recordActivity(.attested(new: true), device: device, app: app, in: txn, now: now)
            return .stored(device, fingerprintKeys: keys)
        }
        switch outcome {
        case .challengeUsed:
            throw ServiceError.challengeAlreadyUsed
        case .alreadyAttested:
            throw ServiceError.appleValidationFailed(log: "keyId already attested (attestations are single-use)")
        case .stored(let device, let keys):
            let issued = try ctx.issueToken(device: device, app: app, fingerprintKeys: keys, now: now)
            let intelligence: JSONValue = .object([
                ("deviceId", .string(device.deviceID)),
                ("riskScore", app.org.tier == .free ? .null : .int(Int64(issued.risk.score))),
                ("riskCategory", .string(issued.risk.category)),
                ("deviceIntegrity", .string(issued.risk.deviceIntegrity)),
                ("jailbreakDetected", .bool(issued.risk.jailbreakDetected)),
                ("attestationCount", .int(Int64(device.attestationCount))),
                ("lastAttestationDate", .string(device.lastAttestedAt.iso8601)),
            ])
            return ServiceContext.json(.object([
                ("isValid", true), ("token", .string(issued.token)), ("expiresAt", .string(issued.expiresAt.iso8601)),
                ("deviceIntelligence", intelligence), ("customClaims", CustomClaims.flattened(issued.customClaims)),
            ]))
        }
    }

    static func requirePOST(_ request: Request, _ path: String) throws {
        guard request.method == "POST" else { throw ServiceError(.methodNotAllowed, "Use POST for \(path).") }
        guard !request.bodyTooLarge else {
            throw ServiceError(.payloadTooLarge, "The request body is too large.", hint: "Bodies are limited to 64 KiB.")
        }
    }
}

extension ServiceError {
    static func appleValidationFailed(log: String) -> ServiceError {
        ServiceError(.appleValidationFailed,
                     "Attestation failed cryptographic validation: wrong Bundle/Team ID, a reused or tampered attestation, or a certificate chain failure.",
                     hint: "Check the SDK's teamId and the build's bundle identifier; attestation objects are single-use.",
                     log: log)
    }
}
