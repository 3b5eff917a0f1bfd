import AttestCore
import AttestStore

/// Operator flags (`attestctl device flag KEY --jailbroken | --block | --clear [--reason TEXT]`).
///
/// A flag applies to the device's lineage: every key attested for its fingerprint within the
/// app, including keys attested later (validate copies the lineage's flags onto a new key), so
/// a blocked device that re-attests with a new key stays blocked. The flags are mirrored onto
/// each key's `DeviceRecord` (refresh refuses a blocked key before verifying anything) and
/// every change is appended to `flag_log` with its time and reason, in one transaction.
///
/// Effects: `jailbroken` raises the risk score to at least 80 and sets `jailbreak_detected`;
/// `blocked` makes the score 100, refresh 403 `forbidden` and validate `isValid: false`;
/// `clear` removes both. A new block queues `device_blocked` (unless `webhooks.queueEvents` is
/// false):
/// ```
/// {device members (EventData.device), "fingerprint" (or null), "reason", "flags": ["blocked", …], "blocked_at"}
/// ```
public enum DeviceFlags {
    public enum Action: String, Sendable, CaseIterable {
        case jailbroken, block, clear
    }

    public struct Change: Sendable {
        public let device: DeviceRecord
        public let previous: DeviceRecord.OperatorFlags
        public let flags: DeviceRecord.OperatorFlags
        /// Keys whose records now carry the flags.
        public let keys: Int
    }

    /// Longest reason kept, in UTF-8 bytes.
    public static let reasonBytes = 512

    /// Applies `action` to the lineage of the device with `keyID`; `within` runs first in the
    /// same transaction (the org API's ownership check and audit entry; throwing rolls back).
    /// - Throws: `not_found` for an unknown key, `bad_request` for a reason that is too long.
    public static func apply(_ action: Action, keyID: [UInt8], reason: String, store: Store, random: any RandomSource,
                             now: Timestamp, queueEvents: Bool = true,
                             within: (Transaction) throws -> Void = { _ in }) throws -> Change {
        guard reason.utf8.count <= reasonBytes else {
            throw ServiceError(.badRequest, "--reason is longer than \(reasonBytes) bytes")
        }
        return try store.write([.durable]) { txn in
            try within(txn)
            guard let device = try txn.device(keyID: keyID) else { throw ServiceError(.notFound, "no such device") }
            let key = LineageKey.of(device)
            var lineage = try txn.lineage(of: device)
            let previous = lineage.flags
            switch action {
            case .jailbroken: lineage.flags.insert(.jailbreak)
            case .block: lineage.flags.insert(.blocked)
            case .clear: lineage.flags = []
            }
            try txn.put(lineage, key)
            var mirrored = 0
            var seen = Set<[UInt8]>()
            for k in lineage.history.map(\.keyID) + [keyID] where seen.insert(k).inserted {
                guard var d = try txn.device(keyID: k), d.appID == device.appID else { continue }
                d.operatorFlags = lineage.flags
                try txn.put(d)
                mirrored += 1
            }
            try txn.appendFlagChange(FlagChange(at: now, previous: previous, flags: lineage.flags, keyID: keyID,
                                                deviceID: device.deviceID, reason: reason), key)
            if queueEvents, lineage.flags.contains(.blocked) && !previous.contains(.blocked),
               let org = try txn.app(id: device.appID)?.org {
                // ServiceContext.queueEvent's record, written here: attestctl has no context.
                try txn.enqueue(OutboxEvent(id: "evt_" + Hex.encode(random.bytes(12)),
                                            event: WebhookEvent.deviceBlocked.rawValue, org: org,
                                            createdAt: now, dataJSON: JSONValue.object(EventData.device(device) + [
                                                ("fingerprint",
                                                 device.fingerprint.isEmpty ? .null : .string(device.fingerprint)),
                                                ("reason", .string(reason)),
                                                ("flags", .array(lineage.flags.names.split(separator: ",").map {
                                                    .string(String($0))
                                                })),
                                                ("blocked_at", .string(now.iso8601)),
                                            ]).jsonText))
            }
            return Change(device: device, previous: previous, flags: lineage.flags, keys: mirrored)
        }
    }
}
