import AttestCore
import AttestStore
import FastCGI

/// `POST /api/v1/attestation/refresh`: prove possession of an attested key, get a new token.
///
/// ```
/// → {"keyId", "assertion", "clientDataHash", "challenge", "subjectId"?}
/// ← 200 {"token", "expiresAt"}
/// ```
/// 400 `bad_request` (missing field, bad base64, an assertion that is not CBOR), then
/// `client_data_hash_invalid` and the challenge codes: these are decided before the challenge
/// is consumed and charge only the client IP. Then one ephemeral write (rate limits, single
/// use; see `Admission`), and: 404 `not_found` (unknown keyId; 409 with
/// `compat.unknownKeyStatus` = 409); 403 `forbidden` (revoked, or a key whose environment the
/// app's current policy no longer allows); 409 `reattest_required` (bad signature, another app,
/// counter not increasing, or already invalidated). The stored attestation is invalidated
/// only when the assertion's signature verifies with the stored key: a forged assertion from
/// someone who knows only the keyId changes nothing of the device (it counts as a forged
/// assertion, a capped risk signal of its lineage). A device an operator blocked is 403
/// `forbidden`, like a revoked one. The counter advance commits in one
/// transaction that re-checks it, so two refreshes presenting the same counter cannot both
/// succeed.
///
/// Read top to bottom, `refresh` is the whole request; the types it names are the features it
/// uses: `Admission` (rate limits, the challenge's single use), `AppLookup`, `WorkerCaches`
/// (parsed keys), `Prefetch`, `MonthlyCounter`, `SubjectLinks`, `RiskAssessor`, `TokenIssuer`,
/// and `RequestScope.durableWrite` (the final write, alone or grouped: see `refresh`).
public enum RefreshEndpoint {
    enum Outcome {
        case advanced(DeviceRecord, DeviceAssessment)
        /// A refusal, and its `attestedge_refresh_outcomes_total` outcome if it has one;
        /// `invalidated`: the lineage of a device this write invalidated (its flag streams end).
        case failed(ServiceError, outcome: String?, invalidated: LineageKey? = nil)
    }

    /// The body, decoded and checked before the challenge is looked at.
    struct Fields {
        let keyID: [UInt8]
        /// Decoded here, so a body that is not CBOR is a 400 before the challenge is consumed.
        let assertion: Assertion
        let clientDataHash: [UInt8]
        let challenge: String
        /// `nil`: keep the link; "": unlink; else link or move to it, as the organization's
        /// link policy allows (`SubjectLinks.decide`).
        let subjectID: String?

        init(_ body: [UInt8]) throws {
            let fields = try RequestFields(body: body)
            func required(_ name: String, count: Int? = nil) throws -> [UInt8] {
                guard let text = try fields.string(name) else {
                    throw ServiceError(.badRequest, "The field \(name) is required.")
                }
                guard let bytes = RequestFields.base64(text, count: count) else {
                    throw ServiceError(.badRequest,
                                       "The field \(name) must be base64\(count.map { " of \($0) bytes" } ?? "").")
                }
                return bytes
            }
            keyID = try required("keyId", count: 32)
            let encoded = try required("assertion")
            do { assertion = try Assertion(cborEncoded: encoded[...]) } catch {
                throw ServiceError(.badRequest, "assertion must be the base64-encoded CBOR from generateAssertion().",
                                   log: error.reason)
            }
            clientDataHash = try required("clientDataHash", count: 32)
            guard let challenge = try fields.string("challenge") else {
                throw ServiceError(.badRequest, "The field challenge is required.")
            }
            guard clientDataHash == SHA256.hash(challenge.utf8) else {
                throw ServiceError(.clientDataHashInvalid,
                                   "clientDataHash must be the base64 SHA-256 of the challenge string.")
            }
            self.challenge = challenge
            // Omitted (or null) keeps the link; blank unlinks; a value links or moves.
            subjectID = try fields.optionalText("subjectId") ?? (try fields.string("subjectId")).map { _ in "" }
        }
    }

