import AttestCore
import AttestStore
import Testing

/// The feature-flag and What's New records: round trips, their v1 bytes pinned (written by
/// hand from the layouts in the records' doc comments), refusal of damaged bytes, size bounds.
@Suite struct FeatureFlagCodecTests {
    static let now = Timestamp(seconds: 1_790_000_000)

    static let app = FeatureFlagAppRecord(generation: 7, changedAt: now + 2,
                                          environments: [.init(name: "production", createdAt: now)],
                                          flagCount: 2, overrideCount: 3, noteCount: 1)
    static let flag = FeatureFlagRecord(
        key: "", type: .bool, description: "Dark", createdAt: now, updatedAt: now + 1,
        defaults: [.init(environment: "production", valueJSON: "true")],
        rollouts: [.init(environment: "production", percent: 25, valueJSON: "false")],
        rules: [.init(name: "beta", environment: "", active: true, rollout: 50, valueJSON: "true",
                      conditions: [.init(attribute: "app_version", op: .gte, operandJSON: "\"2.0\"")])])
    static let override = FeatureFlagOverrideRecord(subject: .device(""), flagKey: "", valueJSON: "1", expiresAt: nil,
                                                    createdAt: now, note: "qa")
    static let note = ReleaseNoteRecord(id: [], version: "2.0", title: "New", body: "Hi", publishAt: now,
                                        createdAt: now, updatedAt: now)
    static let versions = DeviceVersionsRecord(first: "1.0", firstAt: now, latest: "2.0", latestAt: now + 5)

    /// Each record's v1 bytes: u8 1, big-endian integers, strings as u32 length ‖ UTF-8.
    static let vectors: [(name: String, encoded: [UInt8], hex: String)] = [
        ("app", app.encoded(),
         "010000000000000007000000006ab13b82010000000a70726f64756374696f6e000000006ab13b800002000000030001"),
        ("flag", flag.encoded(),
         "0100000000044461726b000000006ab13b80000000006ab13b81010000000a70726f64756374696f6e0000000474727565"
            + "010000000a70726f64756374696f6e190000000566616c7365010000000462657461000000000132000000047472"
            + "7565010000000b6170705f76657273696f6e030000000522322e3022"),
        ("override", override.encoded(), "0100000001310000000000000000000000006ab13b80000000027161"),
        ("note", note.encoded(),
         "0100000003322e30000000034e6577000000024869000000006ab13b80000000006ab13b80000000006ab13b80"),
        ("versions", versions.encoded(), "0100000003312e30000000006ab13b8000000003322e30000000006ab13b85"),
    ]

    static func decoders() -> [(String, ([UInt8]) throws -> Any)] {
        [("app", { try FeatureFlagAppRecord(encoded: $0) }), ("flag", { try FeatureFlagRecord(encoded: $0) }),
         ("override", { try FeatureFlagOverrideRecord(encoded: $0) }), ("note", { try ReleaseNoteRecord(encoded: $0) }),
         ("versions", { try DeviceVersionsRecord(encoded: $0) })]
    }

