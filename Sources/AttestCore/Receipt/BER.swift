/// A reader for the BER that CMS uses (X.690): definite lengths as in DER, plus the
/// indefinite form (0x80, content, end-of-contents) for constructed values. Only what a
/// receipt's SignedData needs: single-octet tags, at most 4 length octets, bounded depth.
enum BER {
    static let maxDepth = 12

    struct Node {
        /// The identifier octet (class, constructed bit, tag number below 31).
        let tag: UInt8
        /// The encoded TLV, whole (end-of-contents included when indefinite).
        let encoded: ArraySlice<UInt8>
        /// The content octets of a definite node; for an indefinite one, its children's TLVs.
        let content: ArraySlice<UInt8>
        var constructed: Bool { tag & 0x20 != 0 }

        func children(depth: Int = 0) throws(AttestError) -> [Node] {
            guard constructed else { throw AttestError(.receiptMalformed, "BER: a primitive value has no children") }
            guard depth < BER.maxDepth else { throw AttestError(.receiptMalformed, "BER: nested too deep") }
            var cursor = content, nodes = [Node]()
            while !cursor.isEmpty { nodes.append(try BER.read(&cursor, depth: depth + 1)) }
            return nodes
        }

        /// An OCTET STRING's bytes: primitive, or constructed from primitive chunks.
        func octets() throws(AttestError) -> [UInt8] {
            guard tag & 0x1F == 4 else { throw AttestError(.receiptMalformed, "BER: not an OCTET STRING") }
            guard constructed else { return Array(content) }
            var bytes = [UInt8]()
            for chunk in try children() {
                guard chunk.tag == 0x04 else { throw AttestError(.receiptMalformed, "BER: an OCTET STRING chunk") }
                bytes += chunk.content
            }
            return bytes
        }
    }

    static func read(_ cursor: inout ArraySlice<UInt8>, depth: Int = 0) throws(AttestError) -> Node {
        let start = cursor.startIndex
        guard depth < maxDepth else { throw AttestError(.receiptMalformed, "BER: nested too deep") }
        guard cursor.count >= 2 else { throw AttestError(.receiptMalformed, "BER: truncated") }
        let tag = cursor[start], first = cursor[start + 1]
        guard tag & 0x1F != 0x1F else { throw AttestError(.receiptMalformed, "BER: a multi-octet tag") }
        var index = start + 2
        if first == 0x80 {
            guard tag & 0x20 != 0 else { throw AttestError(.receiptMalformed, "BER: indefinite primitive") }
            var rest = cursor[index...]
            while true {
                guard rest.count >= 2 else { throw AttestError(.receiptMalformed, "BER: no end-of-contents") }
                if rest[rest.startIndex] == 0, rest[rest.startIndex + 1] == 0 { break }
                _ = try read(&rest, depth: depth + 1)
            }
            let end = rest.startIndex
            let node = Node(tag: tag, encoded: cursor[start..<(end + 2)], content: cursor[index..<end])
            cursor = cursor[(end + 2)...]
            return node
        }
        var length = Int(first)
        if first & 0x80 != 0 {
            let count = Int(first & 0x7F)
            guard (1...4).contains(count), cursor.count >= 2 + count else {
                throw AttestError(.receiptMalformed, "BER: a length of \(count) octets")
            }
            length = 0
            for i in 0..<count { length = length << 8 | Int(cursor[index + i]) }
            index += count
        }
        guard length <= cursor.endIndex - index else { throw AttestError(.receiptMalformed, "BER: truncated") }
        let end = index + length
        let node = Node(tag: tag, encoded: cursor[start..<end], content: cursor[index..<end])
        cursor = cursor[end...]
        return node
    }
}
