import AttestCore
import AttestService
import AttestStore
import CLISupport

/// `attestctl device show`: the record, then what a token would say now and why (risk
/// factors with their points), the fingerprint's attestation history and its flag changes.
///
/// `--json` adds `risk {score, category, factors: [{signal, points, detail}]}`,
/// `attestations [{keyId, attestedAt (null when unknown)}]` and
/// `flagChanges [{at, previous, flags, keyId, deviceId, reason}]` and `receipt`
/// (`DeviceReceipt`) to the device's members.
func showDevice(_ device: DeviceRecord, store: Store, json: Bool) throws {
    let at = now()
    let receipt = try store.read { txn in try txn.receiptRecord(keyID: device.keyID) }
    let (assessment, changes, tier) = try store.read { txn -> (DeviceAssessment?, [FlagChange], Tier?) in
        let changes = try txn.flagChanges(.of(device))
        guard let app = try txn.app(id: device.appID), let org = try txn.org(named: app.org) else {
            return (nil, changes, nil)
        }
        let rules = CustomClaims.allowed((try? CustomClaims.parse(app.customClaimsJSON)) ?? [], tier: org.tier)
        return (try DeviceAssessment(device: device, app: app, rules: rules, org: org.name, in: txn, now: at), changes,
                org.tier)
    }
    let history = assessment?.lineage.history ?? []
    let attestations = JSONValue.array(history.map {
        .object([("keyId", .string(Base64.encode($0.keyID))),
                 ("attestedAt", $0.attestedAt.seconds > 0 ? .string($0.attestedAt.iso8601) : .null)])
    })
    let flagChanges = JSONValue.array(changes.map {
        .object([("at", .string($0.at.iso8601)), ("previous", .string($0.previous.names)),
                 ("flags", .string($0.flags.names)), ("keyId", .string(Base64.encode($0.keyID))),
                 ("deviceId", .string($0.deviceID)), ("reason", .string($0.reason))])
    })
    if json {
        var members = deviceJSON(device).objectValue!
        if let a = assessment {
            members.append(("risk", .object([("score", tier == .free ? .null : .int(Int64(a.risk.score))),
                                             ("category", .string(a.risk.category)),
                                             ("factors", a.risk.factorsJSON)])))
            members.append(("fingerprintAttestations", .int(Int64(a.profile.attestationCount))))
        }
        members += [("attestations", attestations), ("flagChanges", flagChanges),
                    ("receipt", DeviceReceipt.json(receipt))]
        Output.out(JSONValue.object(members).prettyJSONText)
        return
    }
    for (k, v) in deviceJSON(device).objectValue! { Output.out("\(Output.pad(k, 20)) \(v.stringValue ?? v.jsonText)") }
    if let a = assessment {
        Output.out("\nrisk \(a.risk.score) (\(a.risk.category))"
                   + "\(tier == .free ? " — tokens carry a null risk_score on the free tier" : "")")
        if a.risk.factors.isEmpty { Output.out("  no contributing factors") }
        for f in a.risk.factors { Output.out("  +\(f.points)  \(Output.pad(f.signal, 26)) \(f.detail)") }
    }
    Output.out("\nattestations of this \(device.fingerprint.isEmpty ? "key" : "fingerprint") "
               + "(\(assessment?.profile.attestationCount ?? 1) key(s), latest \(LineageRecord.historyLimit) kept):")
    for a in history {
        Output.out("  \(a.attestedAt.seconds > 0 ? a.attestedAt.iso8601 : "(date unknown)      ")  "
                   + "\(Base64.encode(a.keyID))\(a.keyID == device.keyID ? "  ← this key" : "")")
    }
    Output.out(changes.isEmpty ? "\nno flag changes" : "\nflag changes:")
    for c in changes {
        Output.out("  \(c.at.iso8601)  \(c.previous.names) → \(c.flags.names)  on \(c.deviceID)"
                   + "\(c.reason.isEmpty ? "" : ": \(c.reason)")")
    }
    for line in DeviceReceipt.lines(receipt) { Output.out(line) }
}