    @Test func version1BytesArePinned() {
        for v in Self.vectors { #expect(Hex.encode(v.encoded) == v.hex, "\(v.name)") }
    }

    @Test func everyRecordRoundTrips() throws {
        #expect(try FeatureFlagAppRecord(encoded: Self.app.encoded()) == Self.app)
        #expect(try FeatureFlagRecord(encoded: Self.flag.encoded()) == Self.flag)
        #expect(try FeatureFlagOverrideRecord(encoded: Self.override.encoded()) == Self.override)
        #expect(try ReleaseNoteRecord(encoded: Self.note.encoded()) == Self.note)
        #expect(try DeviceVersionsRecord(encoded: Self.versions.encoded()) == Self.versions)
        // Every type and operator by its index; an expiry; non-ASCII text.
        for type in FeatureFlagType.allCases {
            var flag = Self.flag
            flag.type = type
            flag.description = "Café ✓"
            flag.rules[0].conditions = FeatureFlagOperator.allCases.map {
                FeatureFlagCondition(attribute: "custom.tier", op: $0, operandJSON: "[\"a\"]")
            }
            flag.rules.append(.init(name: "off", environment: "staging", active: false, rollout: 0, valueJSON: "false",
                                    conditions: []))
            #expect(try FeatureFlagRecord(encoded: flag.encoded()) == flag, "\(type)")
        }
        var expiring = Self.override
        expiring.expiresAt = Self.now + 3_600
        #expect(try FeatureFlagOverrideRecord(encoded: expiring.encoded()) == expiring)
        let empty = FeatureFlagAppRecord(generation: 0, environments: [])
        #expect(try FeatureFlagAppRecord(encoded: empty.encoded()) == empty)
    }

    @Test func truncatedTrailingAndUnknownBytesAreRefused() throws {
        for (name, decode) in Self.decoders() {
            let good = try #require(Self.vectors.first { $0.name == name }).encoded
            for cut in 0..<good.count {
                #expect(throws: StoreError.self, "\(name) cut at \(cut)") { _ = try decode(Array(good[..<cut])) }
            }
            #expect(throws: StoreError(.corrupt, ""), "\(name) with a trailing byte") { _ = try decode(good + [0]) }
            #expect(throws: StoreError(.unknownVersion, ""), "\(name) v2") { _ = try decode([2] + good.dropFirst()) }
        }
        // A type or operator index past the last, a rollout over 100%, a boolean byte of 2.
        var bytes = Self.flag.encoded()
        bytes[1] = 5
        #expect(throws: StoreError(.corrupt, "")) { try FeatureFlagRecord(encoded: bytes) }
        bytes = Self.flag.encoded()
        bytes[bytes.count - 10] = 10  // the condition's op (before its 4 + 5 operand bytes)
        #expect(throws: StoreError(.corrupt, "")) { try FeatureFlagRecord(encoded: bytes) }
        bytes = Self.flag.encoded()
        let at = try #require(Self.index(of: Array("production".utf8) + [25], in: bytes)) + 10  // the 25%
        bytes[at] = 101
        #expect(throws: StoreError(.corrupt, "")) { try FeatureFlagRecord(encoded: bytes) }
        bytes = Self.flag.encoded()
        let active = try #require(Self.index(of: Array("beta".utf8) + [0, 0, 0, 0, 1], in: bytes)) + 8
        bytes[active] = 2
        #expect(throws: StoreError(.corrupt, "")) { try FeatureFlagRecord(encoded: bytes) }
    }

    static func index(of needle: [UInt8], in bytes: [UInt8]) -> Int? {
        (0...(bytes.count - needle.count)).first { Array(bytes[$0..<($0 + needle.count)]) == needle }
    }

    @Test func aFlagOver256KiBOrWithTooLongAListIsRefusedAtWriting() {
        var flag = Self.flag
        flag.key = "big"
        #expect(flag.writeRefusal == nil)
        let value = "\"" + String(repeating: "x", count: 1_022) + "\""
        let condition = FeatureFlagCondition(attribute: "custom.k", op: .in, operandJSON: value)
        flag.rules = (0..<14).map { i in
            FeatureFlagRule(name: "r\(i)", environment: "", active: true, rollout: 100, valueJSON: value,
                            conditions: Array(repeating: condition, count: 16))
        }
        #expect(flag.encoded().count < FeatureFlagRecord.maximumEncodedSize && flag.writeRefusal == nil,
                "14 rules of 16 conditions of 1 KiB fit: \(flag.encoded().count) bytes")
        flag.rules += flag.rules
        #expect(flag.encoded().count > FeatureFlagRecord.maximumEncodedSize)
        #expect(flag.writeRefusal?.contains("at most 262144") == true, "\(flag.writeRefusal ?? "")")
        var many = Self.flag
        many.defaults = (0..<256).map { FeatureFlagValue(environment: "e\($0)", valueJSON: "true") }
        #expect(many.writeRefusal?.contains("256 defaults") == true, "a u8 count cannot hold 256")
        var over = Self.flag
        over.rollouts[0].percent = 101
        #expect(over.writeRefusal?.contains("over 100%") == true)
    }

    @Test func deviceVersionsKeepTheFirstAndOnlyRaiseTheLatest() {
        let compare: (String, String) -> Int? = { a, b in
            let x = a.split(separator: ".").compactMap { Int($0) }, y = b.split(separator: ".").compactMap { Int($0) }
            return x.lexicographicallyPrecedes(y) ? -1 : x == y ? 0 : 1
        }
        let t = Self.now
        #expect(DeviceVersionsRecord.noting("", stored: nil, at: t, compare: compare) == nil, "no version: nothing")
        let first = DeviceVersionsRecord.noting("2.1", stored: nil, at: t, compare: compare)
        #expect(first == DeviceVersionsRecord(first: "2.1", firstAt: t, latest: "2.1", latestAt: t))
        #expect(DeviceVersionsRecord.noting("2.1", stored: first, at: t + 9, compare: compare) == nil, "same: nothing")
        #expect(DeviceVersionsRecord.noting("2.0", stored: first, at: t + 9, compare: compare) == nil, "never falls")
        #expect(DeviceVersionsRecord.noting("2.10", stored: first, at: t + 9, compare: compare)
                    == DeviceVersionsRecord(first: "2.1", firstAt: t, latest: "2.10", latestAt: t + 9))
        #expect(DeviceVersionsRecord.noting("x", stored: first, at: t + 9, compare: { _, _ in nil }) == nil,
                "not comparable: left as stored")
    }
}
