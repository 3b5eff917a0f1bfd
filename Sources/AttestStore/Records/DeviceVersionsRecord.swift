import AttestCore

/// The app versions a device lineage was first and last seen with (What's New shows the
/// notes of versions after `first` up to `latest`).
///
/// Key in `device_versions`: the `LineageKey`'s bytes. Layout v1:
/// ```
/// u8 1 | first string | firstAt i64 | latest string | latestAt i64
/// ```
/// Validate writes it in its final write; the flags pool raises `latest` on an upgrade.
public struct DeviceVersionsRecord: StoreRecord, Hashable {
    public static let currentVersion: UInt8 = 1
    public static let recordName = "device versions"

    public var first: String
    public var firstAt: Timestamp
    public var latest: String
    public var latestAt: Timestamp

    public init(first: String, firstAt: Timestamp, latest: String, latestAt: Timestamp) {
        self.first = first
        self.firstAt = firstAt
        self.latest = latest
        self.latestAt = latestAt
    }

    /// The record after the lineage was seen with `appVersion` at `at`, or nil when there is
    /// nothing to write (no version, or nothing changed): `first` stays as stored (the version
    /// itself when nothing was); `latest` rises to the version when `compare` (-1/0/1, nil
    /// when either is not a version) says it is above the stored one, and never falls. A
    /// record is started with any non-empty text (validate's rule, design §3.2); a caller that
    /// takes only valid versions (the flags GET's `X-App-Version`) checks before.
    public static func noting(_ appVersion: String, stored: DeviceVersionsRecord?, at: Timestamp,
                              compare: (String, String) -> Int?) -> DeviceVersionsRecord? {
        guard !appVersion.isEmpty else { return nil }
        guard var record = stored else {
            return DeviceVersionsRecord(first: appVersion, firstAt: at, latest: appVersion, latestAt: at)
        }
        guard compare(appVersion, record.latest) == 1 else { return nil }
        record.latest = appVersion
        record.latestAt = at
        return record
    }

    public func encode(into w: inout BinaryWriter) {
        w.string(first)
        w.i64(firstAt.seconds)
        w.string(latest)
        w.i64(latestAt.seconds)
    }

    public init(from r: inout BinaryReader) throws {
        first = try r.string()
        firstAt = Timestamp(seconds: try r.i64())
        latest = try r.string()
        latestAt = Timestamp(seconds: try r.i64())
    }
}

/// Device versions per lineage (`DeviceVersionsRecord`).
///
/// ```
/// device_versions  LineageKey.bytes  → DeviceVersionsRecord
/// ```
extension Transaction {
    public func deviceVersions(lineage: LineageKey) throws -> DeviceVersionsRecord? {
        try get(.deviceVersions, lineage.bytes).map(DeviceVersionsRecord.init(encoded:))
    }

    public func prefetchDeviceVersions(lineage: LineageKey) { prefetch(.deviceVersions, lineage.bytes) }

    public func put(_ versions: DeviceVersionsRecord, lineage: LineageKey) throws {
        try put(.deviceVersions, lineage.bytes, versions.encoded())
    }
}
