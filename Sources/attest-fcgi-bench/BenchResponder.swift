import AttestCore
import FastCGI
import Glibc

/// What each request does.
enum BenchMode: String, Sendable {
    /// `{"ok":true}`: the FastCGI floor.
    case trivial
    /// Echoes what arrived (method, path, query, ids, a header, body length, worker pid), and
    /// how many quiet-moment steps the worker has run (`idleSteps`: `echoIdleSteps` after each
    /// request, when nothing else arrives).
    case echo
    /// One P-256 ECDSA verification with a key parsed once per worker, then `{"ok":true}`.
    case p256Verify = "p256-verify"
    /// One P-384 ECDSA verification (the cost of an attestation's leaf check), likewise.
    case p384Verify = "p384-verify"
    /// One P-256 verification as `p256Verify`, then one ES256 signature over a digest (OpenSSL's
    /// own signer, a prepared context, no nonces made ahead) returned as base64url: the least
    /// cryptography a refresh can do (check the assertion, sign the token).
    case p256VerifySign = "p256-verify-sign"
    /// Sleeps one second, then `{"ok":true}` (in-flight requests for shutdown tests).
    case slow
}

/// The benchmark responder. Every mode answers an over-limit body with the 413 envelope of
/// docs/contract.md §3, as the real endpoints do.
struct BenchResponder: Responder {
    let mode: BenchMode
    private let key: ECPublicKey?
    private let signature: [UInt8]
    /// The token-signing key of `p256VerifySign`.
    private let tokenKey: SigningKey?
    private static let message = Array("attest-fcgi-bench p256-verify".utf8)
    /// Quiet-moment steps an echo worker runs after each request (`Responder.idle`).
    static let echoIdleSteps = 3
    private var idleSteps = 0
    private var idleStepsLeft = 0

    init(mode: BenchMode) throws {
        self.mode = mode
        if mode == .p256Verify || mode == .p384Verify || mode == .p256VerifySign {
            let signer = try SigningKey.generate(mode == .p384Verify ? .p384 : .p256)
            signature = try signer.sign(Self.message)
            key = try signer.publicKey()
        } else {
            key = nil
            signature = []
        }
        tokenKey = mode == .p256VerifySign ? try SigningKey.generate(.p256) : nil
    }

    var wantsIdle: Bool { mode == .echo }

    mutating func idle() -> Bool {
        guard idleStepsLeft > 0 else { return false }
        idleStepsLeft -= 1
        idleSteps += 1
        return idleStepsLeft > 0
    }

    mutating func respond(to request: Request) -> Response {
        if mode == .echo { idleStepsLeft = Self.echoIdleSteps }
        if request.bodyTooLarge {
            return .json(413, #"{"error":"request body too large","code":"payload_too_large","#
                             + #""requestId":"\#(JSON.escape(request.requestID))","#
                             + #""reason":"request body too large"}"#)
        }
        switch mode {
        case .trivial:
            return .json(200, #"{"ok":true}"#)
        case .slow:
            usleep(1_000_000)
            return .json(200, #"{"ok":true}"#)
        case .p256Verify, .p384Verify, .p256VerifySign:
            let digest = mode == .p384Verify ? SHA384.hash(Self.message) : SHA256.hash(Self.message)
            guard let key, key.isValidSignature(signature, digest: digest) else {
                return .json(500, #"{"ok":false}"#)
            }
            guard let tokenKey else { return .json(200, #"{"ok":true}"#) }
            // The signed bytes differ per request (the request id), as a token's claims do.
            guard let signed = try? tokenKey.sign(Array(request.requestID.utf8) + Self.message) else {
                return .json(500, #"{"ok":false}"#)
            }
            return .json(200, #"{"ok":true,"signature":""# + Base64.encode(signed, url: true) + #""}"#)
        case .echo:
            let fields: [(String, String)] = [
                ("method", JSON.string(request.method)),
                ("path", JSON.string(request.path)),
                ("query", JSON.string(request.query)),
                ("requestId", JSON.string(request.requestID)),
                ("remoteAddress", JSON.string(request.remoteAddress)),
                ("bundleId", request.header("X-Bundle-ID").map(JSON.string) ?? "null"),
                ("contentType", request.header("Content-Type").map(JSON.string) ?? "null"),
                ("bodyLength", "\(request.body.count)"),
                ("pid", "\(getpid())"),
                ("idleSteps", "\(idleSteps)"),
            ]
            return .json(200, "{" + fields.map { "\"\($0.0)\":\($0.1)" }.joined(separator: ",") + "}")
        }
    }
}

/// Just enough JSON writing for the echo mode, without Foundation.
enum JSON {
    static func string(_ text: String) -> String { "\"" + escape(text) + "\"" }

    static func escape(_ text: String) -> String {
        var out = ""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out
    }
}