    /// The refresh, in the order a request meets it: the app, the body and the challenge's
    /// HMAC (no store; failures charge the client IP only); one ephemeral write that charges
    /// the rate limits, consumes the challenge and reads the device (`Admission.admit`); the
    /// checks that need no signature; the assertion's ECDSA verification; then the final
    /// durable write (counter, monthly count, subject link, risk score) and the token.
    ///
    /// When the token is signed: only after the final write has committed, by the `then`
    /// closure of `RequestScope.durableWrite`. Answered alone (a responder that holds no
    /// answers, the tests, a store that does not group writes), the write commits at once and
    /// `then` signs right after it. In a pool worker (`GroupCommitter`), `durableWrite` only
    /// queues the write and returns a placeholder the worker never sends; the worker serves the
    /// connections already queued, commits every queued write in one transaction when it would
    /// settle, and then runs each `then`: the token is signed after the group's commit (while
    /// its sync may still be on its way), from what this request's write returned, and the
    /// answer leaves once that commit is durable. A write that fails in the group answers as it
    /// would have alone.
    static func refresh(_ request: Request, _ ctx: ServiceContext, _ scope: inout RequestScope) throws -> Response {
        let now = ctx.clock.now()
        let (app, fields, token) = try Admission.unauthenticated(request, .refresh, now: now, ctx, &scope) {
            try ValidateEndpoint.requirePOST(request, "/api/v1/attestation/refresh",
                                             bodyLimit: ctx.configuration.bodyLimitBytes)
            let app = try AppLookup.app(for: request, ctx)!
            let fields = try Fields(request.body)
            return (app, fields, try Admission.checkChallenge(fields.challenge, appID: app.app.appID, now: now, ctx))
        }
        // The challenge is consumed from here on, whatever follows.
        let keyID = fields.keyID
        // A key of another organization's app is unknown here: answering for it would tell an
        // outsider the state of a device it has no business with, and its events (a forged
        // assertion's anomaly, an invalidation) would go to the wrong organization.
        let stored = try Admission.admit(token, org: app.org, request: request, .refresh, now: now, ctx, &scope,
                                         prefetch: { $0.prefetch(.devices, keyID) }) { txn -> DeviceRecord? in
            guard let device = try txn.device(keyID: keyID) else { return nil }
            if device.appID == app.app.appID { return device }
            return try txn.app(id: device.appID)?.org == app.org.name ? device : nil
        }
        guard let device = stored else {
            throw unknownKey(ctx.configuration.unknownKeyStatus)
        }
        // Checks that need no signature and change nothing.
        if let failure = precheck(device, app: app) {
            ctx.refreshOutcome = precheckOutcome(device)
            throw failure
        }
        let publicKey = try ctx.caches.publicKey(for: device)
        let verified: VerifiedAssertion
        do {
            verified = try AssertionVerifier.verify(fields.assertion, clientDataHash: fields.clientDataHash,
                                                    publicKey: publicKey, appID: app.app.appID,
                                                    previousCounter: device.counter)
        } catch where error.code == .signature || error.code == .assertionFormat {
            // Not signed by the device's key: whoever sent it knows only the keyId. Nothing of
            // the device changes; the anomaly event and the lineage's forged-assertion count
            // (a capped risk signal) are this failure's only write.
            try? ctx.store.write([.durable]) { txn in
                try queueAnomaly(.forgedAssertion, device: device, org: app.org.name, in: txn, now: now, ctx)
                try noteFailure(.forged, device, in: txn, now: now)
            }
            ctx.refreshOutcome = "forged"
            throw reattest("forged assertion for device \(device.deviceID): \(error.reason)")
        } catch {
            // Signed by the device's key, but for another app or with a replayed counter.
            if error.code == .counter { ctx.refreshOutcome = "replay" }
            try invalidate(keyID, ctx: ctx, org: app.org.name, now: now,
                           kind: error.code == .counter ? .counterReplayed : .wrongApp,
                           extra: error.code == .counter ? [("stored_counter", .int(Int64(device.counter)))] : [])
            throw reattest("assertion \(error.code.rawValue): \(error.reason)")
        }
        // The subject link the organization's policy allows: nothing to decide without a
        // subjectId in the body (the common refresh), one HMAC for a signed value.
        let link = SubjectLinks.decide(fields.subjectID, current: device.subjectID, app: app, now: now)
        if case .refused(let why) = link {
            ctx.log("refresh requestId=\(request.requestID) device \(device.deviceID): subject link refused: \(why)")
        }
        // The final write: at once, or with the writes of other requests the worker holds
        // (group commit); the token is signed in `then`, after that commit (see above).
        return try scope.durableWrite(ctx.store, { txn -> Outcome in
            Prefetch.deviceWrite(device, org: app.org.name, now: now, in: txn)
            guard var current = try txn.device(keyID: keyID) else {
                return .failed(unknownKey(ctx.configuration.unknownKeyStatus), outcome: nil)
            }
            if let failure = precheck(current, app: app) {
                return .failed(failure, outcome: precheckOutcome(current))
            }
            // The signature verified: a key registered for another app presented here is the
            // device's own doing (or a stolen key), and invalidates.
            guard current.appID == app.app.appID, verified.counter > current.counter else {
                let invalidated = try invalidate(&current, in: txn, now: now)
                if invalidated {
                    try queueAnomaly(current.appID != app.app.appID ? .wrongApp : .counterReplayed, device: current,
                                     org: app.org.name, in: txn, now: now, ctx,
                                     extra: [("stored_counter", .int(Int64(current.counter))),
                                             ("presented_counter", .int(Int64(verified.counter)))])
                }
                return .failed(reattest(current.appID != app.app.appID
                    ? "key registered for \(current.appID), presented for \(app.app.appID)"
                    : "counter \(verified.counter) is not above the stored \(current.counter)"),
                    outcome: current.appID == app.app.appID ? "replay" : nil,
                    invalidated: invalidated ? LineageKey.of(current) : nil)
            }
            // A device not yet counted this month is admitted (or refused) before it advances.
            if !ablated("no-write"), case .refused(let limit, let current) = try MonthlyCounter.countActive(
                .device(current), appID: app.app.appID, org: app.org, in: txn, now: now, ctx) {
                return .failed(.quotaExceeded(limit: limit, current: current, org: app.org,
                                              compatStatus: ctx.configuration.madLimitStatus), outcome: nil)
            }
            current.counter = verified.counter
            current.lastSeenAt = now
            if case .link(let subjectID, let verified) = link, subjectID != current.subjectID {
                try txn.link(&current, to: subjectID, org: app.org.name, now: now, verified: verified)
            }
            let assessment = try RiskAssessor.assess(&current, app: app, in: txn, now: now, ctx)
            // The lineage is what an operator flagged: a key beyond the mirrored ones is refused
            // too, and thrown, not returned, so the month's count and the subject link written
            // above roll back with everything else (a refused refresh changes nothing).
            if assessment.profile.flags.contains(.blocked) {
                // Said here, as the throw rolls the write back (a PostgreSQL retry of the
                // transaction says it again: it is counted once, when the answer leaves).
                ctx.refreshOutcome = "blocked"
                throw blocked(current)
            }
            if !ablated("no-write") {
                try txn.put(current)
                try txn.countActivity(.refresh, org: app.org.name, at: now)
            }
            return .advanced(current, assessment)
        }, then: { outcome in
            switch outcome {
            case .failed(let failure, let kind, let invalidated):
                if let invalidated { closeFlagStreams(lineage: invalidated, ctx) }
                ctx.refreshOutcome = kind
                throw failure
            case .advanced(let device, let assessment):
                #if ATTEST_ABLATE
                if Ablation.has("no-token") {
                    let placeholder = String(repeating: "x", count: 760)
                    return ServiceContext.json(["token": .string(placeholder), "expiresAt": .string(now.iso8601)])
                }
                #endif
                let issued = try TokenIssuer.issue(device: device, app: app, assessment: assessment, now: now, ctx)
                ctx.refreshOutcome = "ok"
                return ServiceContext.json(["token": .string(issued.token),
                                            "expiresAt": .string(issued.expiresAt.iso8601)])
            }
        })
    }

