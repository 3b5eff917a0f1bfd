import AttestCore

/// A chain shaped like Apple's receipt chain, signing synthetic App Attest receipts for tests:
///
/// ```
/// root            P-384, self-signed, CA
///  └ intermediate P-384, CA pathlen 0, marker 1.2.840.113635.100.6.2.3 (unless left out)
///     └ signer    P-256, digitalSignature, marker 1.2.840.113635.100.12.15 = NULL (unless left out)
/// ```
/// `receipt` wraps a payload the way Apple does: CMS SignedData over id-data, indefinite-length
/// BER with the content in 1000-byte OCTET STRING chunks, one signer identified by issuer and
/// serial, no signed attributes (the ECDSA-SHA256 signature is over the content itself), and
/// the three certificates.
public struct TestReceiptAuthority: Sendable {
    public let root: Certificate
    public let intermediate: Certificate
    public let signer: Certificate
    let signerKey: SigningKey

    public static func generate(validFrom: Timestamp, validUntil: Timestamp, leafMarker: Bool = true,
                                intermediateMarker: Bool = true) throws(AttestError) -> TestReceiptAuthority {
        let rootKey = try SigningKey.generate(.p384), middleKey = try SigningKey.generate(.p384)
        let signerKey = try SigningKey.generate(.p256)
        let rootName = X509Name.apple(commonName: "Test Root CA - G3", organization: "AttestEdge Test")
        let middleName = X509Name.apple(commonName: "Test Application Integration CA 5 - G1",
                                        organization: "AttestEdge Test")
        func template(_ issuer: [UInt8], _ subject: [UInt8], _ key: SigningKey, _ extensions: [[UInt8]],
                      _ algorithm: CertificateTemplate.SignatureAlgorithm) -> CertificateTemplate {
            CertificateTemplate(serialNumber: SystemRandom().bytes(12), issuer: issuer, subject: subject,
                                notBefore: validFrom, notAfter: validUntil,
                                subjectPublicKeyInfo: key.subjectPublicKeyInfo, extensions: extensions,
                                signatureAlgorithm: algorithm)
        }
        let null: [UInt8] = [0x05, 0x00]
        var middleExtensions = [X509Extension.basicConstraints(ca: true, pathLength: 0),
                                X509Extension.keyUsage(X509Extension.certificateSigning)]
        if intermediateMarker {
            middleExtensions.append(X509Extension.der(ObjectIdentifier(AppAttestReceipt.Marker.intermediate),
                                                      value: null))
        }
        var signerExtensions = [X509Extension.basicConstraints(ca: false), X509Extension.keyUsage(0x80)]
        if leafMarker {
            signerExtensions.append(X509Extension.der(ObjectIdentifier(AppAttestReceipt.Marker.leaf), value: null))
        }
        let rootSigner = try DigestSigner(rootKey), middleSigner = try DigestSigner(middleKey)
        let root = template(rootName, rootName, rootKey,
                            [X509Extension.basicConstraints(ca: true),
                             X509Extension.keyUsage(X509Extension.certificateSigning)], .ecdsaWithSHA384)
        let middle = template(rootName, middleName, middleKey, middleExtensions, .ecdsaWithSHA384)
        let leaf = template(middleName, X509Name.apple(commonName: "Test Fraud Receipt Signing",
                                                       organization: "AttestEdge Test"),
                            signerKey, signerExtensions, .ecdsaWithSHA384)
        return TestReceiptAuthority(root: try Certificate(derEncoded: root.signed(by: rootSigner)),
                                    intermediate: try Certificate(derEncoded: middle.signed(by: rootSigner)),
                                    signer: try Certificate(derEncoded: leaf.signed(by: middleSigner)),
                                    signerKey: signerKey)
    }

    /// The payload: a SET of (type, version 1, value) attributes, in the order given (Apple's is
    /// not in DER order either); the same type may be given twice, for the negative tests.
    public static func payload(_ attributes: [(Int, [UInt8])]) -> [UInt8] {
        DERBuilder.set(attributes.map { type, value in
            DERBuilder.sequence([DERBuilder.integer(UInt64(type)), DERBuilder.integer(1),
                                 DERBuilder.octetString(value)])
        })
    }

    /// The attributes of a receipt about `credentialCertificate`, RECEIPT order as Apple's.
    public static func attributes(kind: AppAttestReceipt.Kind, appID: String, credentialCertificate: [UInt8],
                                  createdAt: Timestamp, riskMetric: Int? = nil,
                                  environment: String = "production") -> [(Int, [UInt8])] {
        func text(_ s: String) -> [UInt8] { Array(s.utf8) }
        func time(_ t: Timestamp) -> [UInt8] { text(String(t.iso8601.dropLast()) + ".153Z") }
        var list = [(Int, [UInt8])]()
        if let riskMetric { list.append((17, text(String(riskMetric)))) }
        list += [(6, text(kind.rawValue)), (2, text(appID)), (3, credentialCertificate), (5, text("dG9rZW4="))]
        if kind == .receipt { list.append((19, time(createdAt + 86_400))) }
        list += [(4, text("client-hash")), (7, text(environment)), (12, time(createdAt)),
                 (21, time(createdAt + 90 * 86_400))]
        return list
    }

    /// `payload` signed as a receipt; `tamper` changes the content after signing.
    public func receipt(_ payload: [UInt8], tamper: ((inout [UInt8]) -> Void)? = nil) throws(AttestError) -> [UInt8] {
        let signature = try signerKey.sign(payload)
        var content = payload
        tamper?(&content)
        let fields = try CertificateTemplate.tbsFields(of: signer.derEncoded)
        let sha256 = DERBuilder.sequence([DERBuilder.oid(ObjectIdentifier("2.16.840.1.101.3.4.2.1"))])
        let ecdsaSHA256 = DERBuilder.sequence([DERBuilder.oid(ObjectIdentifier("1.2.840.10045.4.3.2"))])
        let signerInfo = DERBuilder.sequence([
            DERBuilder.integer(1),
            DERBuilder.sequence([Array(fields[3].encoded), Array(fields[1].encoded)]),
            sha256, ecdsaSHA256, DERBuilder.octetString(signature),
        ])
        let chunks = stride(from: 0, to: content.count, by: 1000).flatMap {
            DERBuilder.octetString(Array(content[$0..<min($0 + 1000, content.count)]))
        }
        let encapsulated = Self.indefinite(0x30, DERBuilder.oid(ObjectIdentifier("1.2.840.113549.1.7.1"))
                                           + Self.indefinite(0xA0, Self.indefinite(0x24, chunks)))
        let signedData = Self.indefinite(0x30, DERBuilder.integer(1) + DERBuilder.set([sha256]) + encapsulated
                                         + DERBuilder.tlv(0xA0, signer.derEncoded + intermediate.derEncoded
                                                          + root.derEncoded)
                                         + DERBuilder.set([signerInfo]))
        return Self.indefinite(0x30, DERBuilder.oid(ObjectIdentifier("1.2.840.113549.1.7.2"))
                               + Self.indefinite(0xA0, signedData))
    }

    /// An indefinite-length BER TLV: identifier, 0x80, content, end-of-contents.
    static func indefinite(_ tag: UInt8, _ content: [UInt8]) -> [UInt8] { [tag, 0x80] + content + [0, 0] }
}
