/// Numbers as `attestctl status` prints them, without Foundation's formatters.
enum TextNumber {
    /// `x` with `digits` decimals, rounded half away from zero; "-" when not finite.
    static func fixed(_ x: Double, _ digits: Int) -> String {
        guard x.isFinite else { return "-" }
        var scale: Int64 = 1
        for _ in 0..<digits { scale *= 10 }
        let scaled = (abs(x) * Double(scale)).rounded()
        guard scaled < 9e15 else { return String(x) }
        let n = Int64(scaled)
        var text = String(n / scale)
        if digits > 0 {
            let fraction = String(n % scale)
            text += "." + String(repeating: "0", count: digits - fraction.count) + fraction
        }
        return (x < 0 && n != 0 ? "-" : "") + text
    }

    /// A count: a whole number as one, anything else with one decimal.
    static func count(_ x: Double) -> String {
        x.isFinite && x.rounded() == x && abs(x) < 9e15 ? String(Int64(x)) : fixed(x, 1)
    }

    static func percent(_ x: Double) -> String { fixed(x, 1) + "%" }

    /// Bytes in MiB, or GiB from 1 GiB, one decimal.
    static func bytes(_ x: Double) -> String {
        x >= Double(1 << 30) ? fixed(x / Double(1 << 30), 1) + " GiB" : fixed(x / Double(1 << 20), 1) + " MiB"
    }

    /// A latency: milliseconds below a second, else seconds; "> " when only a lower bound is known.
    static func duration(_ q: HistogramQuantile) -> String {
        (q.isLowerBound ? "> " : "") + (q.value < 1 ? fixed(q.value * 1000, 1) + " ms" : fixed(q.value, 2) + " s")
    }
}
