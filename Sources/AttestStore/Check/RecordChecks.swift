/// What `Store.check()` verifies in each database: one entry per database, keyed by the
/// database. A database without an entry (one added since) is still counted and scanned,
/// and reported as not checked; adding its line here is all it takes to check it.
///
/// Each check gets one entry, the transaction (to look up the indexes it must agree with)
/// and returns problems; a record that does not decode throws, which counts as a problem.
enum RecordChecks {
    typealias Check = @Sendable (_ key: [UInt8], _ value: [UInt8], _ txn: Transaction) throws -> [String]
    /// A check of a database as a whole, run once after its entries' checks (orphans whose
    /// parent a key does not locate: a vote names its request's id, not its app).
    typealias WholeCheck = @Sendable (_ txn: Transaction) throws -> [String]

    static let table: [Database: Check] = [
        .meta: { key, value, _ in
            key == Array("schema".utf8) && value != [Store.schemaVersion]
                ? ["schema is \(value), this build reads \(Store.schemaVersion)"] : []
        },
        .orgs: { key, value, _ in
            let org = try OrgRecord(encoded: value)
            return key == Array(org.name.utf8) ? [] : ["key is not the organization's name \(org.name)"]
        },
        .apps: { key, value, txn in
            let app = try AppRecord(encoded: value)
            var problems = [String]()
            if key != Array(app.appID.utf8) { problems.append("key is not the App ID \(app.appID)") }
            if try txn.org(named: app.org) == nil {
                problems.append("app \(app.appID) names a missing organization \(app.org)")
            }
            return problems
        },
        .devices: { key, value, txn in
            var device = try DeviceRecord(encoded: value)
            device.keyID = key
            var problems = [String]()
            if key.count != 32 { problems.append("keyId is \(key.count) bytes, not 32") }
            if device.publicKey.count != 65 || device.publicKey.first != 4 {
                problems.append("public key is not an uncompressed P-256 point")
            }
            if try txn.get(.deviceIDs, Array(device.deviceID.utf8)) != key {
                problems.append("device_ids does not map \(device.deviceID) to this key")
            }
            let app = try txn.app(id: device.appID)
            if app == nil { problems.append("device \(device.deviceID) names a missing app \(device.appID)") }
            if !device.subjectID.isEmpty, let app,
               try txn.get(.subjectDevices,
                           Transaction.subjectDigest(org: app.org, subjectID: device.subjectID) + key) == nil {
                problems.append(
                    "device \(device.deviceID) is linked to a subject subject_devices does not list it under")
            }
            if !device.subjectID.isEmpty, let app, try txn.subject(org: app.org, subjectID: device.subjectID) == nil {
                problems.append(
                    "device \(device.deviceID) is linked to subject \(device.subjectID), which has no record")
            }
            return problems
        },
        .subjectDevices: { key, _, txn in
            // SHA-256(org ‖ 0 ‖ subjectID)[0..<16] ‖ keyID (32): the device exists and is linked to that subject.
            guard key.count == 48 else { return ["subject link key of \(key.count) bytes, not 16 + 32"] }
            guard let device = try txn.device(keyID: Array(key[16...])) else { return ["a subject link to no device"] }
            guard !device.subjectID.isEmpty, let app = try txn.app(id: device.appID),
                  Transaction.subjectDigest(org: app.org, subjectID: device.subjectID) == Array(key[..<16]) else {
                return ["a subject link device \(device.deviceID) does not have"]
            }
            return []
        },
        .deviceIDs: { key, value, txn in
            guard let device = try txn.device(keyID: value) else {
                return ["deviceId \(String(decoding: key, as: UTF8.self)) points at no device"]
            }
            return Array(device.deviceID.utf8) == key
                ? [] : ["deviceId \(String(decoding: key, as: UTF8.self)) points at device \(device.deviceID)"]
        },
        .receipts: { key, value, txn in
            // keyID → ReceiptRecord; one to redeem is listed in receipt_due at its next attempt.
            let receipt = try ReceiptRecord(encoded: value)
            var problems = [String]()
            if try txn.get(.devices, key) == nil { problems.append("receipt without a device") }
            if let next = receipt.nextRedeemAt, try txn.get(.receiptDue, BigEndian.bytes(next.seconds) + key) == nil {
                problems.append(
                    "a receipt due at \(next.iso8601) receipt_due does not list: it would never be redeemed")
            }
            return problems
        },
        .receiptDue: { key, value, txn in
            // nextRedeemAt (8) ‖ keyID (32) → empty: a receipt whose next redemption is then.
            guard key.count == 40, value.isEmpty else {
                return ["due entry of \(key.count) bytes (not 8 + 32) with a value of \(value.count)"]
            }
            guard let receipt = try txn.receiptRecord(keyID: Array(key[8...])) else {
                return ["a due entry for no receipt"]
            }
            guard receipt.nextRedeemAt?.seconds == Int64(bitPattern: BigEndian.uint64(key)) else {
                return ["a due entry for a receipt due at another time or not scheduled"]
            }
            return []
        },
        .appleTeams: { key, value, _ in
            _ = try AppleTeamRecord(encoded: value)
            return key.isEmpty ? ["an Apple team with an empty id"] : []
        },
        .featureFlagApps: { key, value, txn in
            // appID → FeatureFlagAppRecord, whose counts the flags domain keeps: equal to a recount.
            let record = try FeatureFlagAppRecord(encoded: value)
            guard !key.isEmpty, !key.contains(0) else { return ["feature flag app key is empty or holds 0x00"] }
            let appID = String(decoding: key, as: UTF8.self), counted = try txn.countFeatureFlagItems(appID: appID)
            return [("feature flags", Int(record.flagCount), counted.flags),
                    ("feature flag overrides", Int(record.overrideCount), counted.overrides),
                    ("release notes", Int(record.noteCount), counted.notes)].compactMap { name, kept, stored in
                kept == stored ? nil : "app \(appID) is counted as storing \(kept) \(name); it stores \(stored)"
            }
        },
        .featureFlags: { key, value, txn in
            _ = try FeatureFlagRecord(encoded: value)
            return try featureFlagApp(of: key, "a feature flag", txn)
        },
        .featureFlagOverrides: { key, value, txn in
            // appID ‖ 0x00 ‖ kind ‖ subject ‖ 0x00 ‖ flagKey
            _ = try FeatureFlagOverrideRecord(encoded: value)
            if let zero = key.firstIndex(of: 0) { _ = try Transaction.overrideKey(key[(zero + 1)...]) }
            return try featureFlagApp(of: key, "a feature flag override", txn)
        },
        .releaseNotes: { key, value, txn in
            // appID ‖ 0x00 ‖ noteID (16)
            _ = try ReleaseNoteRecord(encoded: value)
            guard let zero = key.firstIndex(of: 0), key.count - zero == 17 else {
                return ["release note key is not App ID ‖ 0x00 ‖ id (16)"]
            }
            return try featureFlagApp(of: key, "a release note", txn)
        },
        .notesSeen: { key, value, _ in
            // lineage digest (16) ‖ noteID (16) → seenAt; a deleted note's entries may stay.
            _ = try Transaction.seenAt(value)
            return key.count == 32 ? [] : ["seen note key of \(key.count) bytes, not 16 + 16"]
        },
        .deviceVersions: { key, value, _ in
            let versions = try DeviceVersionsRecord(encoded: value)
            var problems = [String]()
            if !key.contains(0) && !key.contains(1) {
                problems.append("key is not a lineage (App ID ‖ 0x00/0x01 ‖ …)")
            }
            if versions.first.isEmpty || versions.latest.isEmpty {
                problems.append("device versions with an empty version")
            }
            return problems
        },
        .featureRequests: FeedbackChecks.request,
        .featureVotes: FeedbackChecks.vote,
        .featureComments: FeedbackChecks.comment,
        .tickets: FeedbackChecks.ticket,
        .ticketMessages: FeedbackChecks.message,
        .ticketsByAuthor: FeedbackChecks.ticketByAuthor,
        .feedbackUsage: FeedbackChecks.usage,
        .fingerprints: { key, value, _ in
            let lineage = try LineageRecord(encoded: value)
            var problems = [String]()
            // App ID ‖ 0x00 ‖ fingerprint, or App ID ‖ 0x01 ‖ keyId for a device without one.
            if !key.contains(0) && !key.contains(1) { problems.append("key is not App ID ‖ 0x00/0x01 ‖ …") }
            if lineage.keys == 0 { problems.append("a lineage with no key seen") }
            return problems
        },
        .usageMonths: { key, value, _ in
            let month = try UsageMonthRecord(encoded: value)
            var problems = [String]()
            if !key.contains(0) { problems.append("key is not org ‖ 0x00 ‖ month") }
            let perApp = month.apps.reduce(UInt32(0)) { $0 &+ $1.activeDevices }
            if perApp != month.activeDevices {
                problems.append("apps add up to \(perApp), the month says \(month.activeDevices)")
            }
            let new = month.days.reduce(UInt32(0)) { $0 &+ $1.newDevices }
            if new != month.activeDevices {
                problems.append("days' new devices add up to \(new), the month says \(month.activeDevices)")
            }
            return problems
        },
        .usageDevices: { key, value, _ in
            key.count > 21 && value.count == 6 && value[0] == 1
                ? [] : ["counted-device entry: key of \(key.count) bytes, value of \(value.count)"]
        },
        .usageDays: { key, value, _ in
            // org ‖ 0x00 ‖ "YYYY-MM" ‖ day ‖ shard → u32
            var problems = [String]()
            let zero = key.firstIndex(of: 0)
            if zero == nil || key.count - zero! != 10 {
                problems.append("key is not org ‖ 0x00 ‖ month ‖ day ‖ shard")
            } else if !(1...31).contains(key[key.count - 2]) || Int(key[key.count - 1]) >= Transaction.spreadWays {
                problems.append("day \(key[key.count - 2]), shard \(key[key.count - 1])")
            }
            if value.count != 4 { problems.append("day count of \(value.count) bytes, not 4") }
            return problems
        },
        .apiKeys: { key, value, _ in
            _ = try APIKeyRecord(encoded: value)
            return key.count == 12 && key.starts(with: Array("aat_".utf8))
                ? [] : ["API key id of \(key.count) bytes, not aat_ + 8"]
        },
        .outbox: { key, value, _ in
            _ = try OutboxEvent(encoded: value)
            return key.count == 8 ? [] : ["outbox sequence of \(key.count) bytes, not 8"]
        },
        .subjects: { _, value, _ in _ = try SubjectRecord(encoded: value); return [] },
        .flagLog: { _, value, _ in _ = try FlagChange(encoded: value); return [] },
        .webhooks: { _, value, _ in _ = try WebhookEndpointRecord(encoded: value); return [] },
        .deliveries: { key, value, txn in
            // endpoint id ‖ 0x00 ‖ sequence (8); a pending one is listed in delivery_due at its next attempt.
            guard key.count > 9, key[key.count - 9] == 0 else {
                return ["delivery key of \(key.count) bytes, not endpoint ‖ 0x00 ‖ sequence"]
            }
            let delivery = try DeliveryRecord(encoded: value)
            if delivery.state == .pending, let next = delivery.nextAttemptAt,
               try txn.get(.deliveryDue, BigEndian.bytes(next.seconds) + key) == nil {
                return ["a pending delivery delivery_due does not list: it would never be sent"]
            }
            return []
        },
        .deliveryDue: { key, _, txn in
            // nextAttemptAt (8) ‖ delivery key: a pending delivery due then.
            guard key.count > 17 else { return ["due entry of \(key.count) bytes"] }
            guard let value = try txn.get(.deliveries, Array(key[8...])) else { return ["a due entry for no delivery"] }
            let delivery = try DeliveryRecord(encoded: value)
            guard delivery.state == .pending,
                  delivery.nextAttemptAt?.seconds == Int64(bitPattern: BigEndian.uint64(key)) else {
                return ["a due entry for a delivery that is \(delivery.state.name) or due at another time"]
            }
            return []
        },
        .webhookCounts: { key, value, txn in
            // org → what it stores for its webhooks, counted as it changes: equal to a recount.
            let org = String(decoding: key, as: UTF8.self)
            let record = try WebhookCountRecord(encoded: value), counted = try txn.countWebhookItems(org: org)
            return record.stored == counted ? [] : [
                "organization \(org) is counted as storing \(record.stored) webhook deliveries and test events; "
                    + "it stores \(counted)",
            ]
        },
        .challenges: { key, value, _ in
            key.count == 24 && value.isEmpty
                ? [] : ["used challenge key of \(key.count) bytes (expiry 8 ‖ id 16), value of \(value.count)"]
        },
        .rates: { key, value, _ in
            key.count > 8 && value.count == 4
                ? [] : ["rate window key of \(key.count) bytes, value of \(value.count) (u32 hits)"]
        },
    ]

