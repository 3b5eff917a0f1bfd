import AttestCore
import AttestTesting

/// Shared inputs of the synthetic tests: one test PKI, a fixed time inside its window, an App ID.
enum Fixtures {
    /// 2026-04-21T12:00:00Z, the Apple sample's verification time, reused for synthetic objects.
    static let now = Timestamp(seconds: 1_776_772_800)
    static let appID = "ABCDE12345.com.example.attestedge"
    static let otherAppID = "ABCDE12345.com.example.other"
    static let clientDataHash = SHA256.hash(Array("synthetic challenge".utf8))

    /// A PKI valid a year either side of `now`, made once per test process.
    static let pki: TestPKI = {
        do { return try TestPKI.generate(validFrom: now - 365 * 86_400, validUntil: now + 365 * 86_400) } catch {
            fatalError("test PKI: \(error)")
        }
    }()

    /// A verifier trusting only `pki`'s root (a fresh one per call, so caches start cold).
    static func verifier() throws -> AttestationVerifier {
        AttestationVerifier(chainVerifier: try pki.chainVerifier())
    }
}
