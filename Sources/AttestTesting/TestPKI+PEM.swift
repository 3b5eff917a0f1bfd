import AttestCore

extension TestPKI {
    /// The PKI as one PEM text, in this order: root certificate, intermediate certificate,
    /// intermediate key, root key (unencrypted PKCS #8: keep the file mode 0600). Comment lines
    /// between the blocks name each one and are ignored when loading.
    public var pemEncoded: String {
        "# \(name): root certificate\n" + rootCertificate.pemEncoded
            + "# intermediate certificate\n" + intermediateCertificate.pemEncoded
            + "# intermediate key\n" + intermediateKey.pemEncoded
            + "# root key\n" + rootKey.pemEncoded
    }

    /// Loads what `pemEncoded` wrote: two `CERTIFICATE` blocks (root, then intermediate) and two
    /// `PRIVATE KEY` blocks, matched to the certificates by public key (so their order does not
    /// matter). Throws when a piece is missing or a key belongs to neither certificate.
    /// The name is read back from the root's organization attribute.
    public init(pemEncoded text: String) throws(AttestError) {
        let blocks = try PEMBlock.all(in: text)
        let certificates = blocks.filter { $0.label == "CERTIFICATE" }
        let keys = blocks.filter { $0.label.hasSuffix("PRIVATE KEY") }
        guard certificates.count == 2, keys.count == 2 else {
            throw AttestError(.keyInvalid, "a test PKI is 2 certificates and 2 private keys, "
                                               + "found \(certificates.count) and \(keys.count)")
        }
        let root = try Certificate(derEncoded: certificates[0].der)
        let intermediate = try Certificate(derEncoded: certificates[1].der)
        var rootKey: SigningKey?, intermediateKey: SigningKey?
        for block in keys {
            let key = try SigningKey(pemEncoded: pemEncode(block.der, label: block.label))
            let spki = key.subjectPublicKeyInfo
            if try spki[...] == root.fields().subjectPublicKeyInfo { rootKey = key }
            if try spki[...] == intermediate.fields().subjectPublicKeyInfo { intermediateKey = key }
        }
        guard let rootKey, let intermediateKey else {
            throw AttestError(.keyInvalid, "the private keys do not match the root and intermediate certificates")
        }
        let name = try X509Name.value(of: X509Name.organization, inSubjectOf: root.derEncoded) ?? "AttestEdge Test"
        try self.init(name: name, rootCertificate: root, intermediateCertificate: intermediate,
                      rootKey: rootKey, intermediateKey: intermediateKey)
    }
}
