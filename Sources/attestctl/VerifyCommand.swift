import AttestCore
import CLISupport
import FoundationEssentials

/// `attestctl verify`: offline verification of an attestation or assertion from a JSON file.
let verifyCommand = Command(
    name: "verify",
    summary: "verify an attestation or assertion offline from a JSON file",
    usage: """
        usage: attestctl verify attestation --input FILE [--at ISO8601] [--trust-root PEM]... [--json]
               attestctl verify assertion --input FILE [--json]

        FILE is one JSON object ('-' reads standard input); unknown fields are ignored.
        Binary fields are base64 or base64url, padded or not.
          attestation: attestationObject, keyId, clientDataHash (the exact bytes given to
                       attestKey), teamId, bundleId, environment (production, development, both)
          assertion:   assertion, clientDataHash, publicKey (PEM SubjectPublicKeyInfo, or base64
                       of the 65-byte X9.62 point), teamId, bundleId, previousCounter

          --at ISO8601      verify the certificate chain at this time (default: now)
          --trust-root PEM  trust the certificates in this PEM file instead of Apple's
                            App Attestation Root CA (repeatable)
          --json            print one JSON object instead of the step list

        Exit status: 0 valid, 1 invalid, 2 unusable input (the message names the field).

        example: attestctl verify attestation --input capture.json --at 2026-04-21T12:00:00Z
        """,
    run: runVerify)

@Sendable func runVerify(_ argv: [String]) throws -> Int32 {
    guard let kind = argv.first, kind == "attestation" || kind == "assertion" else {
        throw UsageError("say what to verify: attestation or assertion")
    }
    let valued: Set<String> = kind == "attestation" ? ["input", "at", "trust-root"] : ["input"]
    let args = try Arguments(Array(argv.dropFirst()), valued: valued, switches: ["json"])
    guard args.positionals.isEmpty else { throw UsageError("unexpected argument \(args.positionals[0])") }
    guard let path = args.value("input") else { throw UsageError("--input FILE is required") }
    let report: VerifyReport
    do {
        let input = try VerifyInput.read(path)
        report = kind == "attestation"
            ? try verifyAttestation(input, at: verificationTime(args.value("at")),
                                    anchors: trustAnchors(args.values("trust-root")))
            : try verifyAssertion(input)
    } catch {
        Output.err("attestctl verify \(kind): \(error)")
        return 2
    }
    Output.out(args.flag("json") ? report.json : report.human)
    return report.exitStatus
}

/// `--at`, or now.
func verificationTime(_ text: String?) throws(CommandFailure) -> Timestamp {
    guard let text else { return Timestamp(seconds: Int64(Date().timeIntervalSince1970)) }
    guard let time = Timestamp(iso8601: text) else {
        throw CommandFailure(.input, "--at \(text) is not an ISO 8601 date-time such as 2026-04-21T12:00:00Z")
    }
    return time
}

/// The certificates of every `--trust-root` file, or Apple's pinned root when there are none.
func trustAnchors(_ paths: [String]) throws(CommandFailure) -> ChainVerifier {
    do {
        guard !paths.isEmpty else { return try .apple() }
        var anchors = [Certificate]()
        for path in paths {
            let pem = String(decoding: try readFile(path, option: "--trust-root"), as: UTF8.self)
            do { anchors += try Certificate.certificates(pemEncoded: pem) } catch {
                throw CommandFailure(.input, "--trust-root \(path): \(error.reason)")
            }
        }
        return try ChainVerifier(trustAnchors: anchors)
    } catch let error as CommandFailure {
        throw error
    } catch {
        throw CommandFailure(.input, "trust anchors: \(error)")
    }
}
