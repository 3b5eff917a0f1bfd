import AttestCore
import AttestStore

/// Who made a feature-flag change (the `actor` of `flag.changed`).
public enum FeatureFlagActor: String, Sendable {
    case cli, api
}

/// Every write to an app's feature flags, environments, overrides and release notes: what
/// `attestctl flags|notes` and the org API (`FlagsAdminEndpoint`) both do, with the same checks.
///
/// Each method runs inside the caller's write transaction and, in that transaction, checks the
/// input and the tier's limits (`FeatureFlagLimits`: 403 `forbidden` naming the limit), bumps
/// the app's `FeatureFlagAppRecord.generation` (workers rebuild their `CompiledFeatureFlags`)
/// and its counts, and queues the webhook `flag.changed` in the outbox:
/// ```
/// {"organization", "app_id", "team_id", "bundle_id", "flag_key" (null for an environment),
///  "environment" (null: every environment), "action": created|updated|deleted|rule_added|
///  rule_removed|rule_changed|rollout_set|override_set|override_removed|environment_added|
///  environment_removed, "actor": cli|api}
/// ```
/// It returns the changes for the flag stream, which the caller publishes once the
/// transaction committed (`FlagStream.publish`).
public struct FeatureFlagAdmin {
    public static let production = "production"
    public static let maximumKeyBytes = 64
    public static let maximumDescriptionBytes = 256
    public static let maximumRuleNameBytes = 64
    public static let maximumOverrideNoteBytes = 256
    public static let maximumSDKDeviceIDBytes = 256

    public let app: AppRecord
    public let limits: FeatureFlagLimits
    public let actor: FeatureFlagActor
    public let now: Timestamp
    public let random: any RandomSource
    /// `webhooks.queueEvents`.
    public let queueEvents: Bool

    public init(app: AppRecord, tier: Tier, actor: FeatureFlagActor, now: Timestamp, random: any RandomSource,
                queueEvents: Bool = true) {
        self.app = app
        limits = tier.featureFlagLimits
        self.actor = actor
        self.now = now
        self.random = random
        self.queueEvents = queueEvents
    }

    /// The app `appID` and its organization, read in `txn`: 404 `not_found` when there is no such
    /// app, or when `org` is given and the app is another organization's.
    public static func app(_ appID: String, org: String?, in txn: Transaction) throws -> (AppRecord, OrgRecord) {
        guard appID.utf8.count <= 256, !appID.utf8.contains(0), !appID.isEmpty, let app = try txn.app(id: appID),
              org.map({ $0 == app.org }) ?? true, let owner = try txn.org(named: app.org) else {
            throw ServiceError(.notFound, "No app \(appID.prefix(256)).",
                               hint: "The App ID is TEAMID.bundle, as 'attestctl app list' shows it.")
        }
        return (app, owner)
    }

    /// Runs `body` with an admin for `appID` in one durable write.
    public static func write<T>(store: Store, appID: String, org: String?, actor: FeatureFlagActor, now: Timestamp,
                                random: any RandomSource, queueEvents: Bool,
                                _ body: (FeatureFlagAdmin, Transaction) throws -> T) throws -> T {
        try store.write([.durable]) { txn in
            let (app, owner) = try Self.app(appID, org: org, in: txn)
            return try body(FeatureFlagAdmin(app: app, tier: owner.tier, actor: actor, now: now, random: random,
                                             queueEvents: queueEvents), txn)
        }
    }

