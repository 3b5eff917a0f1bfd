import AttestCore

/// A feature-flag environment of an app (`production` always exists; the flags domain adds others).
public struct FeatureFlagEnvironment: Hashable, Sendable {
    public var name: String
    public var createdAt: Timestamp

    public init(name: String, createdAt: Timestamp) {
        self.name = name
        self.createdAt = createdAt
    }
}

/// An app's feature-flag state as a whole: a generation every change bumps (so a worker's
/// compiled flags know when they are stale) and when it was bumped last (so the flag stream's
/// auth can tell a channel's stored message predates the last change: a publish that failed),
/// the environments, and how many flags, overrides and release notes the app stores (so a
/// tier-limit check costs one read).
///
/// Key in `feature_flag_apps`: the App ID (UTF-8). Layout v1:
/// ```
/// u8 1 | generation u64 | changedAt i64 | environments u8 n × (name string, createdAt i64)
///      | flagCount u16 | overrideCount u32 | noteCount u16
/// ```
/// The store does not keep these in step: the flags domain (`FeatureFlagAdmin`) bumps the
/// generation and the counts in the transaction of each change; `attestctl store check`
/// recounts them.
public struct FeatureFlagAppRecord: StoreRecord, Hashable {
    public static let currentVersion: UInt8 = 1
    public static let recordName = "feature flag app"

    public var generation: UInt64
    /// When `generation` was last bumped (unix seconds; 0 for a state never changed).
    public var changedAt: Timestamp
    public var environments: [FeatureFlagEnvironment]
    public var flagCount: UInt16
    public var overrideCount: UInt32
    public var noteCount: UInt16

    public init(generation: UInt64, changedAt: Timestamp = Timestamp(seconds: 0),
                environments: [FeatureFlagEnvironment], flagCount: UInt16 = 0,
                overrideCount: UInt32 = 0, noteCount: UInt16 = 0) {
        self.generation = generation
        self.changedAt = changedAt
        self.environments = environments
        self.flagCount = flagCount
        self.overrideCount = overrideCount
        self.noteCount = noteCount
    }

    /// Why this record may not be written (nil: it may).
    public var writeRefusal: String? {
        environments.count > Int(UInt8.max)
            ? "\(environments.count) feature flag environments; at most \(UInt8.max) are stored" : nil
    }

    public func encode(into w: inout BinaryWriter) {
        w.u64(generation)
        w.i64(changedAt.seconds)
        w.u8(UInt8(truncatingIfNeeded: environments.count))
        for e in environments {
            w.string(e.name)
            w.i64(e.createdAt.seconds)
        }
        w.u16(flagCount)
        w.u32(overrideCount)
        w.u16(noteCount)
    }

    public init(from r: inout BinaryReader) throws {
        generation = try r.u64()
        changedAt = Timestamp(seconds: try r.i64())
        environments = try (0..<Int(try r.u8())).map { _ in
            FeatureFlagEnvironment(name: try r.string(), createdAt: Timestamp(seconds: try r.i64()))
        }
        flagCount = try r.u16()
        overrideCount = try r.u32()
        noteCount = try r.u16()
    }
}
