import AttestCore
import Testing

/// `vectors/base64.json`.
struct Base64Vectors: Decodable {
    struct Decode: Decodable, CustomTestStringConvertible {
        let id: String, text: String, hex: String?
        var testDescription: String { id }
    }
    struct Encode: Decodable, CustomTestStringConvertible {
        let id: String, hex: String, standard: String, url: String
        var testDescription: String { id }
    }
    let decode: [Decode]
    let encode: [Encode]

    static let file: Base64Vectors = Vectors.loadOrFail("base64.json")
}

/// Base64 (both alphabets, padded or not) and hexadecimal.
@Suite struct EncodingTests {
    @Test(arguments: Base64Vectors.file.decode)
    func base64Decodes(_ v: Base64Vectors.Decode) {
        let decoded = Base64.decode(v.text).map { Hex.encode($0) }
        #expect(decoded == v.hex, "vector \(v.id): \(v.hex.map { "decodes to \($0)" } ?? "is not base64")")
    }

    @Test(arguments: Base64Vectors.file.encode)
    func base64Encodes(_ v: Base64Vectors.Encode) {
        let bytes = Vectors.hex(v.hex)
        #expect(Base64.encode(bytes) == v.standard, "vector \(v.id): standard alphabet, padded")
        #expect(Base64.encode(bytes, url: true) == v.url, "vector \(v.id): URL alphabet, unpadded")
    }

    @Test func base64RoundTripsEveryLength() {
        var rng = SystemRandomNumberGenerator()
        for length in 0..<67 {
            let bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &rng) }
            #expect(Base64.decode(Base64.encode(bytes)) == bytes, "standard round trip of \(length) bytes")
            #expect(Base64.decode(Base64.encode(bytes, url: true)) == bytes, "URL round trip of \(length) bytes")
        }
    }

    @Test func hexEncodesLowerCase() {
        #expect(Hex.encode([0x00, 0x0F, 0xA0, 0xFF]) == "000fa0ff", "two lower-case digits a byte")
        #expect(Hex.encode([UInt8]()) == "", "empty")
    }

    /// Arrays and slices take the buffer path, other collections a copy: same answers.
    @Test func hexEncodesEveryKindOfCollection() {
        func digits(_ b: UInt8) -> String { (b < 16 ? "0" : "") + String(b, radix: 16) }
        let bytes = (0...255).map { UInt8($0) }
        #expect(Hex.encode(bytes) == bytes.map(digits).joined())
        #expect(Hex.encode(bytes[16..<32]) == bytes[16..<32].map(digits).joined(), "a slice starting past its base")
        #expect(Hex.encode(bytes.reversed()) == bytes.reversed().map(digits).joined(), "not contiguous")
        #expect(Hex.encode(Set([UInt8(0xAB)])) == "ab")
    }

    @Test func hexDecodesEitherCase() {
        #expect(Hex.decode("00fFa0Ff") == [0x00, 0xFF, 0xA0, 0xFF], "mixed case")
        #expect(Hex.decode("") == [], "empty")
    }

    /// Arrays and slices take the buffer path, other collections the generic one: same answers.
    @Test func constantTimeEqualComparesEveryByte() {
        let a: [UInt8] = Array(0..<32)
        var last = a, first = a
        last[31] ^= 1
        first[0] ^= 0x80
        #expect(constantTimeEqual(a, a))
        #expect(!constantTimeEqual(a, last), "a difference in the last byte")
        #expect(!constantTimeEqual(a, first), "a difference in the first byte")
        #expect(!constantTimeEqual(a, a.prefix(31)), "different lengths")
        #expect(constantTimeEqual(a[4..<20], Array(4..<20) as [UInt8]), "a slice against an array")
        #expect(constantTimeEqual(a.lazy.map { $0 }, a), "a collection without contiguous storage")
        #expect(!constantTimeEqual(last.lazy.map { $0 }, a))
        #expect(constantTimeEqual([UInt8](), [UInt8]()), "empty")
    }

    @Test(arguments: ["0", "abc", "0g", "zz", " 00", "00 ", "0x00", "é0"])
    func hexRejectsNonHex(_ text: String) {
        #expect(Hex.decode(text) == nil, "\"\(text)\" is not hex")
    }
}
