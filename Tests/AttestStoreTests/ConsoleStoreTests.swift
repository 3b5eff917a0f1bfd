import AttestCore
@testable import AttestStore
import Testing

/// Console sign-in links, sessions and the audit log on every backend (`StoreConformance` kinds).
@Suite struct ConsoleStoreTests {
    typealias Kind = StoreConformance.Kind
    let now = Timestamp(seconds: 1_790_000_000)

    func entry(_ action: String, at: Timestamp) -> AuditRecord {
        AuditRecord(at: at, actor: .session, actorID: "ab", actorName: "Pat", role: .editor, action: action,
                    target: "t", detail: "d")
    }

    @Test(arguments: StoreConformance.kinds) func aLinkIsTakenOnce(_ kind: Kind) throws {
        let f = try StoreConformance.Fixture(kind), store = try f.open()
        let hash = [UInt8](repeating: 9, count: 32)
        let link = ConsoleLoginRecord(org: "acme", role: .admin, name: "Pat", createdAt: now, expiresAt: now + 60)
        try store.write([.durable]) { txn in try txn.put(link, tokenHash: hash) }
        #expect(try store.write([.durable]) { try $0.takeConsoleLogin(tokenHash: hash) } == link)
        #expect(try store.write([.durable]) { try $0.takeConsoleLogin(tokenHash: hash) } == nil, "once")
    }

    @Test(arguments: StoreConformance.kinds) func theAuditLogIsPerOrganizationNewestFirstAndPaged(_ kind: Kind) throws {
        let f = try StoreConformance.Fixture(kind), store = try f.open()
        try store.write([.durable]) { txn in
            for i in 0..<5 { try txn.appendAudit(entry("a\(i)", at: now + Int64(i)), org: "acme") }
            // One org's name a prefix of another's: their entries never mix.
            try txn.appendAudit(entry("other", at: now + 10), org: "acme2")
            // Two entries in one second keep their order.
            try txn.appendAudit(entry("a5", at: now + 4), org: "acme")
        }
        let all = try store.read { try $0.auditEntries(org: "acme", limit: 100) }
        #expect(all.map(\.action) == ["a5", "a4", "a3", "a2", "a1", "a0"])
        #expect(all.first?.role == .editor && all.first?.actorName == "Pat")
        let page = try store.read { try $0.auditEntries(org: "acme", before: (all[1].at.seconds, all[1].sequence), limit: 2) }
        #expect(page.map(\.action) == ["a3", "a2"])
        #expect(try store.read { try $0.auditEntries(org: "acme2", limit: 100) }.map(\.action) == ["other"])
        #expect(try store.read { try $0.auditEntries(org: "acm", limit: 100) }.isEmpty)
    }

    @Test(arguments: StoreConformance.kinds) func oldEntriesGoAsNewOnesAreWritten(_ kind: Kind) throws {
        let f = try StoreConformance.Fixture(kind), store = try f.open()
        try store.write([.durable]) { txn in
            for i in 0..<20 { try txn.appendAudit(entry("old\(i)", at: now + Int64(i)), org: "acme") }
        }
        try store.write([.durable]) { txn in
            try txn.appendAudit(entry("new", at: now + 1000), org: "acme", retainAfter: now + 100)
        }
        // At most 16 old entries go per write (the write pays for its own growth).
        #expect(try store.read { try $0.auditEntries(org: "acme", limit: 100) }.count == 5)
        try store.write([.durable]) { txn in
            try txn.appendAudit(entry("newer", at: now + 1001), org: "acme", retainAfter: now + 100)
        }
        #expect(try store.read { try $0.auditEntries(org: "acme", limit: 100) }.map(\.action) == ["newer", "new"])
    }

    @Test(arguments: StoreConformance.kinds) func theLogKeepsAtMostItsBoundOfEntries(_ kind: Kind) throws {
        let f = try StoreConformance.Fixture(kind), store = try f.open()
        for i in 0..<40 {
            try store.write([.durable]) { txn in
                try txn.appendAudit(entry("e\(i)", at: now + Int64(i)), org: "acme", keep: 25)
            }
        }
        let kept = try store.read { try $0.auditEntries(org: "acme", limit: 100) }
        #expect(kept.count == 25 && kept.first?.action == "e39" && kept.last?.action == "e15")
        #expect(try store.read { try $0.auditCount(org: "acme") } == 25)
        try store.write([.durable]) { txn in
            for i in 0..<3 { try txn.appendAudit(entry("x\(i)", at: now + 100), org: "other") }
        }
        #expect(try store.read { try $0.auditCount(org: "other") } == 3, "another organization counts apart")
    }

    @Test func auditTextIsOneLineWithoutControlOrReorderingCharacters() {
        let e = AuditRecord(at: now, actor: .apiKey, actorID: "aat_x", actorName: "ci\u{1B}[2K\nroot",
                            role: .admin, action: "flag.rule_add", target: "beta\u{202E}txt", detail: "line 1\nline 2\t.")
        #expect(e.actorName == "ci\u{FFFD}[2K root" && e.target == "beta\u{FFFD}txt" && e.detail == "line 1 line 2 .")
    }

    @Test func aLongDetailIsCutAtACharacterBoundary() throws {
        let e = AuditRecord(at: now, actor: .cli, actorID: "root", actorName: "attestctl", role: nil, action: "x",
                            target: "y", detail: String(repeating: "é", count: 2000))
        #expect(e.detail.utf8.count <= AuditRecord.detailLimit && e.detail.hasSuffix("…"))
        #expect(try AuditRecord(encoded: e.encoded()) == e)
    }
}
