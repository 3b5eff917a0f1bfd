import AttestCore

/// Release notes (What's New) and which lineages have seen which.
///
/// ```
/// release_notes  appID ‖ 0x00 ‖ noteID (16)          → ReleaseNoteRecord
/// notes_seen     LineageKey.digest (16) ‖ noteID (16) → u8 1 | seenAt i64
/// ```
/// A deleted note leaves its `notes_seen` entries (deleting does not scan); `store check`
/// allows them.
extension Transaction {
    public func releaseNote(appID: String, id: [UInt8]) throws -> ReleaseNoteRecord? {
        precondition(id.count == 16, "a note id is 16 bytes")
        guard let bytes = try get(.releaseNotes, Self.appPrefix(appID) + id) else { return nil }
        var note = try ReleaseNoteRecord(encoded: bytes)
        note.id = id
        return note
    }

    /// Every note of the app, in id order (bytewise).
    public func releaseNotes(appID: String) throws -> [ReleaseNoteRecord] {
        var found = [ReleaseNoteRecord]()
        try scanPrefix(.releaseNotes, Self.appPrefix(appID)) { rest, value in
            guard rest.count == 16 else { throw StoreError(.corrupt, "release note id of \(rest.count) bytes") }
            var note = try ReleaseNoteRecord(encoded: value)
            note.id = Array(rest)
            found.append(note)
        }
        return found
    }

    public func put(_ note: ReleaseNoteRecord, appID: String) throws {
        precondition(note.id.count == 16, "a note id is 16 bytes")
        try put(.releaseNotes, Self.appPrefix(appID) + note.id, note.encoded())
    }

    /// `false` when there was no such note. Its `notes_seen` entries stay.
    @discardableResult
    public func deleteReleaseNote(appID: String, id: [UInt8]) throws -> Bool {
        precondition(id.count == 16, "a note id is 16 bytes")
        return try delete(.releaseNotes, Self.appPrefix(appID) + id)
    }

    /// When the lineage first marked the note seen; nil when it has not.
    public func noteSeen(lineage: LineageKey, note: [UInt8]) throws -> Timestamp? {
        precondition(note.count == 16, "a note id is 16 bytes")
        return try get(.notesSeen, lineage.digest + note).map(Self.seenAt)
    }

    /// Marks the note seen by the lineage at `at` unless it already was; returns the time
    /// stored (`at`, or the first time). A repeat writes nothing.
    @discardableResult
    public func markNoteSeen(lineage: LineageKey, note: [UInt8], at: Timestamp) throws -> Timestamp {
        if let stored = try noteSeen(lineage: lineage, note: note) { return stored }
        var value = BinaryWriter(version: 1)
        value.i64(at.seconds)
        if try put(.notesSeen, lineage.digest + note, value.bytes, noOverwrite: true) { return at }
        // A concurrent writer got there first (PostgreSQL): its time stands.
        guard let stored = try noteSeen(lineage: lineage, note: note) else {
            throw StoreError(.io, "a seen note vanished while it was marked")
        }
        return stored
    }

    /// The notes the lineage has seen, with when.
    public func seenNotes(lineage: LineageKey) throws -> [[UInt8]: Timestamp] {
        var found = [[UInt8]: Timestamp]()
        try scanPrefix(.notesSeen, lineage.digest) { rest, value in
            guard rest.count == 16 else { throw StoreError(.corrupt, "seen note id of \(rest.count) bytes") }
            found[Array(rest)] = try Self.seenAt(value)
        }
        return found
    }

    /// A `notes_seen` value: `u8 1 | seenAt i64`.
    static func seenAt(_ value: [UInt8]) throws -> Timestamp {
        var reader = try BinaryReader(value, record: "seen note")
        guard reader.version == 1 else {
            throw StoreError(.unknownVersion, "seen note version \(reader.version); this build reads 1")
        }
        let at = Timestamp(seconds: try reader.i64())
        try reader.finish("seen note")
        return at
    }
}
