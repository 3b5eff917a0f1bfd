import AttestCore
import AttestStore
import FastCGI

/// What's New, as the SDK asks for it (design §1.5, §3.8):
///
/// ```
/// GET  /api/v1/whats-new            ← 200 {"releaseNotes":[{"id":"UPPER-UUID","version","title","body",
///                                                           "publishedAt":"2026-03-10T12:00:00Z"}]}
/// POST /api/v1/whats-new/<id>/seen  ← 200 {"status":"ok","seenAt":"…Z"}   (the first seenAt on a repeat)
/// ```
/// Auth: `FlagsAuth`. A token's device sees the app's published notes above the version its
/// lineage first attested with and at or below the latest it reported (`ReleaseNotes.visible`),
/// not yet marked seen, newest first, at most `whatsNew.maxNotes`. An API-key caller has no
/// device: an empty list, and `seen` is a no-op 200. `<id>` is a UUID in either case; an id
/// that is not one, or not a note of this app, is 404. A repeat `seen` writes nothing.
enum WhatsNewEndpoint {
    static let path = "/api/v1/whats-new"

    static func list(_ request: Request, _ ctx: ServiceContext) throws -> Response {
        try FlagsEndpoint.requireGET(request)
        let now = ctx.clock.now()
        let caller = try FlagsAuth.caller(request, now: now, ctx)
        guard case .token(let claims) = caller.credential else { return answer(ReleaseNotes.answer([])) }
        let version = ctx.store.durableVersion
        let notes = try ctx.store.read { txn -> [ReleaseNoteRecord] in
            let device = try FlagsAuth.device(claims, app: caller.app.app, in: txn)
            let flags = try FeatureFlagsCache.flags(caller.app, version: version, in: txn, ctx)
            guard !flags.notes.isEmpty else { return [] }
            let lineage = LineageKey.of(device)
            return ReleaseNotes.visible(flags.notes, versions: try txn.deviceVersions(lineage: lineage),
                                        seen: try txn.seenNotes(lineage: lineage), now: now,
                                        limit: ctx.configuration.whatsNewMaxNotes)
        }
        return answer(ReleaseNotes.answer(notes))
    }

    static func seen(_ request: Request, _ ctx: ServiceContext) throws -> Response {
        let parts = request.path.dropFirst(path.count + 1).split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2, parts[1] == "seen", let id = ReleaseNotes.parseID(String(parts[0])) else {
            throw ServiceError(.notFound, "No such release note.", log: "path \(request.path.prefix(120))")
        }
        guard request.method == "POST" else {
            throw ServiceError(.methodNotAllowed, "\(request.method) is not allowed on \(path)/<id>/seen.",
                               headers: [("Allow", "POST")])
        }
        let now = ctx.clock.now()
        let caller = try FlagsAuth.caller(request, now: now, ctx)
        guard case .token(let claims) = caller.credential else {
            return ServiceContext.json(.object([("status", .string("ok")), ("seenAt", .string(now.iso8601))]))
        }
        let version = ctx.store.durableVersion
        let (lineage, already) = try ctx.store.read { txn -> (LineageKey, Timestamp?) in
            let device = try FlagsAuth.device(claims, app: caller.app.app, in: txn)
            let flags = try FeatureFlagsCache.flags(caller.app, version: version, in: txn, ctx)
            guard flags.notes.contains(where: { $0.id == id }) else {
                throw ServiceError(.notFound, "No such release note.", log: "note \(ReleaseNotes.idText(id))")
            }
            let lineage = LineageKey.of(device)
            return (lineage, try txn.noteSeen(lineage: lineage, note: id))
        }
        let seenAt = try already ?? ctx.store.write([.durable]) { txn in
            try txn.markNoteSeen(lineage: lineage, note: id, at: now)
        }
        return ServiceContext.json(.object([("status", .string("ok")), ("seenAt", .string(seenAt.iso8601))]))
    }

    static func answer(_ body: [UInt8]) -> Response {
        Response(status: 200, headers: [Header("Content-Type", "application/json"),
                                        Header("Cache-Control", "no-store")], body: body)
    }
}
