import AttestCore

/// Feature flags: each app's flag state, its flags and its overrides (the records have the layouts).
///
/// ```
/// feature_flag_apps       appID                                        → FeatureFlagAppRecord
/// feature_flags           appID ‖ 0x00 ‖ flagKey                       → FeatureFlagRecord
/// feature_flag_overrides  appID ‖ 0x00 ‖ kind u8 ‖ subject ‖ 0x00 ‖ flagKey → FeatureFlagOverrideRecord
///                         (kind 0 device:deviceId, 1 sdk:X-Device-ID)
/// ```
/// App IDs hold no 0x00, so `appID ‖ 0x00` bounds one app's entries (`T.app` never reads
/// `T.app2`'s). The store keeps no counts nor generation: `FeatureFlagAdmin` does, in the
/// transaction of each change; `attestctl store check` recounts.
extension Transaction {
    /// The most bytes of a key LMDB stores (its default `mdb_env_get_maxkeysize`); longer
    /// override subjects are refused when written, on every backend alike.
    public static let maximumKeySize = 511

    /// `appID ‖ 0x00`: the start of every key of the app in the per-app databases.
    static func appPrefix(_ appID: String) -> [UInt8] {
        precondition(!appID.isEmpty && !appID.utf8.contains(0), "an App ID without 0x00")
        return Array(appID.utf8) + [0]
    }

    static func overridePrefix(appID: String, subject: FeatureFlagOverrideSubject) -> [UInt8] {
        appPrefix(appID) + [subject.kind] + Array(subject.value.utf8) + [0]
    }

    /// Visits the entries of `db` whose key starts with `prefix`, in key order, with the rest of the key.
    func scanPrefix(_ db: Database, _ prefix: [UInt8], _ visit: (ArraySlice<UInt8>, [UInt8]) throws -> Void) throws {
        try scan(db, from: prefix) { key, value in
            guard key.starts(with: prefix) else { return false }
            try visit(key[prefix.count...], value)
            return true
        }
    }

    // MARK: apps

    public func featureFlagApp(appID: String) throws -> FeatureFlagAppRecord? {
        try get(.featureFlagApps, Array(appID.utf8)).map(FeatureFlagAppRecord.init(encoded:))
    }

    /// The app's generation alone (nil: no feature-flag state), without decoding the rest of
    /// its record: a worker's compiled flags check it on each request whose store changed.
    public func featureFlagGeneration(appID: String) throws -> UInt64? {
        guard let bytes = try get(.featureFlagApps, Array(appID.utf8)) else { return nil }
        var reader = try BinaryReader(bytes, record: FeatureFlagAppRecord.recordName)
        guard FeatureFlagAppRecord.knownVersions.contains(reader.version) else {
            return try FeatureFlagAppRecord(encoded: bytes).generation  // throws, naming the version
        }
        return try reader.u64()
    }

    /// Says `featureFlagApp(appID:)` or `featureFlagGeneration(appID:)` follows (PostgreSQL: same round trip).
    public func prefetchFeatureFlagApp(appID: String) { prefetch(.featureFlagApps, Array(appID.utf8)) }

    /// - Throws: `StoreError(.tooLarge)` with more environments than the layout counts.
    public func put(_ record: FeatureFlagAppRecord, appID: String) throws {
        _ = Self.appPrefix(appID)
        if let refusal = record.writeRefusal { throw StoreError(.tooLarge, refusal) }
        try put(.featureFlagApps, Array(appID.utf8), record.encoded())
    }

    /// The flags, overrides and release notes the app stores, counted (`store check` compares
    /// them with its `FeatureFlagAppRecord`).
    func countFeatureFlagItems(appID: String) throws -> (flags: Int, overrides: Int, notes: Int) {
        let prefix = Self.appPrefix(appID)
        func count(_ db: Database) throws -> Int {
            var n = 0
            try scanPrefix(db, prefix) { _, _ in n += 1 }
            return n
        }
        return (try count(.featureFlags), try count(.featureFlagOverrides), try count(.releaseNotes))
    }

    // MARK: flags

    public func featureFlag(appID: String, key: String) throws -> FeatureFlagRecord? {
        guard let bytes = try get(.featureFlags, Self.appPrefix(appID) + Array(key.utf8)) else { return nil }
        var record = try FeatureFlagRecord(encoded: bytes)
        record.key = key
        return record
    }

