import AttestCore
import AttestTesting
import Testing

/// Assertion verification on software-device assertions: each step's code.
@Suite struct AssertionVerifierTests {
    let device: SoftwareDevice
    let publicKey: ECPublicKey

    init() throws {
        device = try SoftwareDevice.generate()
        publicKey = try ECPublicKey(x962Point: device.publicKey)
    }

    func verify(_ assertion: [UInt8], clientDataHash: [UInt8] = Fixtures.clientDataHash, key: ECPublicKey? = nil,
                appID: String = Fixtures.appID, previousCounter: UInt32 = 0) throws -> VerifiedAssertion {
        try AssertionVerifier.verify(assertion: assertion[...], clientDataHash: clientDataHash,
                                     publicKey: key ?? publicKey, appID: appID, previousCounter: previousCounter)
    }

    func assertion(counter: UInt32, appID: String = Fixtures.appID) throws -> [UInt8] {
        try device.assertion(clientDataHash: Fixtures.clientDataHash, appID: appID, counter: counter)
    }

    @Test func validAssertionReturnsItsCounter() throws {
        #expect(try verify(assertion(counter: 1)).counter == 1, "counter 1 after an attestation's 0")
        #expect(try verify(assertion(counter: 1_000), previousCounter: 999).counter == 1_000, "counter 1000 after 999")
        #expect(try verify(assertion(counter: .max), previousCounter: .max - 1).counter == .max, "the largest counter")
    }

    @Test func successiveAssertionsAdvanceTheDeviceCounter() throws {
        var device = device
        var previous: UInt32 = 0
        for _ in 0..<3 {
            let result = try verify(device.assert(clientDataHash: Fixtures.clientDataHash, appID: Fixtures.appID),
                                    previousCounter: previous)
            #expect(result.counter == previous + 1, "each assert is one more than the last")
            previous = result.counter
        }
        #expect(device.counter == 3, "the device kept count")
    }

