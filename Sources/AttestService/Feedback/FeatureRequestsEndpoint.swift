import AttestCore
import AttestStore
import FastCGI

/// Feature requests as the SDK calls them (`FeedbackAPIClient`; docs/feedback.md):
///
/// ```
/// GET    /api/v1/feedback/features?sort=&status=&page=&per=  ← 200 {"items":[…],"metadata":{…}}
/// POST   /api/v1/feedback/features {title, description, submitterId, deviceHash, pushToken?,
///                                    pushEnvironment?}                 ← 201 FeatureRequest
/// GET    /api/v1/feedback/features/<id>                       ← 200 FeatureRequest
/// POST   /api/v1/feedback/features/<id>/vote {voterId, deviceHash}
///                                    ← 201 {"id","featureRequestId","createdAt"}; 409 voted already
/// DELETE /api/v1/feedback/features/<id>/vote[?voter_id=]     ← 204 (also when there was no vote)
/// GET    /api/v1/feedback/features/<id>/comments             ← 200 [comment…] oldest first
/// POST   /api/v1/feedback/features/<id>/comments {authorId, body, pushToken?, pushEnvironment?}
///                                                              ← 201 comment
/// ```
/// Every request of the app is readable by every caller of the app; one vote per author (the
/// device's lineage, whatever `voterId` says); `hasVoted` is the caller's own. An id that is
/// not a UUID or not a request of this app is 404.
enum FeatureRequestsEndpoint {
    static let path = "/api/v1/feedback/features"

    static func route(_ request: Request, _ ctx: ServiceContext) throws -> Response {
        guard let target = FeedbackPath(request.path, base: path) else {
            throw FeedbackPath.notFound("feature request", request.path)
        }
        switch (target.id, target.leaf) {
        case (nil, _):
            try FeedbackPath.method(request, ["GET", "POST"])
            return request.method == "GET" ? try list(request, ctx) : try create(request, ctx)
        case (let id?, nil):
            try FeedbackPath.method(request, ["GET"])
            return try show(id, request, ctx)
        case (let id?, "vote"?):
            try FeedbackPath.method(request, ["POST", "DELETE"])
            return request.method == "POST" ? try vote(id, request, ctx) : try unvote(id, request, ctx)
        case (let id?, "comments"?):
            try FeedbackPath.method(request, ["GET", "POST"])
            return request.method == "GET" ? try comments(id, request, ctx) : try comment(id, request, ctx)
        default:
            throw FeedbackPath.notFound("feature request", request.path)
        }
    }

    static func list(_ request: Request, _ ctx: ServiceContext) throws -> Response {
        let auth = try FeedbackCaller.authenticate(request, now: ctx.clock.now(), ctx)
        let query = try FeedbackQuery(request)
        let answer = try ctx.store.read { txn -> JSONValue in
            let caller = try FeedbackCaller.resolve(auth, in: txn)
            let (items, total) = query.page(try txn.featureRequests(appID: caller.appID))
            return FeedbackWire.list(try items.map { r in
                FeedbackWire.request(r, hasVoted: try txn.vote(requestID: r.id, author: caller.author) != nil)
            }, page: query.page, per: query.per, total: total)
        }
        return FeedbackWire.answer(answer)
    }

    static func show(_ id: [UInt8], _ request: Request, _ ctx: ServiceContext) throws -> Response {
        let auth = try FeedbackCaller.authenticate(request, now: ctx.clock.now(), ctx)
        return FeedbackWire.answer(try ctx.store.read { txn in
            let caller = try FeedbackCaller.resolve(auth, in: txn)
            let r = try existing(id, caller, in: txn)
            return FeedbackWire.request(r, hasVoted: try txn.vote(requestID: id, author: caller.author) != nil)
        })
    }

    static func create(_ request: Request, _ ctx: ServiceContext) throws -> Response {
        let now = ctx.clock.now()
        let auth = try FeedbackCaller.authenticate(request, now: now, ctx)
        let body = try JSONBody(request)
        let title = try FeedbackInput.text(body, .title)
        let description = try FeedbackInput.text(body, .description)
        let submitter = try FeedbackInput.clientID(body, "submitterId")
        _ = try FeedbackInput.clientID(body, "deviceHash")
        let push = try FeedbackInput.push(body)
        let caller = try ctx.store.read { try FeedbackCaller.resolve(auth, in: $0) }
        try FeedbackRates.charge(.request, author: caller.author, now: now, ctx)
        let created = try ctx.store.write([.durable]) { txn -> FeatureRequestRecord in
            let r = FeatureRequestRecord(id: FeedbackPath.newID(ctx), title: title, description: description,
                                         createdAt: now, updatedAt: now, author: caller.author,
                                         submitterID: submitter, pushToken: push.token,
                                         pushEnvironment: push.environment)
            try FeedbackUsage.add(FeedbackUsageRecord(requests: 1, bytes: r.countedBytes), caller, in: txn)
            try txn.put(r, appID: caller.appID)
            try ctx.queueEvent(.feedbackCreated, org: caller.app.org.name, in: txn, now: now,
                               data: FeedbackEvents.requestCreated(r, caller))
            return r
        }
        return FeedbackWire.answer(FeedbackWire.request(created, hasVoted: false), status: 201)
    }