    /// Every flag of the app, in key order (bytewise).
    public func featureFlags(appID: String) throws -> [FeatureFlagRecord] {
        var found = [FeatureFlagRecord]()
        try scanPrefix(.featureFlags, Self.appPrefix(appID)) { rest, value in
            var record = try FeatureFlagRecord(encoded: value)
            record.key = String(decoding: rest, as: UTF8.self)
            found.append(record)
        }
        return found
    }

    /// - Throws: `StoreError(.tooLarge)` for a record over `FeatureFlagRecord.maximumEncodedSize`
    ///   (or a list longer than its u8 count), or a key over `maximumKeySize`.
    public func put(_ flag: FeatureFlagRecord, appID: String) throws {
        precondition(!flag.key.isEmpty && !flag.key.utf8.contains(0), "a flag key without 0x00")
        if let refusal = flag.writeRefusal { throw StoreError(.tooLarge, refusal) }
        let key = Self.appPrefix(appID) + Array(flag.key.utf8)
        guard key.count <= Self.maximumKeySize else {
            throw StoreError(.tooLarge, "feature flag key of \(key.count) bytes with its App ID")
        }
        try put(.featureFlags, key, flag.encoded())
    }

    /// Removes the flag (not its overrides: the flags domain removes those); `false` when absent.
    @discardableResult
    public func deleteFeatureFlag(appID: String, key: String) throws -> Bool {
        try delete(.featureFlags, Self.appPrefix(appID) + Array(key.utf8))
    }

    // MARK: overrides

    /// The subject's overrides in the app, by flag key (one prefix scan).
    public func featureFlagOverrides(appID: String, subject: FeatureFlagOverrideSubject) throws
        -> [FeatureFlagOverrideRecord] {
        guard !subject.value.utf8.contains(0) else { return [] }
        var found = [FeatureFlagOverrideRecord]()
        try scanPrefix(.featureFlagOverrides, Self.overridePrefix(appID: appID, subject: subject)) { rest, value in
            var record = try FeatureFlagOverrideRecord(encoded: value)
            record.subject = subject
            record.flagKey = String(decoding: rest, as: UTF8.self)
            found.append(record)
        }
        return found
    }

    /// Every override of the app, devices first, then by subject and flag key.
    public func featureFlagOverrides(appID: String) throws -> [FeatureFlagOverrideRecord] {
        var found = [FeatureFlagOverrideRecord]()
        try scanPrefix(.featureFlagOverrides, Self.appPrefix(appID)) { rest, value in
            var record = try FeatureFlagOverrideRecord(encoded: value)
            (record.subject, record.flagKey) = try Self.overrideKey(rest)
            found.append(record)
        }
        return found
    }

    /// The subject and flag key of an override key after `appID ‖ 0x00`.
    static func overrideKey(_ rest: ArraySlice<UInt8>) throws -> (FeatureFlagOverrideSubject, String) {
        guard let kind = rest.first, let zero = rest.dropFirst().firstIndex(of: 0), zero + 1 < rest.endIndex else {
            throw StoreError(.corrupt, "override key is not kind ‖ subject ‖ 0x00 ‖ flagKey")
        }
        let subject = try FeatureFlagOverrideSubject(
            kind: kind, value: String(decoding: rest[(rest.startIndex + 1)..<zero], as: UTF8.self))
        return (subject, String(decoding: rest[(zero + 1)...], as: UTF8.self))
    }

    /// - Throws: `StoreError(.tooLarge)` when the key would pass `maximumKeySize`, and
    ///   `StoreError(.corrupt)` for a subject holding 0x00 (it ends the subject in the key).
    public func put(_ override: FeatureFlagOverrideRecord, appID: String) throws {
        precondition(!override.flagKey.isEmpty && !override.flagKey.utf8.contains(0), "a flag key without 0x00")
        guard !override.subject.value.utf8.contains(0) else {
            throw StoreError(.corrupt, "an override subject holding 0x00")
        }
        let key = Self.overridePrefix(appID: appID, subject: override.subject) + Array(override.flagKey.utf8)
        guard key.count <= Self.maximumKeySize else {
            throw StoreError(.tooLarge,
                             "feature flag override key of \(key.count) bytes; at most \(Self.maximumKeySize)")
        }
        try put(.featureFlagOverrides, key, override.encoded())
    }

    /// `false` when there was no such override.
    @discardableResult
    public func deleteFeatureFlagOverride(appID: String, subject: FeatureFlagOverrideSubject,
                                          flagKey: String) throws -> Bool {
        guard !subject.value.utf8.contains(0) else { return false }
        return try delete(.featureFlagOverrides,
                          Self.overridePrefix(appID: appID, subject: subject) + Array(flagKey.utf8))
    }
}