    /// No problem when the app of a per-app key (appID ‖ 0x00 ‖ …) has its `feature_flag_apps`
    /// record (which holds its counts and generation); else the orphan, named.
    static func featureFlagApp(of key: [UInt8], _ what: String, _ txn: Transaction) throws -> [String] {
        guard let zero = key.firstIndex(of: 0), zero > 0 else {
            return ["\(what) whose key is not App ID ‖ 0x00 ‖ …"]
        }
        guard try txn.get(.featureFlagApps, Array(key[..<zero])) == nil else { return [] }
        let appID = String(decoding: key[..<zero], as: UTF8.self)
        return ["\(what) of app \(appID), which has no feature_flag_apps record"]
    }

    static let wholeDatabase: [Database: WholeCheck] = [
        .featureVotes: FeedbackChecks.orphans(.featureVotes, of: .featureRequests, "a vote", "feature request"),
        .featureComments: FeedbackChecks.orphans(.featureComments, of: .featureRequests, "a comment",
                                                 "feature request"),
        .ticketMessages: FeedbackChecks.orphans(.ticketMessages, of: .tickets, "a message", "ticket"),
        .ticketsByAuthor: FeedbackChecks.authorEntriesCount,
    ]

    /// Databases whose entry counts must be equal (an index and what it indexes; `tickets` and
    /// its authors' entries: `FeedbackChecks.authorEntriesCount`, subjects' entries aside).
    static let equalCounts: [(Database, Database)] = [(.devices, .deviceIDs)]
}