    /// `[A-Za-z0-9_.-]`, 1–64 bytes.
    public static func isKey(_ key: String) -> Bool {
        !key.isEmpty && key.utf8.count <= maximumKeyBytes && key.utf8.allSatisfy {
            ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x41 && $0 <= 0x5A) || ($0 >= 0x61 && $0 <= 0x7A)
                || $0 == 0x5F || $0 == 0x2E || $0 == 0x2D
        }
    }

    /// `[a-z0-9][a-z0-9_-]{0,31}`.
    public static func isEnvironmentName(_ name: String) -> Bool {
        let u = Array(name.utf8)
        func ok(_ c: UInt8) -> Bool { (c >= 0x30 && c <= 0x39) || (c >= 0x61 && c <= 0x7A) }
        return !u.isEmpty && u.count <= 32 && ok(u[0])
            && u.dropFirst().allSatisfy { ok($0) || $0 == 0x5F || $0 == 0x2D }
    }

    /// The app's flag state: stored, or a new one with production alone.
    public func state(in txn: Transaction) throws -> FeatureFlagAppRecord {
        try txn.featureFlagApp(appID: app.appID)
            ?? FeatureFlagAppRecord(generation: 0, environments: [FeatureFlagEnvironment(name: Self.production,
                                                                                        createdAt: now)])
    }

    // MARK: flags

    /// A new flag with a default in `environment` (production when nil).
    public func addFlag(key: String, type: FeatureFlagType, value: String, environment: String?,
                        description: String, in txn: Transaction) throws -> [FeatureFlagChange] {
        guard Self.isKey(key) else {
            throw ServiceError(.badRequest, "a flag key is 1 to \(Self.maximumKeyBytes) bytes of A-Z a-z 0-9 _ . -, "
                                            + "got \"\(key.prefix(80))\"")
        }
        guard description.utf8.count <= Self.maximumDescriptionBytes else {
            throw ServiceError(.badRequest, "the description is longer than \(Self.maximumDescriptionBytes) bytes")
        }
        if limits.onOffOnly && type != .bool {
            throw ServiceError(.forbidden, "The \(limits.tier.rawValue) tier allows on/off (bool) flags only; "
                                           + "\(key) would be \(type.rawValue).",
                               hint: "Move the organization to the pro tier or above for other types.",
                               extra: [("limit", "bool only"), ("current", .string(type.rawValue))])
        }
        var state = try state(in: txn)
        let env = try self.environment(environment, in: state)
        let stored = try FeatureFlagValueType.check(value, type: type)
        guard try txn.featureFlag(appID: app.appID, key: key) == nil else {
            throw ServiceError(.conflict, "The flag \(key) exists already.",
                               hint: "Change its value with 'attestctl flags set' (PUT in the API).")
        }
        guard Int(state.flagCount) < limits.flags else {
            throw limits.exceeded("flags per app", limit: limits.flags, wouldBe: Int(state.flagCount) + 1)
        }
        try put(FeatureFlagRecord(key: key, type: type, description: description, createdAt: now, updatedAt: now,
                                  defaults: [FeatureFlagValue(environment: env, valueJSON: stored)], rollouts: [],
                                  rules: []), in: txn)
        state.flagCount += 1
        return try commit(&state, .created, key: key, environment: env, in: txn)
    }

    /// Sets the flag's default in `environment` (production when nil).
    public func setValue(key: String, value: String, environment: String?,
                         in txn: Transaction) throws -> [FeatureFlagChange] {
        var state = try state(in: txn)
        let env = try self.environment(environment, in: state)
        var flag = try flag(key, in: txn)
        let stored = try FeatureFlagValueType.check(value, type: flag.type)
        flag.defaults.removeAll { $0.environment == env }
        flag.defaults.append(FeatureFlagValue(environment: env, valueJSON: stored))
        try put(flag, in: txn)
        return try commit(&state, .updated, key: key, environment: env, in: txn)
    }

    /// Removes the flag's default in `environment`: the flag leaves that environment's answers.
    public func unsetValue(key: String, environment: String, in txn: Transaction) throws -> [FeatureFlagChange] {
        var state = try state(in: txn)
        let env = try self.environment(environment, in: state)
        var flag = try flag(key, in: txn)
        guard flag.defaults.contains(where: { $0.environment == env }) else {
            throw ServiceError(.notFound, "The flag \(key) has no value in \(env).")
        }
        flag.defaults.removeAll { $0.environment == env }
        try put(flag, in: txn)
        return try commit(&state, .updated, key: key, environment: env, in: txn)
    }

    /// Deletes the flag and its overrides.
    public func removeFlag(key: String, in txn: Transaction) throws -> [FeatureFlagChange] {
        var state = try state(in: txn)
        _ = try flag(key, in: txn)
        try txn.deleteFeatureFlag(appID: app.appID, key: key)
        for o in try txn.featureFlagOverrides(appID: app.appID) where o.flagKey == key {
            try txn.deleteFeatureFlagOverride(appID: app.appID, subject: o.subject, flagKey: key)
            state.overrideCount = state.overrideCount > 0 ? state.overrideCount - 1 : 0
        }
        state.flagCount = state.flagCount > 0 ? state.flagCount - 1 : 0
        return try commit(&state, .deleted, key: key, environment: nil, in: txn)
    }

    // MARK: rules and rollouts

    /// Adds a rule at `index` (1-based; the end when nil). `rule.valueJSON` is checked against
    /// the flag's type; the conditions must come from `FeatureFlagConditions`.
    public func addRule(key: String, rule: FeatureFlagRule, at index: Int?,
                        in txn: Transaction) throws -> [FeatureFlagChange] {
        var state = try state(in: txn)
        var flag = try flag(key, in: txn)
        var rule = rule
        guard rule.name.utf8.count <= Self.maximumRuleNameBytes else {
            throw ServiceError(.badRequest, "a rule's name is at most \(Self.maximumRuleNameBytes) bytes")
        }
        guard (1...limits.conditionsPerRule).contains(rule.conditions.count) else {
            throw ServiceError(.badRequest, "a rule has 1 to \(limits.conditionsPerRule) conditions "
                                            + "(all must hold), got \(rule.conditions.count)")
        }
        guard rule.rollout <= 100 else {
            throw ServiceError(.badRequest, "a rule's rollout is 0 to 100 percent")
        }
        if !rule.environment.isEmpty { rule.environment = try environment(rule.environment, in: state) }
        rule.valueJSON = try FeatureFlagValueType.check(rule.valueJSON, type: flag.type)
        guard flag.rules.count < limits.rulesPerFlag else {
            throw limits.exceeded("targeting rules per flag", limit: limits.rulesPerFlag, wouldBe: flag.rules.count + 1)
        }
        let at = index ?? flag.rules.count + 1
        guard (1...flag.rules.count + 1).contains(at) else {
            throw ServiceError(.badRequest, "--at is 1 to \(flag.rules.count + 1) for \(key)")
        }
        if rule.name.isEmpty { rule.name = "rule \(flag.rules.count + 1)" }
        flag.rules.insert(rule, at: at - 1)
        try put(flag, in: txn)
        return try commit(&state, .ruleAdded, key: key, environment: rule.environment.isEmpty ? nil : rule.environment,
                          in: txn)
    }

    /// Removes rule `index` (1-based).
    public func removeRule(key: String, index: Int, in txn: Transaction) throws -> [FeatureFlagChange] {
        var state = try state(in: txn)
        var flag = try flag(key, in: txn)
        let removed = try rule(index, of: flag)
        flag.rules.remove(at: index - 1)
        try put(flag, in: txn)
        return try commit(&state, .ruleRemoved, key: key,
                          environment: removed.environment.isEmpty ? nil : removed.environment, in: txn)
    }

    /// Turns rule `index` (1-based) on or off.
    public func setRuleActive(key: String, index: Int, active: Bool,
                              in txn: Transaction) throws -> [FeatureFlagChange] {
        var state = try state(in: txn)
        var flag = try flag(key, in: txn)
        let rule = try rule(index, of: flag)
        flag.rules[index - 1].active = active
        try put(flag, in: txn)
        return try commit(&state, .ruleChanged, key: key,
                          environment: rule.environment.isEmpty ? nil : rule.environment, in: txn)
    }

    /// The flag's rollout in `environment`: `percent` of devices get `value` (after the rules,
    /// before the default). 0 removes it.
    public func setRollout(key: String, environment: String?, percent: Int, value: String?,
                           in txn: Transaction) throws -> [FeatureFlagChange] {
        // Removing one stays possible after a downgrade.
        guard limits.rollouts || percent == 0 else { throw limits.lacks("percentage rollouts") }
        guard (0...100).contains(percent) else { throw ServiceError(.badRequest, "a rollout is 0 to 100 percent") }
        var state = try state(in: txn)
        let env = try self.environment(environment, in: state)
        var flag = try flag(key, in: txn)
        flag.rollouts.removeAll { $0.environment == env }
        if percent > 0 {
            guard let value else { throw ServiceError(.badRequest, "a rollout needs the value it rolls out") }
            flag.rollouts.append(FeatureFlagRollout(environment: env, percent: UInt8(percent),
                                                    valueJSON: try FeatureFlagValueType.check(value, type: flag.type)))
        }
        try put(flag, in: txn)
        return try commit(&state, .rolloutSet, key: key, environment: env, in: txn)
    }

    // MARK: overrides

    /// Forces `value` for one device (`device:` a deviceId this app has; `sdk:` an
    /// `X-Device-ID`, client-claimed) in every environment, until `expiresAt` (nil: for good).
    public func setOverride(key: String, subject: FeatureFlagOverrideSubject, value: String, expiresAt: Timestamp?,
                            note: String,
                            in txn: Transaction) throws -> (FeatureFlagOverrideRecord, [FeatureFlagChange]) {
        var state = try state(in: txn)
        let flag = try flag(key, in: txn)
        let stored = try FeatureFlagValueType.check(value, type: flag.type)
        guard note.utf8.count <= Self.maximumOverrideNoteBytes else {
            throw ServiceError(.badRequest, "the note is longer than \(Self.maximumOverrideNoteBytes) bytes")
        }
        if let expiresAt, expiresAt <= now {
            throw ServiceError(.badRequest, "the expiry \(expiresAt.iso8601) has passed already")
        }
        switch subject {
        case .device(let id):
            guard let device = try txn.device(deviceID: id), device.appID == app.appID else {
                throw ServiceError(.notFound, "No device \(id.prefix(80)) of \(app.appID).")
            }
        case .sdk(let id):
            guard !id.isEmpty, id.utf8.count <= Self.maximumSDKDeviceIDBytes, !id.utf8.contains(0) else {
                throw ServiceError(.badRequest, "an X-Device-ID is 1 to \(Self.maximumSDKDeviceIDBytes) bytes")
            }
        }
        let existing = try txn.featureFlagOverrides(appID: app.appID, subject: subject)
        if !existing.contains(where: { $0.flagKey == key }) {
            let count = try txn.featureFlagOverrides(appID: app.appID).filter { $0.flagKey == key }.count
            guard count < limits.overridesPerFlag else {
                throw limits.exceeded("overrides per flag", limit: limits.overridesPerFlag, wouldBe: count + 1)
            }
            state.overrideCount += 1
        }
        let record = FeatureFlagOverrideRecord(subject: subject, flagKey: key, valueJSON: stored, expiresAt: expiresAt,
                                               createdAt: now, note: note)
        try txn.put(record, appID: app.appID)
        return (record, try commit(&state, .overrideSet, key: key, environment: nil, in: txn))
    }

    public func removeOverride(key: String, subject: FeatureFlagOverrideSubject,
                               in txn: Transaction) throws -> [FeatureFlagChange] {
        var state = try state(in: txn)
        // A subject longer than any stored one (keys are bounded) is absent without a store read.
        guard subject.value.utf8.count <= Self.maximumSDKDeviceIDBytes,
              try txn.featureFlagOverrides(appID: app.appID, subject: subject).contains(where: { $0.flagKey == key })
        else {
            throw ServiceError(.notFound, "No override of \(key) for \(Self.text(subject)).")
        }
        try txn.deleteFeatureFlagOverride(appID: app.appID, subject: subject, flagKey: key)
        state.overrideCount = state.overrideCount > 0 ? state.overrideCount - 1 : 0
        return try commit(&state, .overrideRemoved, key: key, environment: nil, in: txn)
    }

    /// `device:ID` / `sdk:ID`.
    public static func text(_ s: FeatureFlagOverrideSubject) -> String {
        switch s {
        case .device(let id): return "device:" + id
        case .sdk(let id): return "sdk:" + id
        }
    }

    // MARK: environments

    public func addEnvironment(_ name: String, in txn: Transaction) throws -> [FeatureFlagChange] {
        guard Self.isEnvironmentName(name) else {
            throw ServiceError(.badRequest,
                               "an environment name is [a-z0-9][a-z0-9_-]{0,31}, got \"\(name.prefix(80))\"")
        }
        var state = try state(in: txn)
        guard !state.environments.contains(where: { $0.name == name }) else {
            throw ServiceError(.conflict, "The environment \(name) exists already.")
        }
        guard state.environments.count < limits.environments else {
            throw limits.exceeded("environments per app (production included)", limit: limits.environments,
                                  wouldBe: state.environments.count + 1)
        }
        state.environments.append(FeatureFlagEnvironment(name: name, createdAt: now))
        return try commit(&state, .environmentAdded, key: nil, environment: name, in: txn)
    }

    /// Removes the environment and every flag's default, rollout and rules for it.
    public func removeEnvironment(_ name: String, in txn: Transaction) throws -> [FeatureFlagChange] {
        guard name != Self.production else {
            throw ServiceError(.badRequest, "production always exists and cannot be removed")
        }
        var state = try state(in: txn)
        guard state.environments.contains(where: { $0.name == name }) else {
            throw ServiceError(.notFound, "No environment \(name.prefix(80)) for \(app.appID).")
        }
        state.environments.removeAll { $0.name == name }
        for var flag in try txn.featureFlags(appID: app.appID) {
            let before = flag
            flag.defaults.removeAll { $0.environment == name }
            flag.rollouts.removeAll { $0.environment == name }
            flag.rules.removeAll { $0.environment == name }
            if flag != before { try put(flag, in: txn) }
        }
        return try commit(&state, .environmentRemoved, key: nil, environment: name, in: txn)
    }

    // MARK: release notes

    /// A new note (409 `conflict` when the app has one for the same version).
    public func addNote(version: String, title: String, body: String, publishAt: Timestamp?,
                        in txn: Transaction) throws -> ReleaseNoteRecord {
        let at = publishAt ?? now
        try ReleaseNotes.check(version: version, title: title, body: body, publishAt: at)
        var state = try state(in: txn)
        let notes = try txn.releaseNotes(appID: app.appID)
        if let same = notes.first(where: { Versions.compare($0.version, version) == 0 }) {
            throw ServiceError(.conflict, "\(app.appID) has a note for version \(same.version) already "
                                          + "(\(ReleaseNotes.idText(same.id))).",
                               hint: "Remove it first ('attestctl notes remove').")
        }
        guard notes.count < limits.notes else {
            throw limits.exceeded("release notes per app", limit: limits.notes, wouldBe: notes.count + 1)
        }
        var id: [UInt8]
        repeat { id = ReleaseNotes.newID(random) } while try txn.releaseNote(appID: app.appID, id: id) != nil
        let note = ReleaseNoteRecord(id: id, version: version, title: title, body: body, publishAt: at,
                                     createdAt: now, updatedAt: now)
        try txn.put(note, appID: app.appID)
        state.noteCount = UInt16(min(notes.count + 1, Int(UInt16.max)))
        try store(bumping: &state, in: txn)
        return note
    }

    public func removeNote(id: [UInt8], in txn: Transaction) throws {
        var state = try state(in: txn)
        guard try txn.deleteReleaseNote(appID: app.appID, id: id) else {
            throw ServiceError(.notFound, "No release note \(ReleaseNotes.idText(id)) for \(app.appID).")
        }
        state.noteCount = state.noteCount > 0 ? state.noteCount - 1 : 0
        try store(bumping: &state, in: txn)
    }

    // MARK: shared

    /// What `flag.changed` reports in `action`.
    public enum Action: String, Sendable {
        case created, updated, deleted
        case ruleAdded = "rule_added", ruleRemoved = "rule_removed", ruleChanged = "rule_changed"
        case rolloutSet = "rollout_set", overrideSet = "override_set", overrideRemoved = "override_removed"
        case environmentAdded = "environment_added", environmentRemoved = "environment_removed"
    }

    func flag(_ key: String, in txn: Transaction) throws -> FeatureFlagRecord {
        guard Self.isKey(key), let flag = try txn.featureFlag(appID: app.appID, key: key) else {
            throw ServiceError(.notFound, "No flag \(key.prefix(80)) in \(app.appID).",
                               hint: "'attestctl flags list --app \(app.appID)' lists them.")
        }
        return flag
    }

    private func rule(_ index: Int, of flag: FeatureFlagRecord) throws -> FeatureFlagRule {
        guard index >= 1, index <= flag.rules.count else {
            throw ServiceError(.notFound, flag.rules.isEmpty ? "The flag \(flag.key) has no rules."
                                          : "The flag \(flag.key) has rules 1 to \(flag.rules.count), not \(index).")
        }
        return flag.rules[index - 1]
    }

    /// A known environment (production when nil). - Throws: 404 for one the app lacks.
    private func environment(_ name: String?, in state: FeatureFlagAppRecord) throws -> String {
        let env = name ?? Self.production
        guard state.environments.contains(where: { $0.name == env }) || env == Self.production else {
            throw ServiceError(.notFound, "No environment \(env.prefix(80)) for \(app.appID).",
                               hint: "Add it with 'attestctl flags env add --app \(app.appID) \(env.prefix(32))'.")
        }
        return env
    }

    private func put(_ flag: FeatureFlagRecord, in txn: Transaction) throws {
        var flag = flag
        flag.updatedAt = now
        if let refusal = flag.writeRefusal {
            throw ServiceError(.badRequest, "the flag \(flag.key) is too large: \(refusal)")
        }
        try txn.put(flag, appID: app.appID)
    }

    /// Bumps the generation and sets `changedAt` (the flag stream's auth republishes a channel
    /// whose message is older: a publish that failed), then stores the state. Every change goes
    /// through here.
    private func store(bumping state: inout FeatureFlagAppRecord, in txn: Transaction) throws {
        state.generation &+= 1
        state.changedAt = now
        try txn.put(state, appID: app.appID)
    }

    /// Bumps the generation, stores the state, queues `flag.changed`; the stream's changes.
    private func commit(_ state: inout FeatureFlagAppRecord, _ action: Action, key: String?, environment: String?,
                        in txn: Transaction) throws -> [FeatureFlagChange] {
        try store(bumping: &state, in: txn)
        if queueEvents {
            let data: [(String, JSONValue)] = [
                ("organization", .string(app.org)), ("app_id", .string(app.appID)), ("team_id", .string(app.teamID)),
                ("bundle_id", .string(app.bundleID)), ("flag_key", key.map { .string($0) } ?? .null),
                ("environment", environment.map { .string($0) } ?? .null), ("action", .string(action.rawValue)),
                ("actor", .string(actor.rawValue)),
            ]
            try txn.enqueue(OutboxEvent(id: "evt_" + Hex.encode(random.bytes(12)),
                                        event: WebhookEvent.flagChanged.rawValue, org: app.org, createdAt: now,
                                        dataJSON: JSONValue.object(data).jsonText))
        }
        return [FeatureFlagChange(appID: app.appID, environment: environment)]
    }
}
