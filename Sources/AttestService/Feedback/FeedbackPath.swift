import AttestCore
import FastCGI

/// A path under a feedback collection, split: `base` alone, `base/<id>`, or `base/<id>/<leaf>`;
/// `<id>` a UUID in either case (an id that is not one is 404, like an unknown one).
struct FeedbackPath {
    let id: [UInt8]?
    let leaf: String?

    /// nil when `path` is not `base` or below it.
    init?(_ path: String, base: String) {
        guard path == base || path.hasPrefix(base + "/") else { return nil }
        let rest = path.dropFirst(base.count)
        guard !rest.isEmpty else { (id, leaf) = (nil, nil); return }
        let parts = rest.dropFirst().split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count <= 2 else { return nil }
        guard let id = ReleaseNotes.parseID(String(parts[0])) else { return nil }
        self.id = id
        leaf = parts.count == 2 ? String(parts[1]) : nil
    }

    static func notFound(_ what: String, _ path: String) -> ServiceError {
        ServiceError(.notFound, "No such \(what).", log: "path \(path.prefix(120))")
    }

    /// 405 naming the methods allowed.
    static func method(_ request: Request, _ allowed: [String]) throws {
        guard !allowed.contains(request.method) else { return }
        throw ServiceError(.methodNotAllowed, "\(request.method) is not allowed on \(request.path.prefix(120)).",
                           headers: [("Allow", allowed.joined(separator: ", "))])
    }

    /// 16 random bytes made a version-4 UUID.
    static func newID(_ ctx: ServiceContext) -> [UInt8] { newID(ctx.random) }

    static func newID(_ random: any RandomSource) -> [UInt8] {
        var b = random.bytes(16)
        b[6] = b[6] & 0x0F | 0x40
        b[8] = b[8] & 0x3F | 0x80
        return b
    }

    /// A new id above `previous` (the greatest of the same second in the thread, if any): a
    /// random one when that is above it, else `previous` with its last 7 bytes plus a random
    /// 1…2^16 (the version and variant bits stay; keys order comments and messages of one second
    /// by id, so the thread reads in the order it was written).
    static func newID(after previous: [UInt8]?, _ ctx: ServiceContext) -> [UInt8] {
        newID(after: previous, ctx.random)
    }

    static func newID(after previous: [UInt8]?, _ random: any RandomSource) -> [UInt8] {
        let fresh = newID(random)
        guard let previous, previous.count == 16, !previous.lexicographicallyPrecedes(fresh) else { return fresh }
        var next = previous
        let step = random.bytes(2)
        var carry = (Int(step[0]) << 8 | Int(step[1])) + 1
        for i in stride(from: 15, through: 9, by: -1) where carry > 0 {
            let sum = Int(next[i]) + carry
            next[i] = UInt8(sum & 0xFF)
            carry = sum >> 8
        }
        return carry == 0 ? next : fresh
    }
}
