import AttestCore
import Testing

/// `vectors/timestamp.json`.
struct TimestampVectors: Decodable {
    struct Parse: Decodable, CustomTestStringConvertible {
        let id: String, text: String, seconds: Int64?, iso8601: String?
        var testDescription: String { id }
    }
    let parse: [Parse]

    static let file: TimestampVectors = Vectors.loadOrFail("timestamp.json")
}

/// ISO 8601 in and out: offsets, fractions truncated, invalid dates refused, no fractions written.
@Suite struct TimestampTests {
    @Test(arguments: TimestampVectors.file.parse)
    func parsesOrRefuses(_ v: TimestampVectors.Parse) {
        let parsed = Timestamp(iso8601: v.text)
        #expect(parsed?.seconds == v.seconds, "vector \(v.id): \(v.seconds.map { "is \($0) s" } ?? "is refused")")
        if let iso = v.iso8601 {
            #expect(parsed?.iso8601 == iso, "vector \(v.id) is written back as \(iso)")
        }
    }

    @Test func outputRoundTripsAndHasNoFraction() {
        var rng = SystemRandomNumberGenerator()
        for _ in 0..<1_000 {
            let t = Timestamp(seconds: Int64.random(in: -62_135_596_800...253_402_300_799, using: &rng))
            let text = t.iso8601
            #expect(Timestamp(iso8601: text) == t, "\(t.seconds) s round-trips through \(text)")
            #expect(text.utf8.count == 20 && !text.contains("."), "\(text) is YYYY-MM-DDTHH:MM:SSZ without a fraction")
        }
    }

    @Test func civilFieldsAndMonthKey() {
        let t = Timestamp(seconds: 1_776_772_800)
        let c = t.civil
        #expect([c.year, c.month, c.day, c.hour, c.minute, c.second] == [2026, 4, 21, 12, 0, 0], "civil UTC fields")
        #expect(Timestamp(civil: t.civil) == t, "civil back to seconds")
        #expect(t.monthKey == "2026-04", "monthKey is YYYY-MM")
        #expect(Timestamp(seconds: -1).monthKey == "1969-12", "before the epoch")
    }

    @Test func arithmeticAndOrder() {
        let t = Timestamp(seconds: 100)
        #expect((t + 5).seconds == 105 && (t - 5).seconds == 95, "adds and subtracts seconds")
        #expect(t - 1 < t && t < t + 1, "ordered by seconds")
        #expect(t.description == t.iso8601, "description is the ISO form")
    }

    /// Fuzz regression (challenge target): an authentic challenge whose expiry is near
    /// Int64.min made `civil` overflow while the expired-challenge log line was written.
    @Test func everyInt64HasACalendarDate() {
        for seconds in [Int64.min, Int64.min + 1, Int64.min + 86_399, -86_401, -86_400, -1, 0, Int64.max - 86_399,
                        Int64.max] {
            let c = Timestamp(seconds: seconds).civil
            #expect((0..<24).contains(c.hour) && (0..<60).contains(c.minute) && (0..<60).contains(c.second),
                    "\(seconds) s has a time of day")
            #expect(!Timestamp(seconds: seconds).iso8601.isEmpty, "\(seconds) s prints")
        }
        let c = Timestamp(seconds: -86_401).civil
        #expect([c.year, c.month, c.day, c.hour, c.minute, c.second] == [1969, 12, 30, 23, 59, 59],
                "floor division before the epoch")
    }

    @Test func writingIntoABufferMatchesTheTextOrWritesNothingOutsideYearsZeroTo9999() {
        var buffer = [UInt8](repeating: 0xEE, count: 24)
        for seconds: Int64 in [0, 1_780_315_200, 253_402_300_799, -62_167_219_200] {
            let t = Timestamp(seconds: seconds)
            let n = buffer.withUnsafeMutableBufferPointer { t.writeISO8601(into: $0) }
            #expect(n == 20 && String(decoding: buffer[0..<20], as: UTF8.self) == t.iso8601, "\(t.iso8601)")
            #expect(buffer[20...].allSatisfy { $0 == 0xEE }, "nothing past the 20 bytes")
        }
        buffer = [UInt8](repeating: 0xEE, count: 24)
        for seconds: Int64 in [253_402_300_800, -62_167_219_201, .max, .min] {
            #expect(buffer.withUnsafeMutableBufferPointer { Timestamp(seconds: seconds).writeISO8601(into: $0) } == 0)
        }
        #expect(buffer.allSatisfy { $0 == 0xEE }, "out of range: nothing written")
    }
}
