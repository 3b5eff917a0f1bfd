import AttestCore

/// The DER reader and the certificate fields App Attest reads from it: a TLV tree walk
/// whose re-encoding is the input, then `CertificateFields` with its nonce, key and
/// CA accessors.
enum DERTarget {
    /// Deeper than any certificate; bounds the walk's recursion on hostile nesting.
    static let maxWalkDepth = 64

    static func make() -> FuzzTarget {
        FuzzTarget(name: "der", summary: "DER.parse tree walk, CertificateFields and its accessors") { input in
            if let node = try? DER.parse(input) {
                expect(node.encoded.elementsEqual(input), "a parsed node's encoding is not its input")
                walk(node, depth: 0)
            }
            guard let fields = try? CertificateFields(derEncoded: input) else { return }
            _ = fields.p256Point
            _ = fields.isCertificateAuthority
            do throws(AttestError) { _ = try fields.appAttestNonce() } catch {
                expect(error.code == .nonce || error.code == .derMalformed, "nonce error code \(error.code)")
            }
            for oid in fields.extensions.keys { _ = oid.description }
        }
    }

    /// Children tile their parent's content exactly, at every level.
    static func walk(_ node: DER.Node, depth: Int) {
        guard node.constructed, depth < maxWalkDepth, let children = try? node.children() else { return }
        expect(children.reduce(0) { $0 + $1.encoded.count } == node.content.count, "children do not tile the content")
        for child in children { walk(child, depth: depth + 1) }
    }
}
