import AttestCore
import AttestStore

/// Scores a device as its token is issued (`DeviceAssessment`) and queues the event of its
/// entering the `blocked` category.
enum RiskAssessor {
    /// Assesses `device` inside the transaction that stores it, remembers the score on the
    /// device, and queues `device.high_risk` when the device enters the `blocked` category
    /// from a lower one (or with its first token) for any reason but an operator's block,
    /// which queued `device_blocked` itself:
    /// ```
    /// {device members (EventData.device), "risk_score", "risk_category": "blocked",
    ///  "previous_category" (or null), "factors": [{"signal", "points"}]}
    /// ```
    static func assess(_ device: inout DeviceRecord, app: AppContext, in txn: Transaction, now: Timestamp,
                       _ ctx: ServiceContext) throws -> DeviceAssessment {
        let a = try DeviceAssessment(device: device, app: app.app, rules: app.claimRules, org: app.org.name,
                                     in: txn, now: now)
        let previous = device.lastRiskScore.map { RiskAssessment.category(Int($0)) }
        if a.risk.category == "blocked", previous != "blocked", !a.profile.flags.contains(.blocked) {
            try ctx.queueEvent(.highRisk, org: app.org.name, in: txn, now: now, data: EventData.device(device) + [
                ("risk_score", .int(Int64(a.risk.score))), ("risk_category", .string(a.risk.category)),
                ("previous_category", previous.map { .string($0) } ?? .null),
                ("factors",
                 .array(a.risk.factors.map {
                     .object([("signal", .string($0.signal)), ("points", .int(Int64($0.points)))])
                 })),
            ])
        }
        device.lastRiskScore = UInt8(a.risk.score)
        return a
    }
}
