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
/// Steps in docs/contract.md §2 order, each with its code: the app, every field decoded and checked
/// (`key_id_invalid`, `attestation_object_invalid`, `client_data_hash_invalid`, 400 for a
/// field of the wrong type or past its length limit), the challenge's HMAC (these charge only
/// the client IP's bucket); then one ephemeral write charging the IP and organization buckets
/// and consuming the challenge (see `Admission`); Apple's nine steps (`apple_validation_failed`,
/// the log names the step); the receipt (`ReceiptCheck`: never fails the attestation); a keyId
/// already attested; then one durable write storing the device (its lineage, subject link as
/// the organization's policy allows (`SubjectLinks`), risk score and events) and its receipt,
/// a valid one scheduled for redemption (`receipt_due`), and the lineage's first and latest
/// app versions (`device_versions`, for What's New). A key of a device an operator blocked
/// (`attestctl device flag --block`, inherited through its fingerprint) answers 200 with
/// `isValid: false` and a token saying `risk_category: "blocked"`.
public enum ValidateEndpoint {
    enum Outcome {
        case stored(DeviceRecord, DeviceAssessment)
        case alreadyAttested
        case quotaExceeded(limit: UInt32, current: UInt32)
    }

    /// Everything the body says, decoded and checked before the challenge is looked at, so a
    /// request is refused for its fields before it can consume a challenge.
    struct Fields {
        let keyID: [UInt8]
        let object: CBORValue
        let challenge: String
        let clientDataHash: [UInt8]
        let metadata: DeviceRecord.Metadata
        let fingerprint: String
        let subjectID: String

        init(_ body: [UInt8], app: AppRecord) throws {
            let fields = try RequestFields(body: body)
            guard let bundleID = try fields.string("bundleId"), let teamID = try fields.string("teamId") else {
                throw ServiceError(.badRequest, "The fields bundleId and teamId are required.")
            }
            guard bundleID == app.bundleID, teamID == app.teamID else {
                throw ServiceError(.badRequest,
                                   "bundleId and teamId in the body must equal the X-Bundle-ID and X-Team-ID headers.")
            }
            guard let keyID = try fields.string("keyId").flatMap({ RequestFields.base64($0, count: 32) }) else {
                throw ServiceError(.keyIDInvalid, "keyId must be the base64 key identifier from "
                                                  + "DCAppAttestService.generateKey() (32 bytes).")
            }
            guard let objectBytes = try fields.string("attestationObject").flatMap({ RequestFields.base64($0) }),
                  let object = try? CBORReader.decode(objectBytes[...]), object.mapEntries != nil else {
                throw ServiceError(.attestationObjectInvalid,
                                   "attestationObject must be the base64-encoded CBOR object from attestKey().")
            }
            if let receipt = object[text: "attStmt"]?[text: "receipt"]?.bytesValue,
               receipt.count > FieldLimits.receiptBytes {
                throw ServiceError(.attestationObjectInvalid,
                                   "The attestation's receipt is longer than \(FieldLimits.receiptBytes) bytes.")
            }
            guard let challenge = try fields.string("challenge") else {
                throw ServiceError.challengeInvalid(log: "no challenge field")
            }
            guard let clientDataHash = try fields.string("clientDataHash")
                      .flatMap({ RequestFields.base64($0, count: 32) }),
                  clientDataHash == SHA256.hash(challenge.utf8) else {
                throw ServiceError(.clientDataHashInvalid,
                                   "clientDataHash must be the base64 SHA-256 of the challenge string.")
            }
            self.keyID = keyID
            self.object = object
            self.challenge = challenge
            self.clientDataHash = clientDataHash
            metadata = DeviceRecord.Metadata(
                deviceModel: try fields.optionalText("deviceModel") ?? "",
                osVersion: try fields.optionalText("osVersion") ?? "",
                appVersion: try fields.optionalText("appVersion") ?? "",
                appBuildNumber: try fields.optionalText("appBuildNumber") ?? "",
                platform: try fields.optionalText("platform") ?? "")
            fingerprint = try fields.optionalText("deviceFingerprint") ?? ""
            subjectID = try fields.optionalText("subjectId") ?? ""
        }
    }

