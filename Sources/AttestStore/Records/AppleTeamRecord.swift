import AttestCore

/// An Apple developer team whose receipts are redeemed: whether its redemptions are stopped
/// (Apple answered 401: the team's DeviceCheck key is refused) and what Apple answered.
///
/// Key in `apple_teams`: the team id (UTF-8). Layout v1:
/// ```
/// u8 1 | stoppedAt i64 (0 = not stopped) | stopReason string
///      | answers u16 (n) | n × (status u16 (0 = no HTTP answer) | count u64), by status
///      | lastAnswerAt i64 (0 = none)
/// ```
/// A 401 sets `stoppedAt`; `attestctl apple key add` for the team clears it.
public struct AppleTeamRecord: StoreRecord, Hashable {
    public static let currentVersion: UInt8 = 1
    public static let recordName = "apple team"

    /// Not part of the value: the key.
    public var teamID: String
    public var stoppedAt: Timestamp?
    public var stopReason: String
    /// How many answers of each HTTP status Apple gave (0: attempts without an answer).
    public var answers: [UInt16: UInt64]
    public var lastAnswerAt: Timestamp?

    public init(teamID: String, stoppedAt: Timestamp? = nil, stopReason: String = "", answers: [UInt16: UInt64] = [:],
                lastAnswerAt: Timestamp? = nil) {
        self.teamID = teamID
        self.stoppedAt = stoppedAt
        self.stopReason = stopReason
        self.answers = answers
        self.lastAnswerAt = lastAnswerAt
    }

    public func encode(into w: inout BinaryWriter) {
        w.i64(stoppedAt?.seconds ?? 0)
        w.string(stopReason)
        let sorted = answers.sorted { $0.key < $1.key }.prefix(Int(UInt16.max))
        w.u16(UInt16(sorted.count))
        for (status, count) in sorted {
            w.u16(status)
            w.u64(count)
        }
        w.i64(lastAnswerAt?.seconds ?? 0)
    }

    /// `teamID` is not part of the value: `Transaction.appleTeam(_:)` sets it.
    public init(from r: inout BinaryReader) throws {
        teamID = ""
        let stopped = try r.i64()
        stoppedAt = stopped == 0 ? nil : Timestamp(seconds: stopped)
        stopReason = try r.string()
        var answers = [UInt16: UInt64]()
        for _ in 0..<Int(try r.u16()) {
            let status = try r.u16()
            guard answers[status] == nil else { throw StoreError(.corrupt, "apple team answers list \(status) twice") }
            answers[status] = try r.u64()
        }
        self.answers = answers
        let last = try r.i64()
        lastAnswerAt = last == 0 ? nil : Timestamp(seconds: last)
    }
}

/// Apple teams (`AppleTeamRecord`).
///
/// ```
/// apple_teams  teamID (UTF-8)  → AppleTeamRecord
/// ```
extension Transaction {
    public func appleTeam(_ teamID: String) throws -> AppleTeamRecord? {
        guard let bytes = try get(.appleTeams, Array(teamID.utf8)) else { return nil }
        var record = try AppleTeamRecord(encoded: bytes)
        record.teamID = teamID
        return record
    }

    public func put(_ team: AppleTeamRecord) throws {
        precondition(!team.teamID.isEmpty, "a team id")
        try put(.appleTeams, Array(team.teamID.utf8), team.encoded())
    }

    /// Every team with a record, in team id order.
    public func appleTeams() throws -> [AppleTeamRecord] {
        var found = [AppleTeamRecord]()
        try scan(.appleTeams) { key, value in
            var record = try AppleTeamRecord(encoded: value)
            record.teamID = String(decoding: key, as: UTF8.self)
            found.append(record)
            return true
        }
        return found
    }
}
