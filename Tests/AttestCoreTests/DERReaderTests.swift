import AttestCore
import AttestTesting
import Testing

/// The DER reader: lengths, identifiers, OIDs, and the certificate fields App Attest reads.
@Suite struct DERReaderTests {
    /// An OCTET STRING with `count` content bytes and the given length octets.
    func octetString(lengthOctets: [UInt8], count: Int) -> [UInt8] {
        [0x04] + lengthOctets + [UInt8](repeating: 0xAB, count: count)
    }

    // MARK: Lengths.

    @Test(arguments: [(0, [UInt8(0x00)]), (1, [0x01]), (127, [0x7F]), (128, [0x81, 0x80]), (255, [0x81, 0xFF]),
                      (256, [0x82, 0x01, 0x00]), (65_535, [0x82, 0xFF, 0xFF]), (65_536, [0x83, 0x01, 0x00, 0x00])])
    func minimalLengthsAreRead(_ count: Int, _ length: [UInt8]) throws {
        let node = try DER.parse(octetString(lengthOctets: length, count: count)[...])
        #expect(node.content.count == count, "length octets \(Hex.encode(length)) give \(count) content bytes")
        #expect(DERBuilder.length(count) == length, "DERBuilder writes \(count) as \(Hex.encode(length))")
    }

