import AttestCore
import AttestTesting
import Testing

/// The cached path checks App Attest-shaped leaves itself instead of through OpenSSL (see
/// `ChainVerifier`). These leaves, each odd in one way, must get the same verdict from a
/// verifier whose cache is warm as from a cold one that runs `X509_verify_cert` in full.
@Suite struct CachedLeafCheckTests {
    static let pki = IntermediateCacheTests.pki
    static let now = Fixtures.now

    /// A leaf issued by the cache PKI's intermediate, built from a template `change` adjusts.
    static func leaf(_ change: (inout CertificateTemplate) -> Void = { _ in }) throws -> [UInt8] {
        let key = try SigningKey.generate(.p256)
        var template = CertificateTemplate(
            serialNumber: [0x42], issuer: try issuerName(),
            subject: X509Name.apple(commonName: "leaf", unit: "AAA Certification", organization: "Cache"),
            notBefore: now - 86_400, notAfter: now + 86_400, subjectPublicKeyInfo: key.subjectPublicKeyInfo,
            extensions: [X509Extension.basicConstraints(ca: false),
                         X509Extension.keyUsage(X509Extension.credentialUsage),
                         X509Extension.appAttestNonce(SHA256.hash([1]))],
            signatureAlgorithm: .ecdsaWithSHA256)
        change(&template)
        return try template.signed(by: pki.intermediateKey)
    }

    static func issuerName() throws -> [UInt8] {
        let tbs = try DER.parse(pki.intermediateDER[...]).children()[0].children()
        return Array(tbs[5].encoded)
    }

    /// `der` with its outer AlgorithmIdentifier or signature BIT STRING replaced.
    static func reassembled(_ der: [UInt8], algorithm: [UInt8]? = nil, unusedBits: UInt8? = nil) throws -> [UInt8] {
        let top = try DER.parse(der[...]).children()
        var signature = Array(top[2].content)
        if let unusedBits { signature[0] = unusedBits }
        return DERBuilder.sequence([Array(top[0].encoded), algorithm ?? Array(top[1].encoded),
                                    DERBuilder.tlv(0x03, signature)])
    }

