import AttestCore
import Testing

/// `vectors/cbor-reader.json`.
struct CBORVectors: Decodable {
    struct Accepted: Decodable, CustomTestStringConvertible {
        let id: String, hex: String, diag: String, preferred: Bool
        var testDescription: String { id }
    }
    struct Rejected: Decodable, CustomTestStringConvertible {
        let id: String, hex: String, error: String
        var testDescription: String { id }
    }
    let accepted: [Accepted]
    let rejected: [Rejected]

    static let file: CBORVectors = Vectors.loadOrFail("cbor-reader.json")
}

/// The CBOR reader: every major type, the rejected features, and each named limit.
@Suite struct CBORReaderTests {
    @Test(arguments: CBORVectors.file.accepted)
    func acceptedVectorDecodesToItsDiagnostic(_ v: CBORVectors.Accepted) throws {
        let value = try CBORReader.decode(Vectors.hex(v.hex)[...])
        #expect(CBORDiagnostic.text(value) == v.diag, "vector \(v.id) decodes to \(v.diag)")
    }

    @Test(arguments: CBORVectors.file.accepted.filter(\.preferred))
    func writerReproducesPreferredEncodings(_ v: CBORVectors.Accepted) throws {
        let value = try CBORReader.decode(Vectors.hex(v.hex)[...])
        #expect(Hex.encode(CBORWriter.encode(value)) == v.hex, "vector \(v.id): CBORWriter re-encodes the same bytes")
    }

    @Test(arguments: CBORVectors.file.rejected)
    func rejectedVectorFailsWithItsCode(_ v: CBORVectors.Rejected) {
        let code = errorCode { try CBORReader.decode(Vectors.hex(v.hex)[...]) }
        #expect(code?.rawValue == v.error, "vector \(v.id) is rejected with \(v.error)")
    }

    @Test func everyMajorTypeHasItsCase() throws {
        let value = try CBORReader.decode(Vectors.hex("88 00 20 41ff 6161 80 a0 f5 f6".filter { $0 != " " })[...])
        let items = try #require(value.arrayValue)
        #expect(items[0] == .unsigned(0), "major 0 is .unsigned")
        #expect(items[1] == .negative(0) && items[1].intValue == -1, "major 1 is .negative(n) meaning -1-n")
        #expect(items[2].bytesValue.map(Array.init) == [0xFF], "major 2 is .bytes")
        #expect(items[3].textValue == "a", "major 3 is .text")
        #expect(items[4] == .array([]), "major 4 is .array")
        #expect(items[5] == .map([]), "major 5 is .map")
        #expect(items[6] == .bool(true) && items[7] == .null, "major 7 simple values")
    }

    @Test func byteStringsAreSlicesOfTheInput() throws {
        let input = Vectors.hex("0042abcd")
        var cursor = input[1...]
        let value = try CBORReader.decodeFirst(&cursor)
        let bytes = try #require(value.bytesValue)
        #expect(bytes.startIndex == 2 && bytes.endIndex == 4, "a byte string keeps the input's indices (no copy)")
    }

    @Test func decodeFirstStopsAfterOneItem() throws {
        let input = Vectors.hex("83010203a1616101ff")
        var cursor = input[...]
        let first = try CBORReader.decodeFirst(&cursor)
        #expect(CBORDiagnostic.text(first) == "[1, 2, 3]", "decodeFirst returns the first item only")
        #expect(cursor.startIndex == 4, "the cursor stops right after it")
        let second = try CBORReader.decodeFirst(&cursor)
        #expect(CBORDiagnostic.text(second) == "{\"a\": 1}", "the next call reads the next item")
        #expect(Array(cursor) == [0xFF], "bytes after that are left alone, even a break byte")
    }