    static func unknownKey(_ status: Int) -> ServiceError {
        if status == 409 { return reattest("unknown keyId (compat.unknownKeyStatus = 409)") }
        return ServiceError(.notFound, "No attestation found for this keyId: the device must attest first.",
                            hint: "Call POST /api/v1/attestation/validate with a fresh attestation.")
    }

    /// Checks on the stored device that need no signature, in the order the client should
    /// see them. None changes stored state.
    static func precheck(_ device: DeviceRecord, app: AppContext) -> ServiceError? {
        switch device.status {
        case .revoked:
            return ServiceError(.forbidden, "The stored attestation for this key has been revoked.",
                                log: "revoked device \(device.deviceID)")
        case .invalidated:
            return reattest("device \(device.deviceID) was invalidated by an earlier failure")
        case .active:
            break
        }
        if device.operatorFlags.contains(.blocked) { return blocked(device) }
        // The app's current policy applies to keys enrolled under an earlier, looser one.
        if device.appID == app.app.appID && !app.app.policy.allows(device.environment) {
            return ServiceError(.forbidden,
                                "This app no longer accepts \(device.environment.rawValue) App Attest keys.",
                                hint: "The app's environment policy is \(app.app.policy.rawValue): use a build signed "
                                      + "for that environment.",
                                log: "device \(device.deviceID) is \(device.environment.rawValue), app policy "
                                     + "\(app.app.policy.rawValue)")
        }
        return nil
    }

