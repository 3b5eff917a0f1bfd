/// A point in time in whole seconds since 1970-01-01T00:00:00Z (UTC, no leap seconds).
///
/// Nothing in the core reads the clock: callers pass a `Timestamp`. Its text form is ISO 8601
/// without fractional seconds (`2026-04-21T12:00:00Z`), the only form the iOS SDK's default
/// `ISO8601DateFormatter` accepts.
public struct Timestamp: Hashable, Comparable, Sendable, CustomStringConvertible {
    public var seconds: Int64

    public init(seconds: Int64) { self.seconds = seconds }

    public static func < (a: Timestamp, b: Timestamp) -> Bool { a.seconds < b.seconds }
    public static func + (a: Timestamp, s: Int64) -> Timestamp { Timestamp(seconds: a.seconds + s) }
    public static func - (a: Timestamp, s: Int64) -> Timestamp { Timestamp(seconds: a.seconds - s) }

    /// Calendar fields in UTC.
    public struct Civil: Hashable, Sendable {
        public var year: Int, month: Int, day: Int, hour: Int, minute: Int, second: Int
    }

    public init(civil c: Civil) {
        seconds = Timestamp.daysFromCivil(c.year, c.month, c.day) * 86_400
            + Int64(c.hour * 3600 + c.minute * 60 + c.second)
    }

    public var civil: Civil {
        // Floor division without intermediate values: any Int64, Int64.min included, has a
        // calendar date (years far outside 0...9999 print without padding, see `iso8601`).
        let quotient = seconds / 86_400, remainder = seconds % 86_400
        let days = remainder < 0 ? quotient - 1 : quotient
        let rem = Int(remainder < 0 ? remainder + 86_400 : remainder)
        let (y, m, d) = Timestamp.civilFromDays(days)
        return Civil(year: y, month: m, day: d, hour: rem / 3600, minute: rem / 60 % 60, second: rem % 60)
    }

    /// `YYYY-MM` of the UTC calendar month, the key of monthly usage.
    public var monthKey: String {
        let c = civil
        return "\(c.year)-\(c.month < 10 ? "0" : "")\(c.month)"
    }

    /// ISO 8601 UTC without fractional seconds (`YYYY-MM-DDTHH:MM:SSZ`; years 0…9999).
    public var iso8601: String {
        let c = civil
        guard (0...9999).contains(c.year) else {
            return "\(c.year)-\(c.month)-\(c.day)T\(c.hour):\(c.minute):\(c.second)Z"
        }
        return String(unsafeUninitializedCapacity: 20) { out in Self.write(c, into: out) }
    }

    /// Writes `iso8601`'s 20 bytes at the start of `out` and returns 20; writes nothing and
    /// returns 0 for a year outside 0…9999 (use `iso8601`).
    public func writeISO8601(into out: UnsafeMutableBufferPointer<UInt8>) -> Int {
        let c = civil
        guard (0...9999).contains(c.year) else { return 0 }
        return Self.write(c, into: out)
    }

    private static func write(_ c: Civil, into out: UnsafeMutableBufferPointer<UInt8>) -> Int {
        precondition(out.count >= 20)
        func put(_ v: Int, _ at: Int, _ digits: Int) {
            var v = v
            for i in stride(from: at + digits - 1, through: at, by: -1) { out[i] = UInt8(48 + v % 10); v /= 10 }
        }
        put(c.year, 0, 4); out[4] = 0x2D; put(c.month, 5, 2); out[7] = 0x2D; put(c.day, 8, 2); out[10] = 0x54
        put(c.hour, 11, 2); out[13] = 0x3A; put(c.minute, 14, 2); out[16] = 0x3A; put(c.second, 17, 2); out[19] = 0x5A
        return 20
    }

    public var description: String { iso8601 }

    /// Parses `YYYY-MM-DDTHH:MM:SS[.fff](Z|±HH:MM)`; fractions are truncated. `nil` otherwise.
    public init?(iso8601 text: String) {
        let u = Array(text.utf8)
        guard u.count >= 20 else { return nil }
        func num(_ from: Int, _ len: Int) -> Int? {
            var v = 0
            for i in from..<(from + len) {
                guard i < u.count, u[i] >= 0x30, u[i] <= 0x39 else { return nil }
                v = v * 10 + Int(u[i] - 0x30)
            }
            return v
        }
        guard let year = num(0, 4), u[4] == 0x2D, let month = num(5, 2), u[7] == 0x2D,
              let day = num(8, 2), u[10] == 0x54 || u[10] == 0x74, let hour = num(11, 2), u[13] == 0x3A,
              let minute = num(14, 2), u[16] == 0x3A, let second = num(17, 2) else { return nil }
        guard (1...12).contains(month), day >= 1, day <= Timestamp.daysIn(year, month),
              hour < 24, minute < 60, second < 60 else { return nil }
        var i = 19
        if i < u.count, u[i] == 0x2E {
            i += 1
            let start = i
            while i < u.count, u[i] >= 0x30, u[i] <= 0x39 { i += 1 }
            guard i > start else { return nil }
        }
        guard i < u.count else { return nil }
        var offset = 0
        if u[i] == 0x5A || u[i] == 0x7A {
            i += 1
        } else if u[i] == 0x2B || u[i] == 0x2D {
            guard let oh = num(i + 1, 2), u.count > i + 3, u[i + 3] == 0x3A, let om = num(i + 4, 2),
                  oh < 24, om < 60 else { return nil }
            offset = (oh * 3600 + om * 60) * (u[i] == 0x2B ? 1 : -1)
            i += 6
        } else {
            return nil
        }
        guard i == u.count else { return nil }
        let civil = Civil(year: year, month: month, day: day, hour: hour, minute: minute, second: second)
        self.init(seconds: Timestamp(civil: civil).seconds - Int64(offset))
    }

    /// Days in a month of the proleptic Gregorian calendar.
    public static func daysInMonth(year: Int, month: Int) -> Int { daysIn(year, month) }

    static func isLeap(_ y: Int) -> Bool { y % 4 == 0 && (y % 100 != 0 || y % 400 == 0) }

    static func daysIn(_ y: Int, _ m: Int) -> Int {
        switch m {
        case 2: return isLeap(y) ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    /// Days since the epoch of a proleptic Gregorian date (Howard Hinnant's algorithm).
    static func daysFromCivil(_ year: Int, _ month: Int, _ day: Int) -> Int64 {
        let y = Int64(month <= 2 ? year - 1 : year)
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let mp = Int64((month + 9) % 12)
        let doy = (153 * mp + 2) / 5 + Int64(day) - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    static func civilFromDays(_ days: Int64) -> (Int, Int, Int) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp < 10 ? mp + 3 : mp - 9
        let y = yoe + era * 400 + (m <= 2 ? 1 : 0)
        return (Int(y), Int(m), Int(d))
    }
}
