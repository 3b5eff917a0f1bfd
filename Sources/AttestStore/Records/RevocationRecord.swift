import AttestCore

/// Why an operator revoked a device key: what its page in the console says, kept beside the
/// device (whose record says only `revoked`, and which refresh reads on every request, so it
/// stays small) for as long as the device.
///
/// Key in `revocations`: the 32 raw keyId bytes. Layout v1:
/// ```
/// u8 1 | at i64 | by string (who: "attestctl (root)", a session's name, an API key's id) | reason string
/// ```
public struct RevocationRecord: StoreRecord, Hashable {
    public static let currentVersion: UInt8 = 1
    public static let recordName = "revocation"

    public var at: Timestamp
    public var by: String
    public var reason: String

    public init(at: Timestamp, by: String, reason: String) {
        self.at = at
        self.by = AuditText.clean(by)
        self.reason = AuditText.clean(reason)
    }

    public func encode(into w: inout BinaryWriter) {
        w.i64(at.seconds)
        w.string(by)
        w.string(reason)
    }

    public init(from r: inout BinaryReader) throws {
        at = Timestamp(seconds: try r.i64())
        by = try r.string()
        reason = try r.string()
    }
}

extension Transaction {
    public func revocation(keyID: [UInt8]) throws -> RevocationRecord? {
        try get(.revocations, keyID).map { try RevocationRecord(encoded: $0) }
    }

    public func put(_ revocation: RevocationRecord, keyID: [UInt8]) throws {
        guard keyID.count == 32 else { throw StoreError(.invalidKey, "a keyId of \(keyID.count) bytes") }
        try put(.revocations, keyID, revocation.encoded())
    }
}