    /// The refresh outcome `precheck`'s refusal of `device` counts as: `revoked`, `blocked`, or
    /// none (an invalidated device, an app policy refusal).
    static func precheckOutcome(_ device: DeviceRecord) -> String? {
        if device.status == .revoked { return "revoked" }
        if device.status == .active, device.operatorFlags.contains(.blocked) { return "blocked" }
        return nil
    }

    static func blocked(_ device: DeviceRecord) -> ServiceError {
        ServiceError(.forbidden, "This device has been blocked by the service's operator.",
                     log: "blocked device \(device.deviceID)")
    }

    /// Invalidates an active device in its own write (a failure found outside the final one),
    /// with its `attestation.anomaly` event, then ends its flag streams.
    static func invalidate(_ keyID: [UInt8], ctx: ServiceContext, org: String, now: Timestamp,
                           kind: WebhookEvent.Anomaly, extra: [(String, JSONValue)]) throws {
        let invalidated = try ctx.store.write([.durable]) { txn -> LineageKey? in
            guard var device = try txn.device(keyID: keyID) else { return nil }
            guard try invalidate(&device, in: txn, now: now) else { return nil }
            try queueAnomaly(kind, device: device, org: org, in: txn, now: now, ctx, extra: extra)
            return LineageKey.of(device)
        }
        if let invalidated { closeFlagStreams(lineage: invalidated, ctx) }
    }

    /// Ends this host's flag streams of the lineage of a device just invalidated (after the
    /// commit): its client reconnects and is refused (`FlagStream.close`; the lineage's other
    /// keys reconnect and are served). Failures are logged.
    static func closeFlagStreams(lineage: LineageKey, _ ctx: ServiceContext) {
        guard let sockets = ctx.poolSockets else { return }
        for warning in FlagStream.close(holders: [FlagChannel.holder(lineage: lineage)], socketDirectory: sockets) {
            ctx.log("refresh: \(warning)")
        }
    }

    /// Marks an active device invalidated and counts a failed assertion on its lineage;
    /// `false` when it was not active (nothing changed).
    @discardableResult
    static func invalidate(_ device: inout DeviceRecord, in txn: Transaction, now: Timestamp) throws -> Bool {
        guard device.status == .active else { return false }
        device.status = .invalidated
        device.failedAssertions &+= 1
        try txn.put(device)
        try noteFailure(.failed, device, in: txn, now: now)
        return true
    }

    /// Counts an assertion failure on the device's lineage (a risk signal for 24 hours).
    static func noteFailure(_ kind: LineageRecord.FailureKind, _ device: DeviceRecord, in txn: Transaction,
                            now: Timestamp) throws {
        var lineage = try txn.lineage(of: device)
        lineage.noteFailure(kind, at: now)
        try txn.put(lineage, .of(device))
    }

    static func reattest(_ log: String) -> ServiceError {
        ServiceError(.reattestRequired,
                     "The device's key state has diverged from the server: drop the local key and attest again.",
                     hint: "The SDK (2.0.3+) does this automatically: "
                           + "it clears the keyId and re-runs attestation once.",
                     log: log)
    }

    /// `attestation.anomaly` for a known device: `kind`, the device members, its status after
    /// the request and `failed_assertions`, plus `extra`.
    static func queueAnomaly(_ kind: WebhookEvent.Anomaly, device: DeviceRecord, org: String, in txn: Transaction,
                             now: Timestamp, _ ctx: ServiceContext, extra: [(String, JSONValue)] = []) throws {
        try ctx.queueEvent(.anomaly, org: org, in: txn, now: now, data: EventData.device(device) + [
            ("kind", .string(kind.rawValue)), ("device_status", .string(device.status.name)),
            ("failed_assertions", .int(Int64(device.failedAssertions))),
        ] + extra)
    }

    /// Whether the ablation build (`nginx/bench/ablate.sh`, compiled with `ATTEST_ABLATE`)
    /// switches `part` off; always `false` in every other build.
    @inline(__always)
    static func ablated(_ part: String) -> Bool {
        #if ATTEST_ABLATE
        return Ablation.has(part)
        #else
        return false
        #endif
    }
}