    static func validate(_ request: Request, _ ctx: ServiceContext, _ scope: inout RequestScope) throws -> Response {
        let now = ctx.clock.now()
        // 1–3a. App, fields, the challenge's HMAC: failures charge the client IP only.
        let (app, fields, token) = try Admission.unauthenticated(request, .validate, now: now, ctx, &scope) {
            try requirePOST(request, "/api/v1/attestation/validate", bodyLimit: ctx.configuration.bodyLimitBytes)
            let app = try AppLookup.app(for: request, ctx)!
            let fields = try Fields(request.body, app: app.app)
            return (app, fields, try Admission.checkChallenge(fields.challenge, appID: app.app.appID, now: now, ctx))
        }
        // 3b. Rate limits and single use: the challenge is consumed from here on, whatever follows.
        try Admission.admit(token, org: app.org, request: request, .validate, now: now, ctx, &scope) { _ in () }
        // 4. Apple's verification.
        let verified: VerifiedAttestation
        let anchor: DeviceRecord.Anchor
        let attestation: AttestationObject
        do {
            attestation = try AttestationObject(cbor: fields.object)
            (verified, anchor) = try verifyAttestation(attestation, keyID: fields.keyID,
                                                       clientDataHash: fields.clientDataHash, app: app.app,
                                                       at: now, ctx)
        } catch {
            // The challenge is spent and nothing is stored; the event is this failure's only write.
            try? ctx.store.write([.durable]) { txn in
                try ctx.queueEvent(.attestationFailed, org: app.org.name, in: txn, now: now,
                                   data: EventData.device(keyID: fields.keyID,
                                                          deviceID: DeviceIdentity.deviceID(keyID: fields.keyID),
                                                          appID: app.app.appID)
                                       + [("reason", .string("apple_validation_failed")),
                                          ("step", .string(error.code.rawValue))])
            }
            ServiceMetrics.verificationFailure(step: error.code.rawValue)
            throw ServiceError.appleValidationFailed(log: "step \(error.code.rawValue): \(error.reason)")
        }
        // The receipt: checked and stored whatever it holds; it never fails the attestation.
        let deviceID = DeviceIdentity.deviceID(keyID: fields.keyID)
        let receipt = ReceiptCheck.atValidate(verified.receipt, credentialCertificate: attestation.x5c[0],
                                              publicKey: verified.publicKey, appID: app.app.appID, anchor: anchor,
                                              at: now, ctx)
        ServiceMetrics.receiptVerification(receipt.result.name)
        if receipt.result != .valid {
            ctx.log("""
                validate requestId=\(request.requestID) device \(deviceID): receipt \(receipt.result.name): \
                \(receipt.record.reason)
                """)
        }
        // The subject link the organization's policy allows (one HMAC for a signed value); a
        // refused one is logged and the device stored unlinked.
        let link = SubjectLinks.decide(fields.subjectID.isEmpty ? nil : fields.subjectID, current: "",
                                       app: app, now: now)
        if case .refused(let why) = link {
            ctx.log("validate requestId=\(request.requestID) device \(deviceID): subject link refused: \(why)")
        }
        // 5–7. One transaction: refuse a known key, admit and count the device for the month,
        // store it and queue its events. A refusal still commits what admission recorded (the
        // grace, its events); a transaction that throws leaves nothing, events included. At
        // once, or with the writes of other requests the worker holds (group commit).
        let identity = UsageIdentity.device(appID: app.app.appID, fingerprint: fields.fingerprint, deviceID: deviceID)
        return try scope.durableWrite(ctx.store, { txn -> Outcome in
            Prefetch.enrollment(keyID: fields.keyID, deviceID: deviceID, fingerprint: fields.fingerprint,
                                identity: identity, app: app, now: now, in: txn)
            guard try txn.device(keyID: fields.keyID) == nil else {
                try ctx.queueEvent(.anomaly, org: app.org.name, in: txn, now: now,
                                   data: EventData.device(keyID: fields.keyID, deviceID: deviceID, appID: app.app.appID)
                                       + [("kind", .string(WebhookEvent.Anomaly.attestationReplayed.rawValue))])
                return .alreadyAttested
            }
            let fingerprint = fields.fingerprint
            if case .refused(let limit, let current) = try MonthlyCounter.countActive(
                identity, appID: app.app.appID, org: app.org, in: txn, now: now, ctx) {
                return .quotaExceeded(limit: limit, current: current)
            }
            // A new key on a known fingerprint joins its lineage and inherits its operator flags.
            let lineage = fingerprint.isEmpty ? nil : try txn.noteFingerprint(fingerprint, appID: app.app.appID,
                                                                              keyID: fields.keyID, at: now)
            var device = DeviceRecord(keyID: fields.keyID, deviceID: deviceID, appID: app.app.appID,
                                      publicKey: verified.publicKey, counter: verified.signCount,
                                      environment: verified.environment, operatorFlags: lineage?.flags ?? [],
                                      attestationCount: lineage?.keys ?? 1, createdAt: now,
                                      fingerprint: fingerprint, metadata: fields.metadata,
                                      validationCategory: verified.validationCategory,
                                      bundleVersion: verified.bundleVersion ?? "", anchor: anchor)
            device.receiptCheck = receipt.record.check
            if case .link(let subjectID, let verified) = link {
                try txn.link(&device, to: subjectID, org: app.org.name, now: now, verified: verified)
            }
            let assessment = try RiskAssessor.assess(&device, app: app, in: txn, now: now, ctx)
            try queueDeviceEvents(device, orgName: app.org.name, newDevice: (lineage?.keys ?? 1) == 1,
                                  in: txn, now: now, ctx)
            try txn.put(device)
            try txn.put(receipt.record, keyID: fields.keyID)
            try noteAppVersion(device, in: txn, now: now)
            try txn.countActivity(.attestation, org: app.org.name, at: now)
            try ctx.faults.afterValidateWrites?()
            return .stored(device, assessment)
        }, then: { outcome in try answer(outcome, request: request, app: app, now: now, ctx) })
    }