    @Test func keyFromPEMVerifiesLikeKeyFromPoint() throws {
        let fromPEM = try ECPublicKey(pemEncoded: device.key.publicKey().pemEncoded)
        #expect(try verify(assertion(counter: 1), key: fromPEM).counter == 1,
                "the same key as PEM SubjectPublicKeyInfo")
    }

    @Test func keyFromPointIsTheKeyFromSubjectPublicKeyInfo() throws {
        let fromSPKI = try ECPublicKey(subjectPublicKeyInfo: device.key.subjectPublicKeyInfo)
        #expect(publicKey.subjectPublicKeyInfo == fromSPKI.subjectPublicKeyInfo, "the same key either way")
        #expect(publicKey.x962Point == device.publicKey && fromSPKI.x962Point == device.publicKey,
                "the same point either way")
    }

    @Test func pointsThatAreNotP256KeysAreRefused() throws {
        var offCurve = device.publicKey
        offCurve[64] ^= 0x01
        #expect(errorCode { try ECPublicKey(x962Point: offCurve) } == .publicKeyInvalid, "y changed: not on the curve")
        #expect(errorCode { try ECPublicKey(x962Point: device.publicKey.dropLast()) } == .publicKeyInvalid, "64 bytes")
        var compressed = device.publicKey
        compressed[0] = 0x02
        #expect(errorCode { try ECPublicKey(x962Point: compressed) } == .publicKeyInvalid, "a 0x02 prefix on 65 bytes")
        #expect(errorCode { try ECPublicKey(x962Point: [0x04] + [UInt8](repeating: 0, count: 64)) }
                    == .publicKeyInvalid, "all zeros")
    }

    @Test func signatureIsOverTheNonceWithSHA256() throws {
        let encoded = try assertion(counter: 7)
        let parsed = try Assertion(cborEncoded: encoded[...])
        let nonce = SHA256.hash(parsed.authenticatorData, Fixtures.clientDataHash)
        #expect(publicKey.isValidSignature(parsed.signature, message: nonce),
                "ECDSA-SHA256 over nonce, as Apple's device signs")
        #expect(!publicKey.isValidSignature(parsed.signature, digest: nonce),
                "not a signature of nonce taken as the digest")
        #expect(parsed.authenticatorData.count == 37, "authenticatorData = rpIDHash ‖ flags ‖ counter")
    }

    // MARK: Step 3: signature.

    @Test func anotherDevicesSignatureFailsSignature() throws {
        let other = try SoftwareDevice.generate()
        let foreign = try other.assertion(clientDataHash: Fixtures.clientDataHash, appID: Fixtures.appID, counter: 1)
        #expect(errorCode { try verify(foreign) } == .signature, "an assertion by another key")
    }

    @Test func alteredSignatureFailsSignature() throws {
        let parsed = try Assertion(cborEncoded: assertion(counter: 1)[...])
        var signature = Array(parsed.signature)
        signature[signature.count - 1] ^= 0x01
        let altered = CBORWriter.encode(.map([
            CBORMapEntry(key: .text("signature"), value: .bytes(signature[...])),
            CBORMapEntry(key: .text("authenticatorData"), value: .bytes(parsed.authenticatorData)),
        ]))
        #expect(errorCode { try verify(altered) } == .signature, "the signature's last bit flipped")
    }

    @Test func signatureThatIsNotDERFailsSignature() throws {
        let authenticatorData = SHA256.hash(Fixtures.appID.utf8) + [0, 0, 0, 0, 1]
        let junk = CBORWriter.encode(.map([
            CBORMapEntry(key: .text("signature"), value: .bytes([UInt8](repeating: 0x5A, count: 64)[...])),
            CBORMapEntry(key: .text("authenticatorData"), value: .bytes(authenticatorData[...])),
        ]))
        #expect(errorCode { try verify(junk) } == .signature, "64 bytes that are not an ECDSA-Sig-Value")
    }

    @Test func otherClientDataHashFailsSignature() throws {
        #expect(errorCode { try verify(assertion(counter: 1), clientDataHash: SHA256.hash([1])) } == .signature,
                "verified against another request's clientDataHash: the nonce differs")
    }

    // MARK: Step 4: rpIDHash.

    @Test func assertionForAnotherAppFailsRPIDHash() throws {
        #expect(errorCode { try verify(assertion(counter: 1, appID: Fixtures.otherAppID)) } == .rpIDHash,
                "signed correctly, but for another App ID")
        #expect(errorCode { try verify(assertion(counter: 1), appID: Fixtures.otherAppID) } == .rpIDHash,
                "verified for another App ID")
    }

    // MARK: Step 5: counter.

    @Test func equalCounterFailsCounter() throws {
        #expect(errorCode { try verify(assertion(counter: 5), previousCounter: 5) } == .counter,
                "counter 5 after 5: a replay")
    }

    @Test func lowerCounterFailsCounter() throws {
        #expect(errorCode { try verify(assertion(counter: 4), previousCounter: 5) } == .counter, "counter 4 after 5")
        #expect(errorCode { try verify(assertion(counter: 0)) } == .counter, "counter 0 after the attestation's 0")
    }

    @Test func replayOfTheSameAssertionFailsCounter() throws {
        let once = try assertion(counter: 1)
        let first = try verify(once)
        #expect(errorCode { try verify(once, previousCounter: first.counter) } == .counter,
                "the same bytes presented twice")
    }

    // MARK: Step 1: format.

    @Test func bytesThatAreNotCBORFailAssertionFormat() {
        #expect(errorCode { try verify([0xFF]) } == .assertionFormat, "a lone break byte")
        #expect(errorCode { try verify([]) } == .assertionFormat, "no bytes")
    }

    @Test func mapWithoutSignatureFailsAssertionFormat() throws {
        let parsed = try Assertion(cborEncoded: assertion(counter: 1)[...])
        let missing = CBORWriter.encode(.map([CBORMapEntry(key: .text("authenticatorData"),
                                                           value: .bytes(parsed.authenticatorData))]))
        #expect(errorCode { try verify(missing) } == .assertionFormat, "no signature")
    }

    @Test func textInsteadOfBytesFailsAssertionFormat() throws {
        let wrong = CBORWriter.encode(.map([
            CBORMapEntry(key: .text("signature"), value: .text("MEUCIQ")),
            CBORMapEntry(key: .text("authenticatorData"), value: .text("AAAA")),
        ]))
        #expect(errorCode { try verify(wrong) } == .assertionFormat, "text strings where byte strings belong")
    }

    @Test func shortAuthenticatorDataFailsAssertionFormat() throws {
        let short = CBORWriter.encode(.map([
            CBORMapEntry(key: .text("signature"), value: .bytes([0x30, 0x00])),
            CBORMapEntry(key: .text("authenticatorData"), value: .bytes([UInt8](repeating: 0, count: 36)[...])),
        ]))
        #expect(errorCode { try verify(short) } == .assertionFormat, "36 bytes of authenticatorData, one short of 37")
    }

    @Test func trailingBytesFailAssertionFormat() throws {
        #expect(errorCode { try verify(assertion(counter: 1) + [0x00]) } == .assertionFormat, "a byte after the map")
    }

    /// Real devices' assertion flags are not something this project has a capture of; whatever
    /// they are (AT set included), the 37-byte head is all that is read and the signature
    /// covers the byte.
    @Test func flagsAreNotInterpreted() throws {
        for flags: UInt8 in [0x00, 0x01, 0x40, 0x45, 0xC0] {
            let a = try device.assertion(clientDataHash: Fixtures.clientDataHash, appID: Fixtures.appID, counter: 7,
                                         flags: flags)
            #expect(try verify(a, previousCounter: 6).counter == 7, "flags 0x\(String(flags, radix: 16))")
        }
    }
}
