import AttestCore
@testable import AttestStore
import Testing

/// Feature flags, release notes and device versions on every backend (`StoreConformance`
/// kinds), and what `store check` finds in them.
@Suite struct FeatureFlagStoreTests {
    typealias Kind = StoreConformance.Kind
    let now = Timestamp(seconds: 1_790_000_000)
    /// Two App IDs where one is a prefix of the other: their entries must never mix.
    let app = "ABCDE12345.app", app2 = "ABCDE12345.app2"

    func flag(_ key: String, _ value: String = "true") -> FeatureFlagRecord {
        FeatureFlagRecord(key: key, type: .bool, description: key, createdAt: now, updatedAt: now,
                          defaults: [.init(environment: "production", valueJSON: value)])
    }

    func override(_ subject: FeatureFlagOverrideSubject, _ key: String) -> FeatureFlagOverrideRecord {
        FeatureFlagOverrideRecord(subject: subject, flagKey: key, valueJSON: "false", expiresAt: nil, createdAt: now,
                                  note: "qa")
    }

    func note(_ n: UInt8, _ version: String) -> ReleaseNoteRecord {
        ReleaseNoteRecord(id: [UInt8](repeating: n, count: 16), version: version, title: "t\(n)", body: "b",
                          publishAt: now, createdAt: now, updatedAt: now)
    }

    @Test(arguments: StoreConformance.kinds) func flagsReadBackPerAppInKeyOrder(_ kind: Kind) throws {
        let f = try StoreConformance.Fixture(kind), store = try f.open()
        let state = FeatureFlagAppRecord(generation: 3, environments: [.init(name: "production", createdAt: now)],
                                         flagCount: 2)
        try store.write { txn in
            try txn.put(state, appID: app)
            for key in ["zeta", "alpha", "beta.2"] { try txn.put(flag(key), appID: app) }
            try txn.put(flag("alpha", "false"), appID: app2)
            #expect(try txn.deleteFeatureFlag(appID: app, key: "zeta"))
            #expect(try !txn.deleteFeatureFlag(appID: app, key: "zeta"), "already gone")
        }
        let (flags, other, one, none, stored, noState) = try store.read { txn in
            (try txn.featureFlags(appID: app), try txn.featureFlags(appID: app2),
             try txn.featureFlag(appID: app, key: "alpha"), try txn.featureFlag(appID: app, key: "zeta"),
             try txn.featureFlagApp(appID: app), try txn.featureFlagApp(appID: app2))
        }
        #expect(flags.map(\.key) == ["alpha", "beta.2"], "key order; \(app2)'s flag is not \(app)'s")
        #expect(other.map(\.key) == ["alpha"] && other[0].defaults[0].valueJSON == "false")
        #expect(one == flag("alpha") && none == nil)
        #expect(stored == state && noState == nil)
        let generations = try store.read { txn in
            txn.prefetchFeatureFlagApp(appID: app)
            return [try txn.featureFlagGeneration(appID: app), try txn.featureFlagGeneration(appID: app2)]
        }
        #expect(generations == [3, nil])
    }

