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

    private struct Parsed {
        var parts: [Int]
        var suffix: Substring?

        init?(_ text: String) {
            guard !text.isEmpty, text.utf8.count <= Versions.maximumBytes, text.first!.isASCII,
                  text.first!.isNumber else { return nil }
            let dash = text.firstIndex(of: "-")
            let core = dash.map { text[..<$0] } ?? text[...]
            suffix = dash.map { text[text.index(after: $0)...] }
            parts = core.split(separator: ".", omittingEmptySubsequences: false).map {
                Int($0.prefix { $0.isASCII && $0.isNumber }.prefix(18)) ?? 0
            }
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
