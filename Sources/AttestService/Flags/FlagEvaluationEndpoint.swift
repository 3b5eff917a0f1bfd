import AttestCore
import AttestStore
import FastCGI

/// What a device would get from `GET /api/v1/flags` now, and why (the console's "what would
/// this device get"), served by the flags pool; any role (`OrgCaller`, read). The same
/// evaluation as the flags call and `attestctl flags test` (`CompiledFeatureFlags.explain`):
/// overrides, rules, rollouts, defaults, within the tier.
///
/// ```
/// GET /api/v1/org/flag-evaluation?app_id=[&environment=production][&device_key_id= | &device_id=]
/// ← {"environment", "device": summary (OrgDeviceWire) | null, "flags": {key: value} (the answer),
///    "why": {key: the step that decided it}, "steps": {key: [every step, in order]}}
/// ```
/// Without a device the caller is an API-key client with no `X-Device-ID` (no device
/// attributes: rules on them do not match, rollouts do not admit). The targeting headers of a
/// real call (`X-App-Version`, `X-Custom-…`) are not sent here: rules on them do not match.
/// `app_id` and the device must be the caller organization's (404 otherwise, as unknown ones);
/// giving both device parameters is 400.
enum FlagEvaluationEndpoint {
    static let path = "/api/v1/org/flag-evaluation"

    static func evaluate(_ request: Request, _ ctx: ServiceContext) throws -> Response {
        try FeedbackPath.method(request, ["GET"])
        let caller = try OrgCaller.authenticate(request, .read, ctx)
        guard let appID = try FlagsAdminEndpoint.query(request, "app_id") else {
            throw ServiceError(.badRequest, "The query app_id is required.")
        }
        let env = try FlagsAdminEndpoint.query(request, "environment") ?? "production"
        let keyText = try FlagsAdminEndpoint.query(request, "device_key_id", plusIsLiteral: true)
        let deviceID = try FlagsAdminEndpoint.query(request, "device_id")
        guard keyText == nil || deviceID == nil else {
            throw ServiceError(.badRequest, "Give device_key_id or device_id, not both.")
        }
        let now = ctx.clock.now()
        let (compiled, flagCaller, overrides, device) = try ctx.store.read { txn in
            let (app, org) = try FeatureFlagAdmin.app(appID, org: caller.org.name, in: txn)
            let compiled = try CompiledFeatureFlags.build(appID: appID, tier: org.tier, in: txn)
            var device: DeviceRecord?
            if keyText != nil || deviceID != nil {
                let found = try keyText.map { text -> DeviceRecord? in
                    guard let bytes = Base64.decode(text), bytes.count == 32 else { return nil }
                    return try txn.device(keyID: bytes)
                } ?? (try deviceID.flatMap { try txn.device(deviceID: $0) })
                guard let found, found.appID == appID else {
                    throw ServiceError(.notFound, "No such device of \(appID).",
                                       log: "flag evaluation device \((keyText ?? deviceID ?? "").prefix(120))")
                }
                device = found
            }
            let flagCaller: FeatureFlagCaller = try device.map {
                .device(try FeatureFlagDevice.read($0, app: app, org: org, now: now, in: txn))
            } ?? .apiKey(sdkDeviceID: nil)
            let overrides = try device.map {
                try txn.featureFlagOverrides(appID: appID, subject: .device($0.deviceID))
            } ?? []
            return (compiled, flagCaller, overrides, device)
        }
        let explained = compiled.explain(environment: env, caller: flagCaller, targeting: .none, overrides: overrides,
                                         now: now)
        let answer = compiled.answer(environment: env, caller: flagCaller, targeting: .none, overrides: overrides,
                                     now: now)
        return ServiceContext.json([
            "environment": .string(env),
            "device": device.map { .object(OrgDeviceWire.summary($0, tier: caller.org.tier)) } ?? .null,
            "flags": (try? JSONParser.parse(answer))?["flags"] ?? [:],
            "why": .object(explained.map { ($0.key, .string($0.steps.last ?? "left out")) }),
            "steps": .object(explained.map { ($0.key, .array($0.steps.map { .string($0) })) }),
        ])
    }
}
