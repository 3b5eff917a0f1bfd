import AttestConfig
import AttestCore
import AttestOperations
import AttestStore
import CLISupport

/// `attestctl receipts status|try`: attest-receipts' queue and answers, and one live call.
let receiptsCommand = Command(
    name: "receipts",
    summary: "the receipt redemption queue and Apple's answers; try one redemption live",
    usage: """
        usage: attestctl receipts status [--key KEYID] [--json] [--data DIR]
               attestctl receipts try --team TEAMID [--receipt FILE [--environment production|development]]
                                      [--data DIR]

        status shows the queue (receipts waiting for redemption, and those due now), each team's
        answers from Apple by HTTP status (0: no answer), the teams a 401 stopped (they wait for
        'attestctl apple key add'), the teams with a key, and the next runs (the first 20 queued:
        key id, when, failures in a row, Apple's last status and what it meant). With --key (the
        key id in base64), that one receipt's redemption state, queued or not.

        try sends one receipt to Apple now with the team's DeviceCheck key, as attest-receipts
        would (receipts.appleURL, receipts.appleCAFile, receipts.authorizationPrefix), and prints
        Apple's status and what attest-receipts would do next; it writes nothing. The receipt is
        FILE (DER, or its base64 text), else the stored receipt of the team's most recently seen
        device (FILE is sent to --environment's host, production unless given). This is the
        opt-in live check of what only Apple can say (README, known unknowns).
        Exit status 0 when Apple answered 200 with a receipt that verifies, else 1.

        example: attestctl receipts try --team ABCDE12345    (after 'attestctl apple key add')
        """,
    run: { argv in
        let (sub, rest) = try subcommand(argv, ["status", "try"])
        let args = try Arguments(rest, valued: ["data", "team", "receipt", "environment", "key"], switches: ["json"])
        let data = dataDirectory(args)
        if sub == "status", let key = args.value("key") { return try ReceiptsStatus.one(data, key: key) }
        return sub == "status" ? try ReceiptsStatus.run(data, json: args.flag("json"))
                               : try ReceiptsTry.run(data, team: args.value("team"), file: args.value("receipt"),
                                                     environment: args.value("environment"))
    }
)

/// `attestctl receipts status`.
enum ReceiptsStatus {
    /// The most entries of the queue read (the counts say "at least" past it).
    static let scanLimit = 100_000
    static let nextShown = 20

    /// One receipt's redemption state as JSON (`--key`).
    static func one(_ data: DataDirectory, key: String) throws -> Int32 {
        guard let keyID = Base64.decode(key), keyID.count == 32 else {
            throw UsageError("--key is a key id: 32 bytes in base64")
        }
        let (_, store) = try openStore(data)
        guard let record = try store.read({ try $0.receiptRecord(keyID: keyID) }) else {
            throw CommandFailure(.notFound, "no receipt stored for key \(key)")
        }
        Output.out(JSONValue.object(describe(record, keyID: keyID)).prettyJSONText)
        return 0
    }

    /// A receipt's redemption state: its members in `status --json`'s `queue` and `--key`.
    static func describe(_ r: ReceiptRecord, keyID: [UInt8]) -> [(String, JSONValue)] {
        func time(_ t: Timestamp?) -> JSONValue { t.map { .string($0.iso8601) } ?? .null }
        return [("keyId", .string(Base64.encode(keyID))), ("kind", .string(r.kind)), ("check", .string(r.check.name)),
                ("nextRedeemAt", time(r.nextRedeemAt)), ("failures", .int(Int64(r.failures))),
                ("lastAttemptAt", time(r.lastAttemptAt)), ("lastStatus", .int(Int64(r.lastStatus))),
                ("lastOutcome", .string(r.lastOutcome)), ("redeemedAt", time(r.redeemedAt)),
                ("riskMetric", r.riskMetric.map { .int(Int64($0)) } ?? .null),
                ("notBefore", time(r.notBefore)), ("expiresAt", time(r.expiresAt)),
                ("receiptSha256", .string(Hex.encode(SHA256.hash(r.receipt))))]
    }

    static func run(_ data: DataDirectory, json: Bool) throws -> Int32 {
        let (_, store) = try openStore(data)
        let time = now()
        let keyed = Set(AppleKeyStore(data).teams())
        let (queued, dueNow, next, teams) = try store.read { txn in
            let next = try txn.dueReceipts(at: Timestamp(seconds: .max), limit: nextShown).compactMap { entry in
                try txn.receiptRecord(keyID: entry.keyID).map { (entry.due, entry.keyID, $0) }
            }
            return (try txn.count(.receiptDue), try txn.dueReceipts(at: time, limit: scanLimit).count, next,
                    try txn.appleTeams())
        }
        let teamIDs = Set(teams.map(\.teamID)).union(keyed).sorted()
        let byTeam = Dictionary(uniqueKeysWithValues: teams.map { ($0.teamID, $0) })
        if json {
            let items: [JSONValue] = teamIDs.map { id in
                let t = byTeam[id]
                let answers = (t?.answers ?? [:]).sorted { $0.key < $1.key }
                    .map { (String($0.key), JSONValue.int(Int64(clamping: $0.value))) }
                return [
                    "team": .string(id), "hasKey": .bool(keyed.contains(id)),
                    "stoppedAt": t?.stoppedAt.map { .string($0.iso8601) } ?? .null,
                    "stopReason": .string(t?.stopReason ?? ""),
                    "lastAnswerAt": t?.lastAnswerAt.map { .string($0.iso8601) } ?? .null,
                    "answers": .object(answers),
                ]
            }
            let report: JSONValue = [
                "queued": .int(Int64(queued)), "dueNow": .int(Int64(dueNow)),
                "queue": .array(next.map { .object(describe($0.2, keyID: $0.1)) }),
                "teams": .array(items),
            ]
            Output.out(report.prettyJSONText)
            return 0
        }
        Output.out("queued: \(queued) receipt\(queued == 1 ? "" : "s"), due now: \(dueNow)"
                   + (dueNow == scanLimit ? " or more" : ""))
        if next.isEmpty {
            Output.out("next runs: none")
        } else {
            Output.out(Output.table(["NEXT RUN", "KEY ID", "FAILURES", "LAST", "OUTCOME"], next.map { due, keyID, r in
                [due.iso8601, String(Base64.encode(keyID).prefix(12)) + "…", String(r.failures),
                 r.lastStatus == 0 ? "-" : String(r.lastStatus), r.lastOutcome.isEmpty ? "-" : r.lastOutcome]
            }))
        }
        guard !teamIDs.isEmpty else {
            Output.out("no teams: register a DeviceCheck key with 'attestctl apple key add'")
            return 0
        }
        let header = ["TEAM", "KEY", "STOPPED", "LAST ANSWER", "ANSWERS (status: count)"]
        Output.out(Output.table(header, teamIDs.map { id in
            let t = byTeam[id]
            let answers = (t?.answers ?? [:]).sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" }
            return [id, keyed.contains(id) ? "yes" : "no",
                    t?.stoppedAt.map { "\($0.iso8601) \(t?.stopReason ?? "")" } ?? "-",
                    t?.lastAnswerAt?.iso8601 ?? "-", answers.isEmpty ? "-" : answers.joined(separator: ", ")]
        }))
        return 0
    }
}
