/// The cached path of `ReceiptVerifier`: a receipt signed by a certificate whose chain the CMS
/// path has verified (and whose key it cached) is read with `BER` and its signature checked
/// with that key, without `d2i_CMS_bio`, which decodes the three certificates' keys through
/// OpenSSL's decoders and costs more than the rest of the verification (458 receipts/s against
/// 645 attestations/s on one core of the development box).
///
/// This path only ever accepts. It takes exactly the shape Apple sends (one signer named by
/// issuer and serial, SHA-256 and ecdsa-with-SHA256, no signed or unsigned attributes, the
/// signer's certificate among the receipt's and in the cache for this time); any other shape,
/// and any failing signature, goes to the CMS path, which decides and names the failure.
extension ReceiptVerifier {
    static let signedDataOID = ObjectIdentifier("1.2.840.113549.1.7.2").contentOctets
    static let dataOID = ObjectIdentifier("1.2.840.113549.1.7.1").contentOctets
    static let sha256OID = ObjectIdentifier("2.16.840.1.101.3.4.2.1").contentOctets
    static let ecdsaSHA256OID = ObjectIdentifier("1.2.840.10045.4.3.2").contentOctets

    /// The verified content, or nil when this path does not apply (the caller then uses CMS).
    func contentFromCachedSigner(_ bytes: [UInt8], at time: Timestamp) -> [UInt8]? {
        guard cachedSigners > 0, let shape = try? Self.shape(bytes) else { return nil }
        for certificate in shape.certificates {
            guard let key = cachedKey(SHA256.hash(certificate), at: time) else { continue }
            guard let name = try? Self.issuerAndSerial(certificate), name.issuer.elementsEqual(shape.issuer),
                  name.serial.elementsEqual(shape.serial) else { return nil }
            return key.isValidSignature(shape.signature, message: shape.content) ? shape.content : nil
        }
        return nil
    }

    struct Shape {
        var content: [UInt8]
        var certificates: [ArraySlice<UInt8>]
        var issuer: ArraySlice<UInt8>
        var serial: ArraySlice<UInt8>
        var signature: ArraySlice<UInt8>
    }

    /// Reads SignedData as Apple writes it; throws on anything else.
    static func shape(_ bytes: [UInt8]) throws(AttestError) -> Shape {
        func fail() -> AttestError { AttestError(.receiptMalformed, "not the usual receipt shape") }
        func oid(_ node: BER.Node, _ expected: [UInt8]) -> Bool {
            node.tag == 0x06 && node.content.elementsEqual(expected)
        }
        var cursor = bytes[...]
        let top = try BER.read(&cursor)
        let info = try top.children()
        guard cursor.isEmpty, top.tag == 0x30, info.count == 2, oid(info[0], signedDataOID), info[1].tag == 0xA0
        else { throw fail() }
        let wrapped = try info[1].children()
        guard wrapped.count == 1, wrapped[0].tag == 0x30 else { throw fail() }
        let fields = try wrapped[0].children(depth: 2)
        guard fields.count >= 4, fields[0].tag == 0x02, fields[1].tag == 0x31, fields[2].tag == 0x30,
              let infos = fields.last, infos.tag == 0x31 else { throw fail() }
        let encapsulated = try fields[2].children(depth: 3)
        guard encapsulated.count == 2, oid(encapsulated[0], dataOID), encapsulated[1].tag == 0xA0 else { throw fail() }
        let explicit = try encapsulated[1].children(depth: 4)
        guard explicit.count == 1 else { throw fail() }
        let content = try explicit[0].octets()
        guard let certificateSet = fields.dropLast().dropFirst(3).first(where: { $0.tag == 0xA0 }) else { throw fail() }
        let certificates = try certificateSet.children(depth: 3).map(\.encoded)
        let signers = try infos.children(depth: 3)
        guard signers.count == 1, signers[0].tag == 0x30 else { throw fail() }
        let signer = try signers[0].children(depth: 4)
        guard signer.count == 5, signer[0].tag == 0x02, signer[1].tag == 0x30, signer[2].tag == 0x30,
              signer[3].tag == 0x30, signer[4].tag == 0x04, !signer[4].constructed else { throw fail() }
        let digest = try signer[2].children(depth: 5), algorithm = try signer[3].children(depth: 5)
        let sid = try signer[1].children(depth: 5)
        guard let d = digest.first, oid(d, sha256OID), let a = algorithm.first, oid(a, ecdsaSHA256OID),
              sid.count == 2, sid[0].tag == 0x30, sid[1].tag == 0x02 else { throw fail() }
        return Shape(content: content, certificates: certificates, issuer: sid[0].encoded, serial: sid[1].encoded,
                     signature: signer[4].content)
    }

    /// A certificate's issuer Name and serial INTEGER, encoded, from its DER.
    static func issuerAndSerial(_ der: ArraySlice<UInt8>) throws(AttestError) -> (issuer: ArraySlice<UInt8>,
                                                                                  serial: ArraySlice<UInt8>) {
        let tbs = try DER.parse(der).children()[0].children()
        let first = tbs.first?.isContext(0) == true ? 1 : 0
        guard tbs.count > first + 2 else { throw AttestError(.receiptMalformed, "a certificate without an issuer") }
        return (tbs[first + 2].encoded, tbs[first].encoded)
    }
}
