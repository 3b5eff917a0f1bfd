import AttestConfig
import AttestCore

extension KeyRing {
    /// What `attestctl keys list --json` prints: each key of the index at `now`, newest first.
    ///
    /// ```
    /// [{"kid", "algorithm", "state": "scheduled"|"pending"|"active"|"retired"|"withdrawn",
    ///   "published": bool (listed in jwks.json), "signing": bool, "privateKey": bool (file present),
    ///   "publishAt", "activateAt", "retireAt"|null, "withdrawAt"|null}, …]
    /// ```
    public func listing(at now: Timestamp) -> JSONValue {
        let signing = activeEntry(at: now)?.kid
        return .array(entries.map { e in
            let state = e.state(at: now)
            return .object([
                ("kid", .string(e.kid)), ("algorithm", .string(e.algorithm)), ("state", .string(state.rawValue)),
                ("published", .bool(state.isPublished)), ("signing", .bool(e.kid == signing)),
                ("privateKey", .bool(FileIO.exists(directory + "/" + e.file))),
                ("publishAt", .string(e.publishAt.iso8601)), ("activateAt", .string(e.activateAt.iso8601)),
                ("retireAt", KeyIndex.time(e.retireAt)), ("withdrawAt", KeyIndex.time(e.withdrawAt)),
            ])
        })
    }

    /// The same as table rows: KID, ALG, STATE, PUBLISH, ACTIVATE, RETIRE, WITHDRAW.
    public func listingRows(at now: Timestamp) -> [[String]] {
        entries.map { e in
            [e.kid, e.algorithm, e.state(at: now).rawValue, e.publishAt.iso8601, e.activateAt.iso8601,
             e.retireAt?.iso8601 ?? "-", e.withdrawAt?.iso8601 ?? "-"]
        }
    }
}