    /// Keeps the lineage's `device_versions` (What's New): its first app version stays, its
    /// latest rises with the version this attestation sent, never falls.
    static func noteAppVersion(_ device: DeviceRecord, in txn: Transaction, now: Timestamp) throws {
        let lineage = LineageKey.of(device)
        if let versions = DeviceVersionsRecord.noting(device.metadata.appVersion,
                                                      stored: try txn.deviceVersions(lineage: lineage), at: now,
                                                      compare: { Versions.compare($0, $1) }) {
            try txn.put(versions, lineage: lineage)
        }
    }

    /// Validate's answer from what its write did.
    private static func answer(_ outcome: Outcome, request: Request, app: AppContext, now: Timestamp,
                               _ ctx: ServiceContext) throws -> Response {
        switch outcome {
        case .alreadyAttested:
            throw ServiceError.appleValidationFailed(log: "keyId already attested (attestations are single-use)")
        case .quotaExceeded(let limit, let current):
            throw ServiceError.quotaExceeded(limit: limit, current: current, org: app.org,
                                             compatStatus: ctx.configuration.madLimitStatus)
        case .stored(let device, let assessment):
            let issued = try TokenIssuer.issue(device: device, app: app, assessment: assessment, now: now, ctx)
            let intelligence: JSONValue = .object([
                ("deviceId", .string(device.deviceID)),
                ("riskScore", app.org.tier == .free ? .null : .int(Int64(issued.risk.score))),
                ("riskCategory", .string(issued.risk.category)),
                ("deviceIntegrity", .string(issued.risk.deviceIntegrity)),
                ("jailbreakDetected", .bool(issued.risk.jailbreakDetected)),
                ("attestationCount", .int(Int64(assessment.profile.attestationCount))),
                ("lastAttestationDate", .string((assessment.lineage.lastAttestedAt ?? device.lastAttestedAt).iso8601)),
            ])
            // A key of a device an operator blocked is stored (its lineage stays blocked) but
            // not valid: the token says risk_category "blocked".
            let valid = !assessment.profile.flags.contains(.blocked)
            if !valid {
                ctx.log("""
                    validate requestId=\(request.requestID) device \(device.deviceID) is blocked by an operator: \
                    isValid false
                    """)
            }
            return ServiceContext.json(.object([
                ("isValid", .bool(valid)), ("token", .string(issued.token)),
                ("expiresAt", .string(issued.expiresAt.iso8601)),
                ("deviceIntelligence", intelligence), ("customClaims", CustomClaims.flattened(issued.customClaims)),
            ]))
        }
    }

