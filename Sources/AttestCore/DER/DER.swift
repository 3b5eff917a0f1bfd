/// A reader for DER (X.690) TLV structures: just enough to walk a certificate to its
/// extensions and unwrap the App Attest nonce.
///
/// Definite, minimal lengths only; identifiers may use the multi-byte tag-number form (Apple's
/// extensions do). Everything is read from a slice cursor, lengths checked before slicing.
public enum DER {
    /// Tag classes (the identifier's top two bits).
    public enum TagClass: UInt8, Sendable {
        case universal = 0, application = 1, contextSpecific = 2, `private` = 3
    }

    /// Most length octets accepted (content up to 4 GiB; certificates are a few KiB).
    public static let maxLengthOctets = 4
    /// Most octets of a multi-byte tag number.
    public static let maxTagNumberOctets = 4

    /// One TLV: its identifier and its content octets (a slice of the input).
    public struct Node: Hashable, Sendable {
        public var tagClass: TagClass
        public var constructed: Bool
        public var tagNumber: UInt32
        public var content: ArraySlice<UInt8>
        /// The whole encoding, identifier and length included.
        public var encoded: ArraySlice<UInt8>

        /// Universal tag numbers this project reads.
        public static let boolean: UInt32 = 1, integer: UInt32 = 2, bitString: UInt32 = 3,
            octetString: UInt32 = 4, objectIdentifier: UInt32 = 6, sequence: UInt32 = 16, set: UInt32 = 17

        public func isUniversal(_ number: UInt32) -> Bool { tagClass == .universal && tagNumber == number }
        public func isContext(_ number: UInt32) -> Bool { tagClass == .contextSpecific && tagNumber == number }

        /// The child nodes of a constructed node, all of its content and nothing else.
        public func children() throws(AttestError) -> [Node] {
            guard constructed else { throw AttestError(.derMalformed, "primitive node has no children") }
            var cursor = content
            var nodes = [Node]()
            while !cursor.isEmpty { nodes.append(try DER.read(&cursor)) }
            return nodes
        }
    }

    /// Parses exactly one node; trailing bytes are an error.
    public static func parse(_ bytes: ArraySlice<UInt8>) throws(AttestError) -> Node {
        var cursor = bytes
        let node = try read(&cursor)
        guard cursor.isEmpty else { throw AttestError(.derMalformed, "\(cursor.count) trailing bytes") }
        return node
    }

    /// Reads one node and advances the cursor past it.
    public static func read(_ cursor: inout ArraySlice<UInt8>) throws(AttestError) -> Node {
        let original = cursor
        guard let identifier = cursor.popFirst() else { throw AttestError(.derMalformed, "unexpected end of input") }
        var number = UInt32(identifier & 0x1F)
        if number == 0x1F {
            number = 0
            var octets = 0
            while true {
                guard let b = cursor.popFirst() else { throw AttestError(.derMalformed, "truncated tag number") }
                octets += 1
                guard octets <= maxTagNumberOctets, !(octets == 1 && b == 0x80) else {
                    throw AttestError(.derMalformed, "tag number too long or not minimal")
                }
                number = number << 7 | UInt32(b & 0x7F)
                if b & 0x80 == 0 { break }
            }
            guard number >= 0x1F else { throw AttestError(.derMalformed, "high tag form for a low tag number") }
        }
        guard let first = cursor.popFirst() else { throw AttestError(.derMalformed, "missing length") }
        var length = 0
        if first < 0x80 {
            length = Int(first)
        } else {
            let octets = Int(first & 0x7F)
            guard octets > 0 else { throw AttestError(.derMalformed, "indefinite length is not DER") }
            guard octets <= maxLengthOctets, cursor.count >= octets else {
                throw AttestError(.derMalformed, "length of \(octets) octets")
            }
            for b in cursor.prefix(octets) { length = length << 8 | Int(b) }
            cursor = cursor.dropFirst(octets)
            guard length >= 0x80, length >> (8 * (octets - 1)) != 0 else {
                throw AttestError(.derMalformed, "length is not minimally encoded")
            }
        }
        guard cursor.count >= length else {
            throw AttestError(.derMalformed, "content of \(length) bytes but only \(cursor.count) remain")
        }
        let content = cursor.prefix(length)
        cursor = cursor.dropFirst(length)
        return Node(tagClass: TagClass(rawValue: identifier >> 6)!, constructed: identifier & 0x20 != 0,
                    tagNumber: number, content: content, encoded: original[original.startIndex..<content.endIndex])
    }
}