    @Test(arguments: [("long form for a short length", [UInt8(0x81), 0x7F], 127),
                      ("leading zero octet", [0x82, 0x00, 0x80], 128),
                      ("two octets where one does", [0x82, 0x00, 0xFF], 255)])
    func nonMinimalLengthsAreRejected(_ what: String, _ length: [UInt8], _ count: Int) {
        #expect(errorCode { try DER.parse(octetString(lengthOctets: length, count: count)[...]) } == .derMalformed,
                "\(what)")
    }

    @Test func indefiniteLengthIsRejected() {
        #expect(errorCode { try DER.parse([0x30, 0x80, 0x04, 0x00, 0x00, 0x00][...]) } == .derMalformed,
                "0x80 is BER's indefinite length")
    }

    @Test func moreThanFourLengthOctetsAreRejected() {
        #expect(errorCode { try DER.parse([0x04, 0x85, 0x01, 0x00, 0x00, 0x00, 0x00][...]) } == .derMalformed,
                "five length octets exceed DER.maxLengthOctets")
    }

    @Test func truncationIsRejected() {
        #expect(errorCode { try DER.parse([][...]) } == .derMalformed, "no identifier")
        #expect(errorCode { try DER.parse([0x04][...]) } == .derMalformed, "identifier without a length")
        #expect(errorCode { try DER.parse([0x04, 0x82, 0x01][...]) } == .derMalformed, "length octets cut short")
        #expect(errorCode { try DER.parse([0x04, 0x03, 0x01, 0x02][...]) } == .derMalformed,
                "content shorter than its length")
        #expect(errorCode { try DER.parse([0x04, 0x84, 0x7F, 0xFF, 0xFF, 0xFF, 0x00][...]) } == .derMalformed,
                "a 2 GiB length over 1 byte of content")
    }

    @Test func parseRejectsTrailingBytesAndReadLeavesThem() throws {
        #expect(errorCode { try DER.parse([0x05, 0x00, 0x05, 0x00][...]) } == .derMalformed, "parse: trailing bytes")
        var cursor: ArraySlice<UInt8> = [0x05, 0x00, 0x02, 0x01, 0x07]
        let first = try DER.read(&cursor)
        #expect(first.isUniversal(5) && first.content.isEmpty, "read: the NULL")
        #expect(cursor.startIndex == 2, "cursor after the first node")
        #expect(try DER.read(&cursor).content.first == 0x07, "then the INTEGER")
    }

    @Test func encodedCoversIdentifierLengthAndContent() throws {
        let bytes: [UInt8] = [0x30, 0x03, 0x02, 0x01, 0x05]
        let node = try DER.parse(bytes[...])
        let child = try node.children()[0]
        #expect(Array(child.encoded) == [0x02, 0x01, 0x05] && child.encoded.startIndex == 2,
                "encoded is the child's whole TLV, in place")
    }

    // MARK: Identifiers.

    @Test func identifierClassesAndConstruction() throws {
        let universal = try DER.parse([0x30, 0x00][...])
        #expect(universal.tagClass == .universal && universal.constructed && universal.tagNumber == 16,
                "0x30: universal constructed 16")
        let context = try DER.parse([0xA3, 0x00][...])
        #expect(context.isContext(3) && context.constructed, "0xA3: [3] constructed")
        let application = try DER.parse([0x41, 0x00][...])
        #expect(application.tagClass == .application && !application.constructed, "0x41: application primitive 1")
        let privateClass = try DER.parse([0xC2, 0x00][...])
        #expect(privateClass.tagClass == .private, "0xC2: private 2")
    }

    @Test func multiByteTagsAreRead() throws {
        // Apple's 1.2.840.113635.100.8.5 extension uses [1200]: bf 89 30.
        let node = try DER.parse([0xBF, 0x89, 0x30, 0x03, 0x02, 0x01, 0x00][...])
        #expect(node.isContext(1200) && node.constructed, "bf 89 30 is context-specific constructed 1200")
        let small = try DER.parse([0x9F, 0x1F, 0x00][...])
        #expect(small.isContext(31), "9f 1f is [31], the smallest high-form number")
        let big = try DER.parse([0x9F, 0xFF, 0xFF, 0xFF, 0x7F, 0x00][...])
        #expect(big.tagNumber == 0xFFF_FFFF, "four tag octets carry 28 bits")
    }

    @Test func malformedMultiByteTagsAreRejected() {
        #expect(errorCode { try DER.parse([0x9F, 0x1E, 0x00][...]) } == .derMalformed,
                "high form for 30, which fits the low form")
        #expect(errorCode { try DER.parse([0x9F, 0x80, 0x1F, 0x00][...]) } == .derMalformed, "a leading 0x80 tag octet")
        #expect(errorCode { try DER.parse([0x9F, 0x81, 0x81, 0x81, 0x81, 0x01, 0x00][...]) } == .derMalformed,
                "five tag octets")
        #expect(errorCode { try DER.parse([0x9F, 0x81][...]) } == .derMalformed, "the tag number runs off the end")
    }

    @Test func primitiveNodeHasNoChildren() throws {
        #expect(errorCode { try DER.parse([0x04, 0x02, 0x05, 0x00][...]).children() } == .derMalformed,
                "an OCTET STRING's content is not parsed as children")
        #expect(errorCode { try DER.parse([0x30, 0x02, 0x05, 0x01][...]).children() } == .derMalformed,
                "a child that overruns its parent")
    }

    // MARK: Object identifiers.

    @Test(arguments: [("1.2.840.113635.100.8.2", "2a864886f763640802"), ("1.2.840.10045.2.1", "2a8648ce3d0201"),
                      ("1.2.840.10045.3.1.7", "2a8648ce3d030107"), ("2.5.29.19", "551d13"),
                      ("1.3.132.0.34", "2b81040022"), ("2.999.3", "883703"),
                      ("0.9.2342.19200300.100.1.1", "0992268993f22c640101")])
    func objectIdentifierEncodesAndDecodes(_ dotted: String, _ hex: String) {
        let oid = ObjectIdentifier(dotted)
        #expect(Hex.encode(oid.contentOctets) == hex, "\(dotted) encodes to \(hex)")
        #expect(ObjectIdentifier(contentOctets: Vectors.hex(hex)).description == dotted,
                "\(hex) reads back as \(dotted)")
    }

    @Test func objectIdentifiersCompareByBytes() {
        #expect(ObjectIdentifier("1.2.840.113635.100.8.2") == .appAttestNonce, "the nonce OID constant")
        #expect(ObjectIdentifier("1.2.840.113635.100.8.2") != ObjectIdentifier("1.2.840.113635.100.8.20"),
                "a longer arc differs")
    }

    // MARK: Certificate fields.

    @Test func appleLeafFieldsAreExtracted() throws {
        let vector = try AppleGuideVector.load()
        let fields = try CertificateFields(derEncoded: Vectors.bytes(vector.expected.leafCertificate_b64)[...])
        #expect(fields.keyAlgorithm == .ecPublicKey && fields.keyParameters == .prime256v1,
                "id-ecPublicKey on prime256v1")
        #expect(fields.p256Point?.count == 65, "the X9.62 point")
        #expect(Array(fields.subjectPublicKeyInfo.prefix(2)) == [0x30, 0x59], "the whole 91-byte SubjectPublicKeyInfo")
        let ids = Set(fields.extensions.keys.map(\.description))
        let expected: Set = ["2.5.29.19", "2.5.29.15", "2.5.29.37", "1.2.840.113635.100.8.5", "1.2.840.113635.100.8.7",
                             "1.2.840.113635.100.8.2", "1.2.840.113635.100.8.6"]
        #expect(ids == expected, "the leaf's seven extensions, by OID")
        #expect(Array(try fields.appAttestNonce()) == Vectors.bytes(vector.expected.nonce_b64), "the nonce")
    }

    @Test func appleIntermediateHasNoP256PointAndNoNonce() throws {
        let vector = try AppleGuideVector.load()
        let fields = try CertificateFields(derEncoded: Vectors.bytes(vector.expected.intermediateCertificate_b64)[...])
        #expect(fields.keyParameters == ObjectIdentifier("1.3.132.0.34"), "a secp384r1 key")
        #expect(fields.p256Point == nil, "not a P-256 point")
        #expect(errorCode { try fields.appAttestNonce() } == .nonce, "no nonce extension")
    }

    /// A v3 certificate template around a fresh P-256 key, for field tests.
    func template(extensions: [[UInt8]]) throws -> CertificateTemplate {
        let name = X509Name.apple(commonName: "fields", organization: "AttestEdge Test")
        return CertificateTemplate(serialNumber: [1], issuer: name, subject: name,
                                   notBefore: Fixtures.now, notAfter: Fixtures.now + 60,
                                   subjectPublicKeyInfo: try SigningKey.generate(.p256).subjectPublicKeyInfo,
                                   extensions: extensions, signatureAlgorithm: .ecdsaWithSHA256)
    }

    @Test func certificateWithoutExtensionsHasNone() throws {
        let der = try template(extensions: []).signed(by: SigningKey.generate(.p256))
        let fields = try CertificateFields(derEncoded: der[...])
        #expect(fields.extensions.isEmpty && fields.p256Point != nil, "no [3] field: empty extensions, key still read")
    }

    @Test func duplicateExtensionIsRejected() throws {
        let nonce = X509Extension.appAttestNonce(SHA256.hash([1]))
        let der = try template(extensions: [nonce, nonce]).signed(by: SigningKey.generate(.p256))
        #expect(errorCode { try CertificateFields(derEncoded: der[...]) } == .derMalformed, "the nonce extension twice")
    }

    @Test func criticalFlagIsAccepted() throws {
        let critical = X509Extension.der(.appAttestNonce, critical: true,
                                         value: DERBuilder.sequence([
                                             DERBuilder.explicit(1, DERBuilder.octetString([7])),
                                         ]))
        let der = try template(extensions: [critical]).signed(by: SigningKey.generate(.p256))
        #expect(Array(try CertificateFields(derEncoded: der[...]).appAttestNonce()) == [7],
                "an extension with critical TRUE")
    }

    @Test func versionOneCertificateIsRead() throws {
        // TBSCertificate without the [0] version field.
        let key = try SigningKey.generate(.p256)
        let name = X509Name.apple(commonName: "v1", organization: "AttestEdge Test")
        let tbs = DERBuilder.sequence([DERBuilder.integer(1),
                                       DERBuilder.sequence([
                                           DERBuilder.oid(CertificateTemplate.SignatureAlgorithm.ecdsaWithSHA256.oid),
                                       ]),
                                       name, DERBuilder.sequence([DERBuilder.time(Fixtures.now),
                                                                  DERBuilder.time(Fixtures.now + 60)]),
                                       name, key.subjectPublicKeyInfo])
        let der = DERBuilder.sequence([tbs,
                                       DERBuilder.sequence([
                                           DERBuilder.oid(CertificateTemplate.SignatureAlgorithm.ecdsaWithSHA256.oid),
                                       ]),
                                       DERBuilder.bitString([0x30, 0x00])])
        let fields = try CertificateFields(derEncoded: der[...])
        #expect(fields.p256Point.map(Array.init) == key.x962Point && fields.extensions.isEmpty,
                "a v1 certificate's key, no extensions")
    }

    @Test func truncatedCertificateIsRejected() throws {
        let der = Vectors.bytes(try AppleGuideVector.load().expected.leafCertificate_b64)
        #expect(errorCode { try CertificateFields(derEncoded: der.dropLast()) } == .derMalformed, "one byte short")
        #expect(errorCode { try CertificateFields(derEncoded: (der + [0])[...]) } == .derMalformed, "one byte over")
    }

    @Test func dateEncodingSwitchesToGeneralizedTimeIn2050() throws {
        #expect(DERBuilder.time(Timestamp(iso8601: "2049-12-31T23:59:59Z")!).first == 0x17, "UTCTime through 2049")
        #expect(DERBuilder.time(Timestamp(iso8601: "2050-01-01T00:00:00Z")!)
                    == [0x18, 15] + Array("20500101000000Z".utf8),
                "GeneralizedTime from 2050 (RFC 5280)")
        let pki = try TestPKI.generate(validFrom: Timestamp(iso8601: "2049-01-01T00:00:00Z")!,
                                       validUntil: Timestamp(iso8601: "2051-01-01T00:00:00Z")!)
        #expect(pki.rootCertificate.notAfter.iso8601 == "2051-01-01T00:00:00Z",
                "OpenSSL reads the GeneralizedTime back")
    }
}
