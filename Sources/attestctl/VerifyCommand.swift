import AttestCore
import CLISupport
import FoundationEssentials

/// `attestctl verify`: offline verification of an attestation or assertion from a JSON file.
let verifyCommand = Command(
    name: "verify",
    summary: "verify an attestation, an assertion or a receipt offline from a file",
    usage: """
        usage: attestctl verify attestation --input FILE [--at ISO8601] [--trust-root PEM]... [--json]
               attestctl verify assertion --input FILE [--json]
               attestctl verify receipt --input FILE [--at ISO8601] [--trust-root PEM] [--json]

        For an attestation or an assertion, FILE is one JSON object ('-' reads standard input);
        unknown fields are ignored.
        Binary fields are base64 or base64url, padded or not.
          attestation: attestationObject, keyId, clientDataHash (the exact bytes given to
                       attestKey), teamId, bundleId, environment (production, development, both)
          assertion:   assertion, clientDataHash, publicKey (PEM SubjectPublicKeyInfo, or base64
                       of the 65-byte X9.62 point), teamId, bundleId, previousCounter

          receipt:     FILE holds an App Attest receipt (attStmt.receipt, or what Apple's
                       attestation-data endpoint answered): DER, or its base64 text. It is
                       checked against Apple Root CA - G3 with the receipt chain's markers;
                       prints type, appId, environment, createdAt, notBefore, expiresAt,
                       riskMetric and credentialCertSha256 (JSON: those, valid, and code and
                       reason when invalid)

          --at ISO8601      verify the certificate chain at this time (default: now)
          --trust-root PEM  trust the certificates in this PEM file instead of Apple's
                            App Attestation Root CA (repeatable); for a receipt, the one
                            certificate to use instead of Apple Root CA - G3 (tests)
          --json            print one JSON object instead of the step list

        Exit status: 0 valid, 1 invalid, 2 unusable input (the message names the field).

        example: attestctl verify attestation --input capture.json --at 2026-04-21T12:00:00Z
        """,
    run: runVerify)

@Sendable func runVerify(_ argv: [String]) throws -> Int32 {
    guard let kind = argv.first, ["attestation", "assertion", "receipt"].contains(kind) else {
        throw UsageError("say what to verify: attestation, assertion or receipt")
    }
    let valued: Set<String> = kind == "assertion" ? ["input"] : ["input", "at", "trust-root"]
    let args = try Arguments(Array(argv.dropFirst()), valued: valued, switches: ["json"])
    guard args.positionals.isEmpty else { throw UsageError("unexpected argument \(args.positionals[0])") }
    guard let path = args.value("input") else { throw UsageError("--input FILE is required") }
    if kind == "receipt" {
        let report: ReceiptReport
        do {
            report = try verifyReceipt(path: path, at: verificationTime(args.value("at")),
                                       trustRoots: args.values("trust-root"))
        } catch {
            Output.err("attestctl verify receipt: \(error)")
            return 2
        }
        Output.out(args.flag("json") ? report.json : report.human)
        return report.exitStatus
    }
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
