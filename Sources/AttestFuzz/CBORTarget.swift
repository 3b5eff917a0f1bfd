import AttestCore

/// The CBOR reader: any input either decodes or throws a CBOR error; what decodes survives a
/// round trip through `CBORWriter` unchanged.
enum CBORTarget {
    static func make() -> FuzzTarget {
        FuzzTarget(name: "cbor", summary: "CBORReader.decode, then CBORWriter round trip") { input in
            let value: CBORValue
            do throws(AttestError) { value = try CBORReader.decode(input) } catch {
                expect(error.code == .cborMalformed || error.code == .cborLimitExceeded,
                       "CBOR error code \(error.code)")
                return
            }
            let encoded = CBORWriter.encode(value)
            expect(encoded.count <= input.count,
                   "preferred encoding (\(encoded.count) bytes) longer than the input (\(input.count))")
            guard let again = try? CBORReader.decode(encoded[...]) else {
                fatalError("fuzz property violated: re-encoded CBOR does not decode")
            }
            expect(again == value, "CBOR round trip changed the value")
        }
    }
}