    @Test(arguments: StoreConformance.kinds) func overridesScanBySubjectWithoutLeaking(_ kind: Kind) throws {
        let f = try StoreConformance.Fixture(kind), store = try f.open()
        try store.write { txn in
            for key in ["b", "a"] {
                try txn.put(override(.device("dev-1"), key), appID: app)
                try txn.put(override(.sdk("dev-1"), key), appID: app)
            }
            // A subject that extends dev-1, the same subject in the app whose ID extends this one.
            try txn.put(override(.device("dev-10"), "a"), appID: app)
            try txn.put(override(.device("dev-1"), "c"), appID: app2)
        }
        let (device, sdk, longer, all, other, missing) = try store.read { txn in
            (try txn.featureFlagOverrides(appID: app, subject: .device("dev-1")),
             try txn.featureFlagOverrides(appID: app, subject: .sdk("dev-1")),
             try txn.featureFlagOverrides(appID: app, subject: .device("dev-10")),
             try txn.featureFlagOverrides(appID: app), try txn.featureFlagOverrides(appID: app2),
             try txn.featureFlagOverrides(appID: app, subject: .device("dev")))
        }
        #expect(device == [override(.device("dev-1"), "a"), override(.device("dev-1"), "b")])
        #expect(sdk == [override(.sdk("dev-1"), "a"), override(.sdk("dev-1"), "b")], "kinds are apart")
        #expect(longer.map(\.flagKey) == ["a"] && missing.isEmpty, "dev-1 is not dev-10, dev is neither")
        #expect(all.map { "\($0.subject):\($0.flagKey)" } == [
            "device(\"dev-1\"):a", "device(\"dev-1\"):b", "device(\"dev-10\"):a",
            "sdk(\"dev-1\"):a", "sdk(\"dev-1\"):b",
        ], "devices first, each subject's keys in order")
        #expect(other == [override(.device("dev-1"), "c")])
        let deleted = try store.write { txn in
            [try txn.deleteFeatureFlagOverride(appID: app, subject: .device("dev-1"), flagKey: "a"),
             try txn.deleteFeatureFlagOverride(appID: app, subject: .device("dev-1"), flagKey: "a")]
        }
        #expect(deleted == [true, false])
        #expect(try store.read { try $0.featureFlagOverrides(appID: app, subject: .device("dev-1")) }.map(\.flagKey)
                    == ["b"])
        // A subject holding 0x00 would end early in the key: refused, not stored under another subject.
        #expect(throws: StoreError.self) {
            try store.write { txn in try txn.put(override(.sdk("dev-1\u{0}x"), "a"), appID: app) }
        }
        #expect(throws: StoreError(.tooLarge, "")) {
            try store.write { txn in try txn.put(override(.sdk(String(repeating: "s", count: 500)), "a"), appID: app) }
        }
    }

    @Test(arguments: StoreConformance.kinds) func notesAndSeenMarksAndVersions(_ kind: Kind) throws {
        let f = try StoreConformance.Fixture(kind), store = try f.open()
        let lineage = LineageKey.fingerprint("fp", appID: app), other = LineageKey.fingerprint("fp", appID: app2)
        try store.write { txn in
            try txn.put(note(2, "2.0"), appID: app)
            try txn.put(note(1, "1.5"), appID: app)
            try txn.put(note(1, "9.9"), appID: app2)
        }
        let (notes, one, none) = try store.read { txn in
            (try txn.releaseNotes(appID: app), try txn.releaseNote(appID: app, id: note(2, "").id),
             try txn.releaseNote(appID: app2, id: note(2, "").id))
        }
        #expect(notes == [note(1, "1.5"), note(2, "2.0")] && one == note(2, "2.0") && none == nil)

        let id = note(1, "").id
        let marks = try store.write { txn in
            [try txn.markNoteSeen(lineage: lineage, note: id, at: now),
             try txn.markNoteSeen(lineage: lineage, note: id, at: now + 60)]
        }
        #expect(marks == [now, now], "the first time stays")
        #expect(try store.write { try $0.markNoteSeen(lineage: lineage, note: id, at: now + 120) } == now)
        try store.write { txn in _ = try txn.markNoteSeen(lineage: other, note: id, at: now + 5) }
        let (seen, seenOther, unseen) = try store.read { txn in
            (try txn.seenNotes(lineage: lineage), try txn.seenNotes(lineage: other),
             try txn.noteSeen(lineage: lineage, note: note(2, "").id))
        }
        #expect(seen == [id: now] && seenOther == [id: now + 5] && unseen == nil)

        #expect(try store.write { try $0.deleteReleaseNote(appID: app, id: id) })
        #expect(try store.read { try $0.releaseNotes(appID: app) }.map(\.version) == ["2.0"])
        #expect(try store.read { try $0.seenNotes(lineage: lineage) } == [id: now], "seen marks outlive the note")

        let versions = DeviceVersionsRecord(first: "1.0", firstAt: now, latest: "2.0", latestAt: now + 9)
        try store.write { txn in try txn.put(versions, lineage: lineage) }
        #expect(try store.read { try $0.deviceVersions(lineage: lineage) } == versions)
        #expect(try store.read { try $0.deviceVersions(lineage: other) } == nil)
    }

    /// What `store check` must find after an attacker (or a bug) edits the databases directly:
    /// counts that no longer match, entries of an app without its state, records that do not decode.
    @Test(arguments: StoreConformance.kinds) func storeCheckRecountsAndFindsOrphansAndDamage(_ kind: Kind) throws {
        let f = try StoreConformance.Fixture(kind), store = try f.open()
        let lineage = LineageKey.fingerprint("fp", appID: app)
        try store.write { txn in
            try txn.put(FeatureFlagAppRecord(generation: 1, environments: [.init(name: "production", createdAt: now)],
                                             flagCount: 1, overrideCount: 1, noteCount: 1), appID: app)
            try txn.put(flag("a"), appID: app)
            try txn.put(override(.sdk("x"), "a"), appID: app)
            try txn.put(note(1, "1.0"), appID: app)
            _ = try txn.markNoteSeen(lineage: lineage, note: note(1, "").id, at: now)
            try txn.put(DeviceVersionsRecord(first: "1.0", firstAt: now, latest: "1.0", latestAt: now),
                        lineage: lineage)
        }
        let clean = try store.check()
        #expect(clean.isConsistent, "\(clean.databases.flatMap(\.problems))")
        let checked = clean.databases.filter { FeatureFlagStoreTests.databases.contains($0.database) }
        #expect(checked.count == 6 && checked.allSatisfy { $0.recordsChecked }, "every new database has its check")

        try store.write { txn in
            // app: a flag and a damaged flag not counted (3, counted 1), its note gone (0, counted 1).
            try txn.put(flag("b"), appID: app)
            _ = try txn.put(.featureFlags, Array(app.utf8) + [0] + Array("broken".utf8), [1, 9])
            _ = try txn.deleteReleaseNote(appID: app, id: note(1, "").id)
            // app2: entries without its feature_flag_apps record; an override key of an unknown kind.
            try txn.put(flag("c"), appID: app2)
            try txn.put(override(.device("d"), "c"), appID: app2)
            try txn.put(note(3, "1.0"), appID: app2)
            _ = try txn.put(.featureFlagOverrides, Array(app2.utf8) + [0, 7] + Array("s".utf8) + [0, 0x61],
                            override(.sdk(""), "a").encoded())
            _ = try txn.put(.notesSeen, [UInt8](repeating: 1, count: 20), [1, 0])
            _ = try txn.put(.deviceVersions, lineage.bytes, [1] + [UInt8](repeating: 0, count: 3))
        }
        let problems = try store.check().databases.reduce(into: [Database: [String]]()) {
            $0[$1.database] = $1.problems
        }
        #expect(problems[.featureFlagApps]?.sorted() == [
            "app \(app) is counted as storing 1 feature flags; it stores 3",
            "app \(app) is counted as storing 1 release notes; it stores 0",
        ], "\(problems[.featureFlagApps] ?? [])")
        let flags = problems[.featureFlags] ?? []
        #expect(flags.contains("a feature flag of app \(app2), which has no feature_flag_apps record"), "\(flags)")
        #expect(flags.contains { $0.contains("does not decode") }, "the damaged flag: \(flags)")
        #expect(problems[.featureFlagOverrides]?.contains(
            "a feature flag override of app \(app2), which has no feature_flag_apps record") == true)
        #expect(problems[.featureFlagOverrides]?.contains { $0.contains("subject kind 7") } == true,
                "\(problems[.featureFlagOverrides] ?? [])")
        #expect(problems[.releaseNotes] == ["a release note of app \(app2), which has no feature_flag_apps record"])
        #expect(problems[.notesSeen]?.first?.contains("does not decode") == true, "\(problems[.notesSeen] ?? [])")
        #expect(problems[.deviceVersions]?.first?.contains("does not decode") == true)
    }

    static let databases: [Database] = [.featureFlagApps, .featureFlags, .featureFlagOverrides, .releaseNotes,
                                        .notesSeen, .deviceVersions]
}
