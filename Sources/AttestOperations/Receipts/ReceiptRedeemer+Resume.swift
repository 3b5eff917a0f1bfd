import AttestCore
import AttestStore

extension ReceiptRedeemer {
    /// How many queue entries one transaction of `resume` looks at.
    static let resumeBatch = 256

    /// After `attestctl apple key add` registered a team's key or lifted a 401 stop: the team's
    /// receipts that were put off meanwhile (no key, a key that did not load, the stop) are due
    /// at `now` again instead of an interval later. Walks the queue after `now` in transactions
    /// of `resumeBatch` entries (a large queue never holds the writer long); returns how many
    /// receipts it brought forward. A team's receipts are those of devices whose App ID is `TEAM.…` (as `plan` reads it).
    @discardableResult
    public static func resume(team: String, store: Store, at now: Timestamp) throws -> Int {
        let prefix = team + "."
        var start = BigEndian.bytes(now.seconds + 1)
        var resumed = 0
        while true {
            var listed = [[UInt8]]()
            try store.read { txn in
                try txn.scan(.receiptDue, from: start) { key, _ in
                    listed.append(key)
                    return listed.count < resumeBatch
                }
            }
            guard let last = listed.last else { return resumed }
            resumed += try store.write { txn in
                var n = 0
                for key in listed where key.count == 40 {
                    let keyID = Array(key[8...])
                    guard var record = try txn.receiptRecord(keyID: keyID), record.lastOutcome.hasPrefix(putOff),
                          let previous = record.nextRedeemAt, previous > now,
                          try txn.device(keyID: keyID)?.appID.hasPrefix(prefix) == true else { continue }
                    record.nextRedeemAt = now
                    try txn.put(record, keyID: keyID, previousDue: previous)
                    n += 1
                }
                return n
            }
            guard listed.count == resumeBatch else { return resumed }
            start = last + [0]
        }
    }
}
