/// One coverage-guided fuzz target: a name and a function of one input.
///
/// `run` returns normally for every input, accepted or refused; it traps (`violated`) when a
/// property the code promises does not hold (a round trip that differs, a 500, an error
/// code outside the documented set). libFuzzer and AddressSanitizer report the trap, an
/// out-of-bounds access or an arithmetic overflow as a crash; `attest-fuzz replay` runs the
/// same function over a corpus without libFuzzer.
public struct FuzzTarget {
    public let name: String
    /// What the target feeds its input to, for `attest-fuzz list`.
    public let summary: String
    public let run: (ArraySlice<UInt8>) -> Void

    public init(name: String, summary: String, run: @escaping (ArraySlice<UInt8>) -> Void) {
        self.name = name
        self.summary = summary
        self.run = run
    }
}

/// Every target by name. Targets with set-up (keys, a data directory) build it when made.
public enum FuzzTargets {
    public static let names = ["cbor", "der", "authdata", "attestation", "assertion", "request", "challenge",
                               "jwt", "fastcgi", "receipt"]

    /// Makes the target `name`; `nil` for an unknown name. Set-up failures are fatal.
    public static func make(_ name: String) -> FuzzTarget? {
        switch name {
        case "cbor": return CBORTarget.make()
        case "der": return DERTarget.make()
        case "authdata": return AuthenticatorDataTarget.make()
        case "attestation": return AttestationTarget.make()
        case "assertion": return AssertionTarget.make()
        case "request": return RequestTarget.make()
        case "challenge": return ChallengeTarget.make()
        case "jwt": return JWTTarget.make()
        case "fastcgi": return FastCGITarget.make()
        case "receipt": return ReceiptTarget.make()
        default: return nil
        }
    }
}

/// Traps with `message` when `condition` is false: a fuzz target's property check.
func expect(_ condition: @autoclosure () -> Bool, _ message: @autoclosure () -> String) {
    if !condition() { fatalError("fuzz property violated: \(message())") }
}

/// Traps when set-up fails: a target that cannot start must not look like a clean run.
func setUp<T>(_ what: String, _ body: () throws -> T) -> T {
    do { return try body() } catch { fatalError("fuzz set-up failed (\(what)): \(error)") }
}
