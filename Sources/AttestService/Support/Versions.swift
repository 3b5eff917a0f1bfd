/// Version numbers as apps and operating systems write them ("17.4.1", "2.10", "2.1.3-beta"),
/// compared as versions: numerically part by part, missing parts as 0 ("2.10" > "2.9",
/// "2.1" == "2.1.0"), and a `-suffix` (pre-release) below the release it precedes
/// ("2.1.3-beta" < "2.1.3"; two suffixes compare part by part, numbers as numbers).
///
/// The one comparison of the risk model (minimum versions), the claims language and the
/// feature-flag conditions and release notes.
///
/// Grammar: `DIGITS ("." PART)* ("-" SUFFIX)?`, at most 64 bytes; a part is read up to its
/// first non-digit ("1.0b" reads as 1.0), as it always was for minimum versions.
public enum Versions {
    /// Longest version text (the release notes' limit, as hosted).
    public static let maximumBytes = 64

    /// -1, 0 or 1 as `a` is below, equal to or above `b`; `nil` when either is not a version
    /// (empty, longer than `maximumBytes`, or not starting with a digit).
    public static func compare(_ a: String, _ b: String) -> Int? {
        guard let x = Parsed(a), let y = Parsed(b) else { return nil }
        return compare(x, y)
    }

    /// `compare` of two versions parsed once (release notes and conditions parse their side
    /// ahead of the requests that compare it).
    static func compare(_ x: Parsed, _ y: Parsed) -> Int {
        for i in 0..<max(x.parts.count, y.parts.count) {
            let l = i < x.parts.count ? x.parts[i] : 0, r = i < y.parts.count ? y.parts[i] : 0
            if l != r { return l < r ? -1 : 1 }
        }
        switch (x.suffix, y.suffix) {
        case (nil, nil): return 0
        case (nil, _): return 1
        case (_, nil): return -1
        case let (s?, t?): return compareSuffixes(s, t)
        }
    }

    /// Whether `text` is a version this type compares.
    public static func isVersion(_ text: String) -> Bool { Parsed(text) != nil }

    /// A version read once: its numeric parts and its pre-release suffix. Read byte by byte
    /// (a flags read with rules on versions compares hundreds of them).
    struct Parsed: Sendable {
        var parts: [Int]
        var suffix: Substring?

        init?(_ text: String) {
            let u = text.utf8
            guard let first = u.first, u.count <= Versions.maximumBytes, first >= 0x30, first <= 0x39 else {
                return nil
            }
            var parts = [Int]()
            parts.reserveCapacity(4)
            var value = 0, digits = 0, reading = true
            var dash: String.Index?
            for i in u.indices {
                let c = u[i]
                if c == UInt8(ascii: "-") {
                    dash = i
                    break
                }
                if c == UInt8(ascii: ".") {
                    parts.append(value)
                    value = 0
                    digits = 0
                    reading = true
                } else if reading, c >= 0x30, c <= 0x39, digits < 18 {
                    // A part is its leading digits, at most 18 ("1.0b" is 1.0).
                    value = value * 10 + Int(c - 0x30)
                    digits += 1
                } else {
                    reading = false
                }
            }
            parts.append(value)
            self.parts = parts
            suffix = dash.map { text[text.index(after: $0)...] }
        }
    }

    private static func compareSuffixes(_ s: Substring, _ t: Substring) -> Int {
        let x = s.split(separator: "."), y = t.split(separator: ".")
        for i in 0..<max(x.count, y.count) {
            guard i < x.count else { return -1 }
            guard i < y.count else { return 1 }
            if let l = Int(x[i]), let r = Int(y[i]) {
                if l != r { return l < r ? -1 : 1 }
            } else if x[i] != y[i] {
                return x[i] < y[i] ? -1 : 1
            }
        }
        return 0
    }
}
