/// The signed content of an App Attest receipt: a SET OF attribute SEQUENCEs,
///
/// ```
/// Payload   ::= SET OF Attribute
/// Attribute ::= SEQUENCE { type INTEGER, version INTEGER, value OCTET STRING }
/// ```
/// read leniently: Apple's SET is not in DER order (a RECEIPT lists 17, 6, 2, 3, ...), so a
/// strict DER SET reader refuses it. Everything else is bounded: the payload's size, the
/// number of attributes, each value's size, the type's range; a type given twice is refused
/// (which of the two would count is exactly what an attacker would like to choose). Unknown
/// types are skipped.
struct ReceiptPayload {
    static let maxBytes = 16 * 1024
    static let maxAttributes = 64
    static let maxValueBytes = 8 * 1024
    static let maxType = 1_000

    /// Attribute values by type.
    let values: [Int: ArraySlice<UInt8>]

    init(_ bytes: ArraySlice<UInt8>) throws(AttestError) {
        guard bytes.count <= Self.maxBytes else {
            throw AttestError(.receiptMalformed, "payload of \(bytes.count) bytes (at most \(Self.maxBytes))")
        }
        let set: DER.Node
        let attributes: [DER.Node]
        do throws(AttestError) {
            set = try DER.parse(bytes)
            guard set.isUniversal(DER.Node.set), set.constructed else {
                throw AttestError(.receiptMalformed, "payload is not a SET")
            }
            attributes = try set.children()
        } catch {
            throw AttestError(.receiptMalformed, "payload: \(error.reason)")
        }
        guard attributes.count <= Self.maxAttributes else {
            throw AttestError(.receiptMalformed, "payload has \(attributes.count) attributes "
                                                 + "(at most \(Self.maxAttributes))")
        }
        var values = [Int: ArraySlice<UInt8>]()
        for attribute in attributes {
            let (type, value) = try Self.attribute(attribute)
            guard values.updateValue(value, forKey: type) == nil else {
                throw AttestError(.receiptMalformed, "payload gives attribute \(type) twice")
            }
        }
        self.values = values
    }

    private static func attribute(_ node: DER.Node) throws(AttestError) -> (Int, ArraySlice<UInt8>) {
        let parts: [DER.Node]
        do throws(AttestError) {
            guard node.isUniversal(DER.Node.sequence) else { throw AttestError(.derMalformed, "not a SEQUENCE") }
            parts = try node.children()
        } catch {
            throw AttestError(.receiptMalformed, "payload attribute: \(error.reason)")
        }
        guard parts.count == 3, parts[0].isUniversal(DER.Node.integer), !parts[0].constructed,
              parts[1].isUniversal(DER.Node.integer), !parts[1].constructed,
              parts[2].isUniversal(DER.Node.octetString), !parts[2].constructed,
              let type = smallInteger(parts[0].content), type <= maxType else {
            throw AttestError(.receiptMalformed, "payload attribute is not SEQUENCE { INTEGER 0...\(maxType), "
                                                 + "INTEGER, OCTET STRING }")
        }
        guard parts[2].content.count <= maxValueBytes else {
            throw AttestError(.receiptMalformed, "attribute \(type) has \(parts[2].content.count) bytes "
                                                 + "(at most \(maxValueBytes))")
        }
        return (type, parts[2].content)
    }

    /// A non-negative INTEGER of at most two content bytes, or nil.
    private static func smallInteger(_ content: ArraySlice<UInt8>) -> Int? {
        guard (1...2).contains(content.count), let first = content.first, first & 0x80 == 0 else { return nil }
        return content.reduce(0) { $0 << 8 | Int($1) }
    }

    func text(_ type: Int) throws(AttestError) -> String? {
        guard let value = values[type] else { return nil }
        guard let text = String(validating: value, as: UTF8.self), !text.contains("\0") else {
            throw AttestError(.receiptMalformed, "attribute \(type) is not UTF-8 text")
        }
        return text
    }

    func time(_ type: Int) throws(AttestError) -> Timestamp? {
        guard let text = try text(type) else { return nil }
        guard let time = Timestamp(iso8601: text) else {
            throw AttestError(.receiptMalformed, "attribute \(type) is not an ISO 8601 time: \(text.prefix(40))")
        }
        return time
    }
}
