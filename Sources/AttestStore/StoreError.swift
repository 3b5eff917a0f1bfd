/// The one error type of `AttestStore`. Every LMDB failure becomes one of these (the service
/// answers 503 `unavailable`); nothing here traps on bad data or a full map. PostgreSQL's
/// failures become one at the transaction that met them (`PostgresStore`; `PGConnection.Failure`
/// is the backend's own, never public, and carries the SQLSTATE that decides a retry).
/// Two errors are equal when their codes are; `file` and `line` name the throwing site.
public struct StoreError: Error, Hashable, Sendable, CustomStringConvertible {
    public enum Code: String, Sendable, CaseIterable {
        /// The map (the environment's size limit) is full: raise `store.mapSizeMiB`.
        case full
        /// Too many concurrent readers (`MDB_READERS_FULL`).
        case busy
        /// A record failed to decode: truncated, or fields out of range.
        case corrupt
        /// A record carries a layout version this build does not know.
        case unknownVersion = "unknown_version"
        /// Opening the data directory failed (missing, permissions, version mismatch).
        case open
        /// A record or key over its size bound was refused at writing (nothing was written).
        case tooLarge = "too_large"
        /// A key the layout cannot hold: an empty App ID or organization name, a 0x00 in an App ID,
        /// flag key or override subject (0x00 ends them in the keys), or an id or feedback author
        /// digest that is not 16 bytes (notes, feature requests, tickets). Nothing was read or written.
        case invalidKey = "invalid_key"
        /// Any other LMDB or I/O error.
        case io
    }

    public let code: Code
    public let reason: String
    /// LMDB's own return code, when the error came from LMDB.
    public let lmdbCode: Int32?
    public let file: String
    public let line: Int

    public init(_ code: Code, _ reason: String, lmdbCode: Int32? = nil, file: String = #fileID, line: Int = #line) {
        self.code = code
        self.reason = reason
        self.lmdbCode = lmdbCode
        self.file = file
        self.line = line
    }

    public static func == (a: StoreError, b: StoreError) -> Bool { a.code == b.code }
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }

    public var description: String { "store \(code.rawValue): \(reason)" }
}
