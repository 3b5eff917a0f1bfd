import AttestCore

extension TestReceiptAuthority {
    /// The authority as one PEM text, in this order: root, intermediate and signer
    /// certificates, then the signer's key (unencrypted PKCS #8: keep the file mode 0600).
    /// Comment lines between the blocks name each one and are ignored when loading. The
    /// signer's certificate and key are what a stand-in for Apple signs receipts with, e.g.
    /// `openssl cms -sign -binary -nodetach -noattr -md sha256 -outform DER -signer FILE
    /// -inkey FILE -certfile CHAIN -in PAYLOAD` (OpenSSL takes the first certificate and the key
    /// from FILE; CHAIN is FILE from "# intermediate certificate" on, since OpenSSL refuses a
    /// `-certfile` that holds the signer again: `awk '/# intermediate certificate/{p=1} p'`).
    public var pemEncoded: String {
        "# AttestEdge test receipt authority: signer certificate\n" + signer.pemEncoded
            + "# signer key\n" + signerKeyPEM
            + "# intermediate certificate\n" + intermediate.pemEncoded
            + "# root certificate\n" + root.pemEncoded
    }

    /// The signer's private key, PEM (PKCS #8 `PRIVATE KEY`).
    public var signerKeyPEM: String { signerKey.pemEncoded }

    /// Loads what `pemEncoded` wrote: three `CERTIFICATE` blocks in its order (signer,
    /// intermediate, root) and the signer's key. Throws when a piece is missing or the key is
    /// not the first certificate's.
    public init(pemEncoded text: String) throws(AttestError) {
        let blocks = try PEMBlock.all(in: text)
        let certificates = try blocks.filter { $0.label == "CERTIFICATE" }.map { block throws(AttestError) in
            try Certificate(derEncoded: block.der)
        }
        let keys = blocks.filter { $0.label.hasSuffix("PRIVATE KEY") }
        guard certificates.count == 3, keys.count == 1 else {
            throw AttestError(.keyInvalid, "a test receipt authority is 3 certificates and 1 private key, "
                                               + "found \(certificates.count) and \(keys.count)")
        }
        let (signer, intermediate, root) = (certificates[0], certificates[1], certificates[2])
        let key = try SigningKey(pemEncoded: pemEncode(keys[0].der, label: keys[0].label))
        guard try key.subjectPublicKeyInfo[...] == signer.fields().subjectPublicKeyInfo else {
            throw AttestError(.keyInvalid, "the private key is not the signer certificate's")
        }
        self.init(root: root, intermediate: intermediate, signer: signer, signerKey: key)
    }
}