    @Test func decodeRejectsTrailingBytesButDecodeFirstLeavesThem() throws {
        let input = Vectors.hex("0102")
        #expect(errorCode { try CBORReader.decode(input[...]) } == .cborMalformed,
                "decode: trailing bytes at top level")
        var cursor = input[...]
        _ = try CBORReader.decodeFirst(&cursor)
        #expect(cursor.count == 1, "decodeFirst: one byte left")
    }

    @Test func textKeySubscriptAndIntKeySubscript() throws {
        let map = try CBORReader.decode(Vectors.hex("a26161012061" + "62")[...])
        #expect(map[text: "a"] == .unsigned(1), "text key lookup")
        #expect(map[int: -1] == .text("b"), "integer key lookup")
        #expect(map[text: "missing"] == nil, "absent key is nil")
    }

    // MARK: Limits, each on its own.

    @Test func depthLimitAllowsExactlyMaxDepthNestedContainers() throws {
        let limits = CBOR.Limits(maxDepth: 3)
        #expect(throws: Never.self, "three nested arrays fit maxDepth 3") {
            try CBORReader.decode(Vectors.hex("818180")[...], limits: limits)
        }
        #expect(throws: Never.self, "a scalar inside the third array is not a container") {
            try CBORReader.decode(Vectors.hex("81818100")[...], limits: limits)
        }
        #expect(errorCode { try CBORReader.decode(Vectors.hex("81818180")[...], limits: limits) } == .cborLimitExceeded,
                "a fourth nested array exceeds maxDepth 3")
        #expect(errorCode { try CBORReader.decode(Vectors.hex("a101a101a101a0")[...],
                                                  limits: limits) } == .cborLimitExceeded,
                "maps count towards depth like arrays")
    }

    @Test func defaultDepthLimitStopsDeepNestingBeforeTheStack() {
        let deep = [UInt8](repeating: 0x81, count: 100_000) + [0x00]
        #expect(errorCode { try CBORReader.decode(deep[...]) } == .cborLimitExceeded,
                "100 000 nested arrays fail on the depth limit, not by exhausting the stack")
    }

    @Test func containerCountLimit() throws {
        let limits = CBOR.Limits(maxContainerCount: 3)
        #expect(throws: Never.self, "3 elements fit maxContainerCount 3") {
            try CBORReader.decode(Vectors.hex("83010203")[...], limits: limits)
        }
        #expect(errorCode { try CBORReader.decode(Vectors.hex("8401020304")[...],
                                                  limits: limits) } == .cborLimitExceeded,
                "an array of 4 exceeds maxContainerCount 3")
        #expect(errorCode { try CBORReader.decode(Vectors.hex("a401010202030304040505")[...],
                                                  limits: limits) } == .cborLimitExceeded,
                "a map of 4 entries exceeds maxContainerCount 3")
        let announced = Vectors.hex("9a7fffffff")
        #expect(errorCode { try CBORReader.decode(announced[...]) } == .cborLimitExceeded,
                "a count of 2^31-1 is refused before anything is allocated")
    }

    @Test func stringLengthLimit() throws {
        let limits = CBOR.Limits(maxStringLength: 4)
        #expect(throws: Never.self, "4 bytes fit maxStringLength 4") {
            try CBORReader.decode(Vectors.hex("4401020304")[...], limits: limits)
        }
        #expect(errorCode { try CBORReader.decode(Vectors.hex("450102030405")[...],
                                                  limits: limits) } == .cborLimitExceeded,
                "a 5-byte byte string exceeds maxStringLength 4")
        #expect(errorCode { try CBORReader.decode(Vectors.hex("656162636465")[...],
                                                  limits: limits) } == .cborLimitExceeded,
                "a 5-byte text string exceeds maxStringLength 4")
    }

    @Test func totalItemsLimit() throws {
        let limits = CBOR.Limits(maxTotalItems: 5)
        #expect(throws: Never.self, "an array and its 4 elements are 5 items") {
            try CBORReader.decode(Vectors.hex("8401020304")[...], limits: limits)
        }
        #expect(errorCode { try CBORReader.decode(Vectors.hex("850102030405")[...],
                                                  limits: limits) } == .cborLimitExceeded,
                "an array and 5 elements are 6 items")
        #expect(errorCode { try CBORReader.decode(Vectors.hex("a3010102020303")[...],
                                                  limits: limits) } == .cborLimitExceeded,
                "map keys and values each count: 1 + 3 × 2 = 7 items")
    }

    @Test func totalItemsLimitSpansSiblings() throws {
        // 8 arrays of 8 elements each: no container is over the count limit, the total is.
        let limits = CBOR.Limits(maxContainerCount: 8, maxTotalItems: 64)
        let wide = [0x88] + [UInt8]((0..<8).flatMap { _ in [0x88] + [UInt8](repeating: 0, count: 8) })
        #expect(errorCode { try CBORReader.decode(wide[...], limits: limits) } == .cborLimitExceeded,
                "1 + 8 + 64 = 73 items exceed maxTotalItems 64 though each container is within its count")
    }
}
