/// Verifies App Attest assertions made with an attested key.
///
/// ```
/// assertion = { "signature": bstr (DER ECDSA-Sig-Value), "authenticatorData": bstr }
/// ```
/// 1. decode the CBOR map                                                    → `.assertionFormat`
/// 2. nonce = SHA-256(authenticatorData ‖ clientDataHash)
/// 3. the signature (ECDSA P-256 with SHA-256 over nonce) verifies with the key → `.signature`
/// 4. rpIDHash equals SHA-256 of the App ID                                  → `.rpIDHash`
/// 5. signCount is strictly greater than the stored counter                  → `.counter`
public enum AssertionVerifier {
    public static func verify(assertion: ArraySlice<UInt8>, clientDataHash: [UInt8], publicKey: ECPublicKey,
                              appID: String, previousCounter: UInt32) throws(AttestError) -> VerifiedAssertion {
        try verify(try Assertion(cborEncoded: assertion), clientDataHash: clientDataHash, publicKey: publicKey,
                   appID: appID, previousCounter: previousCounter)
    }

    /// Steps 2–5 for an assertion already decoded (a caller that checked its form first).
    public static func verify(_ parsed: Assertion, clientDataHash: [UInt8], publicKey: ECPublicKey,
                              appID: String, previousCounter: UInt32) throws(AttestError) -> VerifiedAssertion {
        // Only the fixed 37-byte head is read (rpIDHash, flags, signCount). Its flags are not
        // interpreted: no assertion carries attested credential data, and a device setting AT
        // anyway must not be refused for it; every byte is covered by the signature.
        let authData: AssertionAuthenticatorData
        do { authData = try AssertionAuthenticatorData(parsed.authenticatorData) } catch {
            throw AttestError(.assertionFormat, "authenticatorData: \(error.reason)")
        }
        let nonce = SHA256.hash(parsed.authenticatorData, clientDataHash)
        #if ATTEST_ABLATE
        if Ablation.has("twice-verify") { _ = publicKey.isValidSignature(parsed.signature, message: nonce) }
        let skipped = Ablation.has("no-verify")
        #else
        let skipped = false
        #endif
        guard skipped || publicKey.isValidSignature(parsed.signature, message: nonce) else {
            throw AttestError(.signature, "assertion signature does not verify with the stored key")
        }
        guard authData.rpIDHash.elementsEqual(SHA256.hash(appID.utf8)) else {
            throw AttestError(.rpIDHash, "rpIDHash is not SHA-256(\"\(appID)\")")
        }
        guard authData.signCount > previousCounter else {
            throw AttestError(.counter, "counter \(authData.signCount) is not greater than \(previousCounter)")
        }
        return VerifiedAssertion(counter: authData.signCount)
    }
}

/// The decoded assertion map.
public struct Assertion: Sendable {
    public let signature: ArraySlice<UInt8>
    public let authenticatorData: ArraySlice<UInt8>

    public init(cborEncoded bytes: ArraySlice<UInt8>) throws(AttestError) {
        let root: CBORValue
        do { root = try CBORReader.decode(bytes) } catch {
            throw AttestError(.assertionFormat, "assertion is not CBOR: \(error.reason)")
        }
        guard let signature = root[text: "signature"]?.bytesValue,
              let authenticatorData = root[text: "authenticatorData"]?.bytesValue else {
            throw AttestError(.assertionFormat, "assertion must map signature and authenticatorData to byte strings")
        }
        self.signature = signature
        self.authenticatorData = authenticatorData
    }
}

/// What a valid assertion establishes: the counter to store.
public struct VerifiedAssertion: Sendable, Hashable {
    public let counter: UInt32
}

/// The head of an assertion's authenticator data: `rpIDHash (32) ‖ flags (1) ‖ signCount (4, BE)`.
struct AssertionAuthenticatorData {
    let rpIDHash: ArraySlice<UInt8>
    let signCount: UInt32

    init(_ bytes: ArraySlice<UInt8>) throws(AttestError) {
        guard bytes.count >= AuthenticatorData.minimumLength else {
            throw AttestError(.authenticatorDataMalformed,
                              "\(bytes.count) bytes, fewer than \(AuthenticatorData.minimumLength)")
        }
        let s = bytes.startIndex
        rpIDHash = bytes[s..<(s + 32)]
        signCount = bytes[(s + 33)..<(s + 37)].reduce(0) { $0 << 8 | UInt32($1) }
    }
}