    static func requirePOST(_ request: Request, _ path: String, bodyLimit: Int) throws {
        guard request.method == "POST" else { throw ServiceError(.methodNotAllowed, "Use POST for \(path).") }
        guard !request.bodyTooLarge else {
            throw ServiceError(.payloadTooLarge, "The request body is too large.",
                               hint: "Bodies are limited to \(bodyLimit) bytes (server.bodyLimitBytes).")
        }
    }

    /// `device.new` (first key of its fingerprint in the app, or no fingerprint) and
    /// `attestation.completed`, in validate's write transaction.
    static func queueDeviceEvents(_ device: DeviceRecord, orgName: String, newDevice: Bool, in txn: Transaction,
                                  now: Timestamp, _ ctx: ServiceContext) throws {
        let metadata: [(String, JSONValue)] = [
            ("device_model", .string(device.metadata.deviceModel)), ("os_version", .string(device.metadata.osVersion)),
            ("app_version", .string(device.metadata.appVersion)), ("platform", .string(device.metadata.platform)),
        ]
        if newDevice {
            try ctx.queueEvent(.deviceNew, org: orgName, in: txn, now: now,
                               data: EventData.device(device) + metadata
                                   + [("created_at", .string(device.createdAt.iso8601))])
        }
        try ctx.queueEvent(.attestationCompleted, org: orgName, in: txn, now: now,
                           data: EventData.device(device) + metadata + [
            ("attestation_count", .int(Int64(device.attestationCount))), ("new_device", .bool(newDevice)),
            ("attest", .string(device.anchor == .apple ? "hardware" : "test_root")),
            ("subject_id", device.subjectID.isEmpty ? .null : .string(device.subjectID)),
        ])
    }

    /// Apple's nine steps against Apple's root, then (only for a chain failure, and only when
    /// test roots are configured) against the test roots: the anchor says which one verified.
    /// A chain through an intermediate the test roots already verified goes to them first, so
    /// test devices (benchmarks, staging) do not pay a failing chain build against Apple's
    /// root on every attestation; only a chain to a test root can pass there either way.
    static func verifyAttestation(_ object: AttestationObject, keyID: [UInt8], clientDataHash: [UInt8], app: AppRecord,
                                  at now: Timestamp,
                                  _ ctx: ServiceContext) throws(AttestError) -> (VerifiedAttestation,
                                                                                 DeviceRecord.Anchor) {
        let testRootVerifier = ctx.testRootVerifier
        if let testRootVerifier, object.x5c.count == 2,
           testRootVerifier.chainVerifier.hasVerified(intermediateDER: object.x5c[1], at: now) {
            return (try testRootVerifier.verify(object, keyID: keyID, clientDataHash: clientDataHash, appID: app.appID,
                                                policy: app.policy, at: now), .testRoot)
        }
        do {
            return (try ctx.attestationVerifier.verify(object, keyID: keyID, clientDataHash: clientDataHash,
                                                       appID: app.appID, policy: app.policy, at: now), .apple)
        } catch where error.code == .certificateChain && testRootVerifier != nil {
            return (try testRootVerifier!.verify(object, keyID: keyID, clientDataHash: clientDataHash, appID: app.appID,
                                                 policy: app.policy, at: now), .testRoot)
        }
    }
}

extension ServiceError {
    static func appleValidationFailed(log: String) -> ServiceError {
        ServiceError(.appleValidationFailed,
                     "Attestation failed cryptographic validation: wrong Bundle/Team ID, a reused or tampered "
                     + "attestation, or a certificate chain failure.",
                     hint: "Check the SDK's teamId and the build's bundle identifier; attestation objects are "
                           + "single-use.",
                     log: log)
    }
}