    static func vote(_ id: [UInt8], _ request: Request, _ ctx: ServiceContext) throws -> Response {
        let now = ctx.clock.now()
        let auth = try FeedbackCaller.authenticate(request, now: now, ctx)
        let body = try JSONBody(request)
        let voter = try FeedbackInput.clientID(body, "voterId")
        _ = try FeedbackInput.clientID(body, "deviceHash")
        let caller = try ctx.store.read { txn -> FeedbackCaller in
            let caller = try FeedbackCaller.resolve(auth, in: txn)
            _ = try existing(id, caller, in: txn)
            return caller
        }
        try FeedbackRates.charge(.vote, author: caller.author, now: now, ctx)
        let vote = try ctx.store.write([.durable]) { txn -> FeatureVoteRecord in
            var r = try existing(id, caller, in: txn)
            let vote = FeatureVoteRecord(voteID: FeedbackPath.newID(ctx), voterID: voter, createdAt: now)
            guard try txn.putVote(vote, requestID: id, author: caller.author) else {
                throw ServiceError(.conflict, "This device has voted for this feature request already.",
                                   hint: "DELETE …/vote removes the vote.")
            }
            r.voteCount &+= 1
            try txn.put(r, appID: caller.appID)
            return vote
        }
        return FeedbackWire.answer(FeedbackWire.vote(vote, requestID: id), status: 201)
    }

    static func unvote(_ id: [UInt8], _ request: Request, _ ctx: ServiceContext) throws -> Response {
        let now = ctx.clock.now()
        let auth = try FeedbackCaller.authenticate(request, now: now, ctx)
        let caller = try ctx.store.read { txn -> FeedbackCaller in
            let caller = try FeedbackCaller.resolve(auth, in: txn)
            _ = try existing(id, caller, in: txn)
            return caller
        }
        guard try ctx.store.read({ try $0.vote(requestID: id, author: caller.author) }) != nil else {
            return FeedbackWire.noContent()
        }
        try FeedbackRates.charge(.vote, author: caller.author, now: now, ctx)
        try ctx.store.write([.durable]) { txn in
            var r = try existing(id, caller, in: txn)
            if try txn.deleteVote(requestID: id, author: caller.author) {
                r.voteCount = r.voteCount > 0 ? r.voteCount - 1 : 0
                try txn.put(r, appID: caller.appID)
            }
        }
        return FeedbackWire.noContent()
    }

    static func comments(_ id: [UInt8], _ request: Request, _ ctx: ServiceContext) throws -> Response {
        let auth = try FeedbackCaller.authenticate(request, now: ctx.clock.now(), ctx)
        return FeedbackWire.answer(try ctx.store.read { txn in
            let caller = try FeedbackCaller.resolve(auth, in: txn)
            _ = try existing(id, caller, in: txn)
            return .array(try txn.comments(requestID: id).map { FeedbackWire.comment($0, requestID: id) })
        })
    }

    static func comment(_ id: [UInt8], _ request: Request, _ ctx: ServiceContext) throws -> Response {
        let now = ctx.clock.now()
        let auth = try FeedbackCaller.authenticate(request, now: now, ctx)
        let body = try JSONBody(request)
        let text = try FeedbackInput.text(body, .comment)
        let authorID = try FeedbackInput.clientID(body, "authorId")
        let push = try FeedbackInput.push(body)
        let caller = try ctx.store.read { txn -> FeedbackCaller in
            let caller = try FeedbackCaller.resolve(auth, in: txn)
            _ = try existing(id, caller, in: txn)
            return caller
        }
        try FeedbackRates.charge(.comment, author: caller.author, now: now, ctx)
        let comment = try ctx.store.write([.durable]) { txn -> FeedbackCommentRecord in
            var r = try existing(id, caller, in: txn)
            let last = try txn.lastTimedID(.featureComments, parent: id, at: now)
            let c = FeedbackCommentRecord(id: FeedbackPath.newID(after: last, ctx), createdAt: now, authorType: .user,
                                          author: caller.author, authorID: authorID, body: text,
                                          pushToken: push.token, pushEnvironment: push.environment)
            try FeedbackUsage.add(FeedbackUsageRecord(comments: 1, bytes: c.countedBytes), caller, in: txn)
            try txn.put(c, requestID: id)
            r.commentCount &+= 1
            r.updatedAt = now
            try txn.put(r, appID: caller.appID)
            try ctx.queueEvent(.feedbackCommented, org: caller.app.org.name, in: txn, now: now,
                               data: FeedbackEvents.commented(c, requestID: id, caller))
            return c
        }
        return FeedbackWire.answer(FeedbackWire.comment(comment, requestID: id), status: 201)
    }

    /// The app's request `id`, or 404.
    static func existing(_ id: [UInt8], _ caller: FeedbackCaller, in txn: Transaction) throws -> FeatureRequestRecord {
        guard let r = try txn.featureRequest(appID: caller.appID, id: id) else {
            throw ServiceError(.notFound, "No such feature request.", log: "request \(ReleaseNotes.idText(id))")
        }
        return r
    }
}

/// The organization's `FeedbackUsageRecord`, raised in the write's transaction within
/// `FeedbackLimits` (429 past a bound).
enum FeedbackUsage {
    static func add(_ change: FeedbackUsageRecord, _ caller: FeedbackCaller, in txn: Transaction) throws {
        try add(change, org: caller.app.org.name, in: txn)
    }

    static func add(_ change: FeedbackUsageRecord, org: String, in txn: Transaction) throws {
        let usage = try txn.feedbackUsage(org: org) ?? FeedbackUsageRecord()
        try txn.put(try FeedbackLimits.standard.admit(usage, adding: change), org: org)
    }
}
