import AttestCore
import AttestService
import AttestStore

extension ReceiptRedeemer {
    /// Records one attempt in one transaction: the team's answer counts and its stop after a
    /// 401; after a 200 the new receipt (`storeRedeemed`), else the receipt's redemption fields
    /// and next time. A receipt replaced meanwhile (the device attested again) keeps its own
    /// schedule.
    func recordAttempt(_ outcome: RedemptionOutcome, fresh: (receipt: AppAttestReceipt, raw: [UInt8])?,
                retryAfter: Int64?, keyID: [UInt8], sent: [UInt8], team: String, at now: Timestamp) throws {
        try store.write { txn in
            var teamRecord = try txn.appleTeam(team) ?? AppleTeamRecord(teamID: team)
            teamRecord.answers[outcome.status, default: 0] += 1
            teamRecord.lastAnswerAt = now
            if outcome.stopsTeam && teamRecord.stoppedAt == nil {
                teamRecord.stoppedAt = now
                teamRecord.stopReason = outcome.text
            }
            try txn.put(teamRecord)
            guard var record = try txn.receiptRecord(keyID: keyID), record.receipt == sent else { return }
            let previous = record.nextRedeemAt
            var outcome = outcome
            if let fresh {
                let next = schedule.next(after: outcome, at: now, failures: 0, notBefore: fresh.receipt.notBefore,
                                         expiresAt: fresh.receipt.expiresAt, jitter: jitter())
                do {
                    return try storeRedeemed(fresh.receipt, fresh.raw, keyID, now, next, txn)
                } catch let error as AttestError {
                    // Refused before it wrote anything: the answer counts as a bad one.
                    outcome = RedemptionOutcome(kind: .unexpected, status: 200, text: "200 refused: \(error)")
                }
            }
            record.failures = outcome.backsOff ? record.failures == .max ? .max : record.failures + 1 : 0
            record.lastAttemptAt = now
            record.lastStatus = outcome.status
            record.lastOutcome = outcome.text
            record.nextRedeemAt = schedule.next(after: outcome, at: now, failures: Int(record.failures),
                                                notBefore: record.notBefore, expiresAt: record.expiresAt,
                                                retryAfter: retryAfter, jitter: jitter())
            try txn.put(record, keyID: keyID, previousDue: previous)
        }
    }
}
