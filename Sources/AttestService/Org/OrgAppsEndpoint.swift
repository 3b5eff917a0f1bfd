import AttestCore
import AttestStore
import FastCGI

/// The organization's apps (the console's Apps page), served by the org pool; any role may
/// call them (`OrgCaller`, read). Another organization's app id is 404, as an unknown one.
///
/// ```
/// GET  /api/v1/org/apps                         ← {"apps": [app…]} in app id order
/// POST /api/v1/org/apps/:appId/claims-test → {"device_key_id"? | "device_id"? | "profile"?: {…}}
///                                               ← explanation
///
/// app = {"id", "team_id", "bundle_id", "enabled", "created_at",
///        "environments": ["production"?, "development"?] (what App Attest keys the policy accepts),
///        "flag_environments": [name…] (feature flag environments),
///        "policy": {"environment_policy" ("production"|"development"|"both"), "token_lifetime_seconds"
///                   (0: the server's default), "min_app_version", "min_os_version", "subject_links"
///                   (the organization's: "signed"|"operator"|"asserted"),
///                   "apple_risk_metric_threshold", "apple_risk_metric_points"},
///        "custom_claims": [{"key", "value", "when" (`attestctl claims add --when`'s text, or null)}…]
///                        (in order; a later key wins)}
/// explanation = {"risk_score" (null on the free tier), "risk_category",
///                "factors": [{"signal", "points", "detail"}],
///                "claims": [{"key", "value", "when", "applied", "why"}] (each rule, in order),
///                "custom_claims": {key: value} (what a token would carry), "subscription" (or null)}
/// ```
/// claims-test is `attestctl claims test`: a stored device of this app (its keyId, base64 or
/// base64url, or its deviceId; another app's device is 404) or a described profile (the
/// CLI's `--profile`: appVersion, osVersion, platform, deviceModel, environment,
/// attestationCount, subscribed, …), else an empty profile. It changes nothing.
enum OrgAppsEndpoint {
    static let path = "/api/v1/org/apps"

    /// What a call needs: read (a claims test changes nothing).
    static func need(_ request: Request) -> OrgNeed { .read }

    static func route(_ request: Request, _ ctx: ServiceContext) throws -> Response {
        let parts = request.path.dropFirst(path.count).split(separator: "/", omittingEmptySubsequences: false)
            .dropFirst().map(String.init)
        switch parts.count {
        case 0:
            try FeedbackPath.method(request, ["GET"])
            let caller = try OrgCaller.authenticate(request, need(request), ctx)
            return ServiceContext.json(try ctx.store.read { txn in
                let apps = try txn.apps().filter { $0.org == caller.org.name }
                return ["apps": .array(try apps.map { try json($0, org: caller.org, in: txn) })]
            })
        case 2 where parts[1] == "claims-test":
            try FeedbackPath.method(request, ["POST"])
            let caller = try OrgCaller.authenticate(request, need(request), ctx)
            return ServiceContext.json(try claimsTest(appID: parts[0], request, caller, ctx))
        default:
            throw ServiceError(.notFound, "No such app path.", log: "path \(request.path.prefix(120))")
        }
    }

    static func json(_ app: AppRecord, org: OrgRecord, in txn: Transaction) throws -> JSONValue {
        let rules = (try? CustomClaims.parse(app.customClaimsJSON)) ?? []
        let flagEnvironments = try txn.featureFlagApp(appID: app.appID)?.environments.map(\.name) ?? []
        return [
            "id": .string(app.appID), "team_id": .string(app.teamID), "bundle_id": .string(app.bundleID),
            "enabled": .bool(app.enabled), "created_at": .string(app.createdAt.iso8601),
            "environments": .array(AppAttestEnvironment.allCases.filter { app.policy.allows($0) }.map {
                .string($0.rawValue)
            }),
            "flag_environments": .array(flagEnvironments.map { .string($0) }),
            "policy": [
                "environment_policy": .string(app.policy.rawValue),
                "token_lifetime_seconds": .int(Int64(app.tokenLifetimeSeconds)),
                "min_app_version": .string(app.minAppVersion), "min_os_version": .string(app.minOSVersion),
                "subject_links": .string(org.subjectLinks.rawValue),
                "apple_risk_metric_threshold": .int(Int64(app.appleRiskMetricThreshold)),
                "apple_risk_metric_points": .int(Int64(app.appleRiskMetricPoints)),
            ],
            "custom_claims": .array(rules.map {
                ["key": .string($0.key), "value": $0.value, "when": $0.condition.map { .string($0.text) } ?? .null]
            }),
        ]
    }

    static func claimsTest(appID: String, _ request: Request, _ caller: OrgCaller,
                           _ ctx: ServiceContext) throws -> JSONValue {
        let now = ctx.clock.now()
        let org = caller.org
        guard let app = try ctx.store.read({ try $0.app(id: appID) }), app.org == org.name else {
            throw ServiceError(.notFound, "No such app.", log: "app \(appID.prefix(120))")
        }
        let body = request.body.isEmpty ? nil : try JSONBody(request)
        let keyText = try body?.string("device_key_id")
        let deviceID = try body?.string("device_id")
        let profile = body?.members.first { $0.0 == "profile" }?.1
        if let profile, profile.objectValue == nil, !profile.isNull {
            throw ServiceError(.badRequest, "The field profile must be an object.")
        }
        guard [keyText != nil, deviceID != nil, profile.map { !$0.isNull } ?? false].filter({ $0 }).count <= 1 else {
            throw ServiceError(.badRequest, "Give at most one of device_key_id, device_id and profile.")
        }
        let rules = try CustomClaims.parse(app.customClaimsJSON)
        let (assessment, subjectID) = try ctx.store.read { txn -> (DeviceAssessment, String) in
            if keyText != nil || deviceID != nil {
                let found = try keyText.map { text -> DeviceRecord? in
                    guard let bytes = Base64.decode(text), bytes.count == 32 else { return nil }
                    return try txn.device(keyID: bytes)
                } ?? (try deviceID.flatMap { try txn.device(deviceID: $0) })
                guard let device = found, device.appID == app.appID else {
                    throw ServiceError(.notFound, "No such device of \(app.appID).",
                                       log: "claims test device \((keyText ?? deviceID ?? "").prefix(120))")
                }
                return (try DeviceAssessment(device: device, app: app, rules: rules, org: org.name, in: txn, now: now,
                                             explain: true), device.subjectID)
            }
            let described = try DeviceProfile(profileJSON: profile?.jsonText ?? "{}")
            return (DeviceAssessment(profile: described, app: app, rules: rules, explain: true), "")
        }
        let risk = assessment.risk
        return [
            "risk_score": org.tier == .free ? .null : .int(Int64(risk.score)),
            "risk_category": .string(risk.category),
            "factors": risk.factorsJSON,
            "claims": assessment.stepsJSON,
            "custom_claims": .object(assessment.claims),
            "subscription": assessment.subscription(subjectID: subjectID, now: now) ?? .null,
        ]
    }
}
