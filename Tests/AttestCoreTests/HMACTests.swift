import AttestCore
import Testing

@Suite struct HMACTests {
    /// RFC 4231 test case 2 (a short key) and 6 (a key longer than a block).
    @Test func rfc4231Vectors() {
        #expect(Hex.encode(HMACSHA256(key: Array("Jefe".utf8)).authenticate(Array("what do ya want for nothing?".utf8)))
                == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
        let long = HMACSHA256(key: [UInt8](repeating: 0xAA, count: 131))
        #expect(Hex.encode(long.authenticate(Array("Test Using Larger Than Block-Size Key - Hash Key First".utf8)))
                == "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54")
    }

    @Test func twoPartsAndABufferGiveTheSameTagAsOne() {
        let mac = HMACSHA256(key: Array("key".utf8))
        let whole = mac.authenticate(Array("abcdef".utf8))
        #expect(mac.authenticate(Array("abc".utf8), "def".utf8) == whole)
        var out = [UInt8](repeating: 0, count: 32)
        out.withUnsafeMutableBufferPointer { mac.authenticate("ab".utf8, Array("cdef".utf8), into: $0) }
        #expect(out == whole)
    }

    /// One instance shared by threads: the reused working context is never used by two at once.
    @Test func concurrentCallersOnOneInstanceGetCorrectTags() async {
        let mac = HMACSHA256(key: Array("shared".utf8))
        let expected = (0..<64).map { mac.authenticate(Array("message \($0)".utf8)) }
        let wrong = await withTaskGroup(of: Int.self) { group in
            for _ in 0..<8 {
                group.addTask {
                    var bad = 0
                    for round in 0..<2_000
                    where mac.authenticate(Array("message \(round % 64)".utf8)) != expected[round % 64] {
                        bad += 1
                    }
                    return bad
                }
            }
            return await group.reduce(0, +)
        }
        #expect(wrong == 0)
    }
}
