import AttestCore
import AttestStore

/// What's New: an app's release notes, which of them a device sees, and the SDK's answer.
///
/// A device sees a note when the note is published (`publishAt` ≤ now), its version is above
/// the version the device first attested with and at or below the latest version it reported
/// (`DeviceVersionsRecord`, compared by `Versions`), and the device's lineage has not marked it
/// seen. Newest version first, then latest `publishAt` first.
///
/// Answer (the SDK's `ReleaseNote`, decoded strictly: one bad item fails the whole list):
/// ```
/// {"releaseNotes":[{"id":"UPPER-CASE-UUID","version":"2.1","title":"…","body":"markdown",
///                   "publishedAt":"2026-03-10T12:00:00Z"}]}
/// ```
public enum ReleaseNotes {
    public static let maximumTitleCharacters = 200
    public static let maximumBodyCharacters = 20_000

    /// The notes `versions`' device sees, at most `limit`.
    public static func visible(_ notes: [ReleaseNoteRecord], versions: DeviceVersionsRecord?,
                               seen: [[UInt8]: Timestamp], now: Timestamp, limit: Int) -> [ReleaseNoteRecord] {
        guard let versions, let first = Versions.Parsed(versions.first),
              let latest = Versions.Parsed(versions.latest) else { return [] }
        // Each version is parsed once, not at every comparison of the filter and the sort.
        let shown = notes.compactMap { n -> (note: ReleaseNoteRecord, version: Versions.Parsed)? in
            guard n.publishAt <= now, seen[n.id] == nil, isPrintable(n.publishAt),
                  let v = Versions.Parsed(n.version), Versions.compare(v, first) > 0,
                  Versions.compare(v, latest) <= 0 else { return nil }
            return (n, v)
        }
        return Array(shown.sorted { a, b in
            let order = Versions.compare(a.version, b.version)
            return order != 0 ? order > 0 : a.note.publishAt > b.note.publishAt
        }.prefix(max(0, limit)).map(\.note))
    }

    /// `{"releaseNotes":[…]}` in the SDK's exact shape.
    public static func answer(_ notes: [ReleaseNoteRecord]) -> [UInt8] {
        JSONValue.object([("releaseNotes", .array(notes.map { n in
            .object([("id", .string(idText(n.id))), ("version", .string(n.version)), ("title", .string(n.title)),
                     ("body", .string(n.body)), ("publishedAt", .string(n.publishAt.iso8601))])
        }))]).jsonBytes
    }

    /// A note as the org API and `attestctl notes list --json` show it.
    public static func json(_ n: ReleaseNoteRecord, now: Timestamp) -> JSONValue {
        .object([("id", .string(idText(n.id))), ("version", .string(n.version)), ("title", .string(n.title)),
                 ("body", .string(n.body)), ("publish_at", .string(n.publishAt.iso8601)),
                 ("published", .bool(n.publishAt <= now)), ("created_at", .string(n.createdAt.iso8601)),
                 ("updated_at", .string(n.updatedAt.iso8601))])
    }

    /// A UUID written `8-4-4-4-12` hex digits, either case: its 16 bytes, else nil.
    public static func parseID(_ text: String) -> [UInt8]? {
        let u = Array(text.utf8)
        guard u.count == 36 else { return nil }
        var bytes = [UInt8]()
        var i = 0
        while i < 36 {
            if i == 8 || i == 13 || i == 18 || i == 23 {
                guard u[i] == UInt8(ascii: "-") else { return nil }
                i += 1
                continue
            }
            guard let hi = hex(u[i]), let lo = hex(u[i + 1]) else { return nil }
            bytes.append(hi << 4 | lo)
            i += 2
        }
        return bytes
    }

    /// The upper-case UUID text of a 16-byte id (as Swift's `uuidString`).
    public static func idText(_ id: [UInt8]) -> String {
        // Byte by byte: What's New writes one for every note it lists.
        let digits = Array("0123456789ABCDEF".utf8)
        var out = [UInt8]()
        out.reserveCapacity(36)
        for (i, byte) in id.enumerated() {
            if id.count == 16, i == 4 || i == 6 || i == 8 || i == 10 { out.append(UInt8(ascii: "-")) }
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// A new random (version 4) id.
    public static func newID(_ random: any RandomSource) -> [UInt8] {
        var b = random.bytes(16)
        b[6] = b[6] & 0x0F | 0x40
        b[8] = b[8] & 0x3F | 0x80
        return b
    }

    /// Checks a note's members. - Throws: `bad_request` naming the member.
    public static func check(version: String, title: String, body: String,
                             publishAt: Timestamp) throws(ServiceError) {
        guard Versions.isVersion(version) else {
            throw ServiceError(.badRequest, "the version must be a version such as 2.1.0, 1.0 or 2.1.3-beta "
                                            + "(at most \(Versions.maximumBytes) bytes), got \"\(version.prefix(80))\"")
        }
        guard !title.isEmpty, title.count <= maximumTitleCharacters else {
            throw ServiceError(.badRequest, "the title is 1 to \(maximumTitleCharacters) characters")
        }
        guard body.count <= maximumBodyCharacters else {
            throw ServiceError(.badRequest, "the body is at most \(maximumBodyCharacters) characters")
        }
        guard isPrintable(publishAt) else {
            throw ServiceError(.badRequest, "the publish date must be between 1970 and 9999")
        }
    }

    /// Dates the SDK decodes: years 1970…9999 (`iso8601` writes them in 20 characters).
    static func isPrintable(_ t: Timestamp) -> Bool { t.seconds >= 0 && t.seconds < 253_402_300_800 }

    private static func hex(_ c: UInt8) -> UInt8? {
        switch c {
        case 0x30...0x39: return c - 0x30
        case 0x41...0x46: return c - 0x41 + 10
        case 0x61...0x66: return c - 0x61 + 10
        default: return nil
        }
    }
}