    static let oddLeaves: [(String, @Sendable () throws -> [UInt8])] = [
        ("an ordinary leaf", { try leaf() }),
        ("signed with ecdsa-with-SHA384", { try leaf { $0.signatureAlgorithm = .ecdsaWithSHA384 } }),
        ("outer algorithm differs from the TBSCertificate's", {
            try reassembled(leaf(), algorithm: DERBuilder.sequence([
                DERBuilder.oid(CertificateTemplate.SignatureAlgorithm.ecdsaWithSHA384.oid),
            ]))
        }),
        ("signature BIT STRING with unused bits", { try reassembled(leaf(), unusedBits: 1) }),
        ("issuer is not the intermediate's subject", {
            try leaf { $0.issuer = X509Name.apple(commonName: "Someone Else", organization: "Cache") }
        }),
        ("an unknown critical extension in Apple's arc", {
            try leaf { $0.extensions.append(X509Extension.der(ObjectIdentifier("1.2.840.113635.100.8.99"),
                                                              critical: true, value: [0x05, 0x00])) }
        }),
        ("an Apple-arc extension whose critical BOOLEAN is 0x01 (OpenSSL: TRUE)", {
            try leaf { $0.extensions.append(X509Extension.der(ObjectIdentifier("1.2.840.113635.100.8.99"),
                                                              criticalOctet: 0x01, value: [0x05, 0x00])) }
        }),
        ("an Apple-arc extension whose critical BOOLEAN is an explicit FALSE (0x00)", {
            try leaf { $0.extensions.append(X509Extension.der(ObjectIdentifier("1.2.840.113635.100.8.99"),
                                                              criticalOctet: 0x00, value: [0x05, 0x00])) }
        }),
        ("keyUsage whose critical BOOLEAN is 0x01", {
            try leaf {
                $0.extensions[1] = X509Extension.der(.keyUsage, criticalOctet: 0x01,
                                                     value: DERBuilder.tlv(0x03, [4, X509Extension.credentialUsage]))
            }
        }),
        ("a non-critical extension outside Apple's arc", {
            try leaf { $0.extensions.append(X509Extension.der(ObjectIdentifier("1.3.6.1.4.1.99999.1"),
                                                              value: [0x05, 0x00])) }
        }),
        ("a matching authorityKeyIdentifier", {
            let spki = try CertificateFields(derEncoded: pki.intermediateDER[...]).subjectPublicKeyInfo
            return try leaf {
                $0.extensions.append(X509Extension.authorityKeyIdentifier(
                    X509Extension.keyIdentifier(subjectPublicKeyInfo: Array(spki))))
            }
        }),
        ("an authorityKeyIdentifier naming another key", {
            try leaf { $0.extensions.append(X509Extension.authorityKeyIdentifier([UInt8](repeating: 7, count: 20))) }
        }),
        ("basicConstraints CA:TRUE", { try leaf { $0.extensions[0] = X509Extension.basicConstraints(ca: true) } }),
        ("keyUsage that is not a BIT STRING", {
            try leaf { $0.extensions[1] = X509Extension.der(ObjectIdentifier("2.5.29.15"), critical: true,
                                                            value: [0x04, 0x01, 0xF0]) }
        }),
        ("extKeyUsage that is not a SEQUENCE OF OID", {
            try leaf { $0.extensions.append(X509Extension.der(ObjectIdentifier("2.5.29.37"),
                                                              value: [0x30, 0x03, 0x02, 0x01, 0x01])) }
        }),
        ("a well-formed extKeyUsage, as Apple's leaf has", {
            try leaf {
                $0.extensions.append(X509Extension.der(ObjectIdentifier("2.5.29.37"), value: DERBuilder.sequence([
                    DERBuilder.oid(ObjectIdentifier("1.2.840.113635.100.4.24")),
                ])))
            }
        }),
        ("expired", { try leaf { $0.notBefore = now - 3 * 86_400; $0.notAfter = now - 86_400 } }),
        ("not yet valid", { try leaf { $0.notBefore = now + 86_400; $0.notAfter = now + 3 * 86_400 } }),
        ("notAfter is the verification time", { try leaf { $0.notAfter = now } }),
        ("notBefore is the verification time", { try leaf { $0.notBefore = now } }),
        ("signed by another key", {
            let name = try issuerName()
            let key = try SigningKey.generate(.p256)
            return try CertificateTemplate(serialNumber: [1], issuer: name, subject: name,
                                           notBefore: now - 60, notAfter: now + 60,
                                           subjectPublicKeyInfo: key.subjectPublicKeyInfo, extensions: [],
                                           signatureAlgorithm: .ecdsaWithSHA256).signed(by: SigningKey.generate(.p384))
        }),
        ("no extensions at all", { try leaf { $0.extensions = [] } }),
    ]

    @Test(arguments: oddLeaves.indices)
    func warmAndColdVerifiersAgree(_ index: Int) throws {
        let (what, make) = Self.oddLeaves[index]
        let der = try make()
        let intermediate = [Self.pki.intermediateDER[...]]
        let warm = try Self.pki.chainVerifier()
        let device = try SoftwareDevice.generate()
        let (keyID, object) = try device.attest(clientDataHash: Fixtures.clientDataHash, appID: Fixtures.appID,
                                                pki: Self.pki, at: Self.now)
        _ = try AttestationVerifier(chainVerifier: warm).verify(attestationObject: object[...], keyID: keyID,
                                                                clientDataHash: Fixtures.clientDataHash,
                                                                appID: Fixtures.appID, policy: .production,
                                                                at: Self.now)
        #expect(warm.cachedIntermediateCount == 1, "the warm verifier has the intermediate cached")
        let cold = errorCode { try Self.pki.chainVerifier().verify(leafDER: der[...], intermediatesDER: intermediate,
                                                                   at: Self.now) }
        let cached = errorCode { try warm.verify(leafDER: der[...], intermediatesDER: intermediate, at: Self.now) }
        #expect(cached == cold, """
            \(what): cached verdict \(cached.map(\.rawValue) ?? "valid") \
            equals full verdict \(cold.map(\.rawValue) ?? "valid")
            """)
    }

    @Test func theOddLeavesCoverBothVerdicts() throws {
        var verdicts = Set<Bool>()
        for (_, make) in Self.oddLeaves {
            let der = try make()
            verdicts.insert(errorCode {
                try Self.pki.chainVerifier().verify(leafDER: der[...],
                                                    intermediatesDER: [Self.pki.intermediateDER[...]], at: Self.now)
            } == nil)
        }
        #expect(verdicts == [true, false], "some odd leaves are valid and some are not, so agreement means something")
    }
}
