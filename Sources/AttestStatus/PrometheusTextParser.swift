/// Prometheus's text exposition format, version 0.0.4 (what `GET /metrics` answers with
/// `Content-Type: text/plain; version=0.0.4`), read line by line:
///
///     line      = blank* ( comment / sample )? blank*           ; "\n"-separated; empty lines skipped
///     comment   = "#" blank+ "HELP" blank+ name blank+ text     ; text escapes: \\ and \n
///               / "#" blank+ "TYPE" blank+ name blank+ type     ; counter|gauge|histogram|summary|untyped
///               / "#" anything                                  ; any other comment is ignored
///     sample    = name blank* labels? blank+ value ( blank+ timestamp )?
///     labels    = "{" blank* ( label ( blank* "," blank* label )* ( blank* "," )? )? blank* "}"
///     label     = labelname blank* "=" blank* '"' escaped '"'   ; escapes: \\  \"  \n
///     name      = [a-zA-Z_:] [a-zA-Z0-9_:]*
///     labelname = [a-zA-Z_] [a-zA-Z0-9_]*
///     value     = a decimal float / "NaN" / "+Inf" / "-Inf" / "Inf"
///     timestamp = an integer, milliseconds since the epoch
///     blank     = " " / "\t"
///
/// Refused, naming the line: anything else on a line, a second `# TYPE` or `# HELP` for one
/// name, a `# TYPE` after that name's samples, a label named twice, a series (name and labels)
/// given twice, a histogram bucket without a numeric `le`, more than `maximumLabels` labels,
/// a text longer than `maximumBytes`.
struct PrometheusTextParser {
    /// The longest text parsed (a metrics answer of AttestEdge is a few KiB per organization).
    static let maximumBytes = 64 << 20
    /// The most labels one sample may carry.
    static let maximumLabels = 64

    private let bytes: [UInt8]
    private var exposition = ScrapedMetrics()
    /// Every series seen, as name and sorted labels: a repeat is refused.
    private var seen = Set<String>()
    /// The names a `# TYPE` line has declared.
    private var declared = Set<String>()
    private var lineNumber = 0

    init(_ text: String) { bytes = Array(text.utf8) }

    mutating func parse() throws(StatusFailure) -> ScrapedMetrics {
        guard bytes.count <= Self.maximumBytes else {
            throw StatusFailure(.syntax, "the text is longer than \(Self.maximumBytes >> 20) MiB")
        }
        for line in bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false) {
            lineNumber += 1
            var cursor = line[...]
            if cursor.last == UInt8(ascii: "\r") { cursor = cursor.dropLast() }
            skipBlanks(&cursor)
            while let last = cursor.last, last == 0x20 || last == 0x09 { cursor = cursor.dropLast() }
            if cursor.isEmpty { continue }
            if cursor.first == UInt8(ascii: "#") {
                try comment(cursor.dropFirst())
            } else {
                try sample(cursor)
            }
        }
        return exposition
    }

    // MARK: - Comments

    private mutating func comment(_ text: ArraySlice<UInt8>) throws(StatusFailure) {
        var cursor = text
        guard skipBlanks(&cursor) > 0 else { return }
        let keyword = word(&cursor)
        guard keyword == "HELP" || keyword == "TYPE" else { return }
        guard skipBlanks(&cursor) > 0, let name = metricName(&cursor) else {
            throw failure("# \(keyword) needs a metric name")
        }
        let hadBlank = skipBlanks(&cursor) > 0
        if keyword == "HELP" {
            guard hadBlank || cursor.isEmpty else { throw failure("# HELP \(name): a blank must follow the name") }
            try help(name, cursor)
        } else {
            guard hadBlank, let type = ScrapedMetrics.MetricType(rawValue: word(&cursor)), cursor.isEmpty else {
                throw failure("# TYPE \(name) needs one of "
                                  + ScrapedMetrics.MetricType.allCases.map(\.rawValue).joined(separator: ", "))
            }
            try declare(name, type)
        }
    }

    private mutating func help(_ name: String, _ text: ArraySlice<UInt8>) throws(StatusFailure) {
        var out = [UInt8]()
        var escaped = false
        for byte in text {
            if escaped {
                switch byte {
                case UInt8(ascii: "\\"): out.append(byte)
                case UInt8(ascii: "n"): out.append(0x0A)
                default: throw failure("# HELP \(name): it may escape only \\\\ and \\n")
                }
                escaped = false
            } else if byte == UInt8(ascii: "\\") {
                escaped = true
            } else {
                out.append(byte)
            }
        }
        if escaped { throw failure("# HELP \(name) ends in a lone backslash") }
        let at = familyIndex(name, creating: .untyped)
        guard exposition.families[at].help == nil else { throw failure("a second # HELP for \(name)") }
        exposition.families[at].help = String(decoding: out, as: UTF8.self)
    }

    private mutating func declare(_ name: String, _ type: ScrapedMetrics.MetricType) throws(StatusFailure) {
        guard declared.insert(name).inserted else { throw failure("a second # TYPE for \(name)") }
        // Samples already written under this name, or under a name the type claims (x_bucket), are refused.
        for sampleName in [name] + Self.suffixes(type).map({ name + $0 }) {
            guard let at = exposition.index[sampleName], !exposition.families[at].samples.isEmpty else { continue }
            throw failure("# TYPE \(name) comes after samples of \(sampleName)")
        }
        let at = familyIndex(name, creating: type)
        exposition.families[at].type = type
    }

    // MARK: - Samples

    private mutating func sample(_ line: ArraySlice<UInt8>) throws(StatusFailure) {
        var cursor = line
        guard let name = metricName(&cursor) else {
            throw failure("a sample must start with a metric name ([a-zA-Z_:][a-zA-Z0-9_:]*)")
        }
        var blanks = skipBlanks(&cursor)
        var labels = [String: String]()
        if cursor.first == UInt8(ascii: "{") {
            cursor = cursor.dropFirst()
            labels = try labelSet(&cursor, of: name)
            blanks = skipBlanks(&cursor)
        }
        guard blanks > 0 else { throw failure("\(name): a blank and a value must follow") }
        let valueText = word(&cursor)
        guard let value = Self.value(valueText) else { throw failure("\(name): \"\(valueText)\" is not a value") }
        var timestamp: Int64? = nil
        if skipBlanks(&cursor) > 0 {
            let text = word(&cursor)
            guard let t = Int64(text) else { throw failure("\(name): \"\(text)\" is not a timestamp (milliseconds)") }
            timestamp = t
        }
        guard cursor.isEmpty else { throw failure("\(name): unexpected text after the value") }
        let sample = ScrapedMetrics.Sample(name: name, labels: labels, value: value, timestamp: timestamp)
        guard seen.insert(sample.seriesKey).inserted else { throw failure("a second sample of \(sample.seriesKey)") }
        let at = familyIndex(owner(of: name), creating: .untyped)
        if exposition.families[at].type == .histogram && name.hasSuffix("_bucket") {
            guard let le = labels["le"], let bound = Self.value(le), !bound.isNaN else {
                throw failure("\(name): a histogram bucket needs a numeric le label")
            }
        }
        exposition.families[at].samples.append(sample)
    }

    /// Reads `name="value",…}` (the `{` consumed).
    private mutating func labelSet(_ cursor: inout ArraySlice<UInt8>, of name: String)
        throws(StatusFailure) -> [String: String] {
        var labels = [String: String]()
        while true {
            skipBlanks(&cursor)
            if cursor.first == UInt8(ascii: "}") { cursor = cursor.dropFirst(); return labels }
            guard let label = labelName(&cursor) else { throw failure("\(name): a label name or } expected") }
            skipBlanks(&cursor)
            guard cursor.first == UInt8(ascii: "=") else { throw failure("\(name): = expected after \(label)") }
            cursor = cursor.dropFirst()
            skipBlanks(&cursor)
            guard cursor.first == UInt8(ascii: "\"") else { throw failure("\(name): \(label)'s value must be quoted") }
            cursor = cursor.dropFirst()
            let value = try quoted(&cursor, of: name)
            guard labels.updateValue(value, forKey: label) == nil else {
                throw failure("\(name): label \(label) twice")
            }
            guard labels.count <= Self.maximumLabels else {
                throw failure("\(name): more than \(Self.maximumLabels) labels")
            }
            skipBlanks(&cursor)
            if cursor.first == UInt8(ascii: ",") {
                cursor = cursor.dropFirst()
            } else if cursor.first != UInt8(ascii: "}") {
                throw failure("\(name): , or } expected after \(label)")
            }
        }
    }

    /// A label value up to its closing quote (consumed), escapes resolved.
    private func quoted(_ cursor: inout ArraySlice<UInt8>, of name: String) throws(StatusFailure) -> String {
        var out = [UInt8]()
        while let byte = cursor.popFirst() {
            switch byte {
            case UInt8(ascii: "\""):
                return String(decoding: out, as: UTF8.self)
            case UInt8(ascii: "\\"):
                switch cursor.popFirst() {
                case UInt8(ascii: "\\"): out.append(UInt8(ascii: "\\"))
                case UInt8(ascii: "\""): out.append(UInt8(ascii: "\""))
                case UInt8(ascii: "n"): out.append(0x0A)
                default: throw failure("\(name): a label value may escape only \\\\, \\\" and \\n")
                }
            default:
                out.append(byte)
            }
        }
        throw failure("\(name): a label value has no closing quote")
    }

    // MARK: - Families

    /// The family a sample name belongs to: `x` for `x_bucket`, `x_sum`, `x_count` when `x`
    /// is a histogram (or `x_sum`, `x_count` when a summary); else the name itself.
    private func owner(of name: String) -> String {
        for suffix in ["_bucket", "_sum", "_count"] where name.hasSuffix(suffix) {
            let base = String(name.dropLast(suffix.count))
            if let at = exposition.index[base], Self.suffixes(exposition.families[at].type).contains(suffix) {
                return base
            }
        }
        return name
    }

    private static func suffixes(_ type: ScrapedMetrics.MetricType) -> [String] {
        switch type {
        case .histogram: ["_bucket", "_sum", "_count"]
        case .summary: ["_sum", "_count"]
        case .counter, .gauge, .untyped: []
        }
    }

    private mutating func familyIndex(_ name: String, creating type: ScrapedMetrics.MetricType) -> Int {
        if let at = exposition.index[name] { return at }
        exposition.families.append(.init(name: name, type: type, help: nil, samples: []))
        exposition.index[name] = exposition.families.count - 1
        return exposition.families.count - 1
    }

    // MARK: - Tokens

    static func value(_ text: String) -> Double? {
        switch text {
        case "NaN": return .nan
        case "+Inf", "Inf": return .infinity
        case "-Inf": return -.infinity
        default:
            guard !text.isEmpty, text.utf8.allSatisfy({ Self.isDigit($0) || "+-.eE".utf8.contains($0) }) else {
                return nil
            }
            return Double(text)
        }
    }

    @discardableResult
    private func skipBlanks(_ cursor: inout ArraySlice<UInt8>) -> Int {
        var n = 0
        while let byte = cursor.first, byte == 0x20 || byte == 0x09 { cursor = cursor.dropFirst(); n += 1 }
        return n
    }

    /// Everything up to the next blank (or the end).
    private func word(_ cursor: inout ArraySlice<UInt8>) -> String {
        let end = cursor.firstIndex { $0 == 0x20 || $0 == 0x09 } ?? cursor.endIndex
        defer { cursor = cursor[end...] }
        return String(decoding: cursor[..<end], as: UTF8.self)
    }

    private func metricName(_ cursor: inout ArraySlice<UInt8>) -> String? {
        identifier(&cursor, colons: true)
    }

    private func labelName(_ cursor: inout ArraySlice<UInt8>) -> String? {
        identifier(&cursor, colons: false)
    }

    private func identifier(_ cursor: inout ArraySlice<UInt8>, colons: Bool) -> String? {
        func isStart(_ b: UInt8) -> Bool {
            Self.isLetter(b) || b == UInt8(ascii: "_") || (colons && b == UInt8(ascii: ":"))
        }
        guard let first = cursor.first, isStart(first) else { return nil }
        let end = cursor.firstIndex { !(isStart($0) || Self.isDigit($0)) } ?? cursor.endIndex
        defer { cursor = cursor[end...] }
        return String(decoding: cursor[..<end], as: UTF8.self)
    }

    private static func isLetter(_ b: UInt8) -> Bool { (0x41...0x5A).contains(b) || (0x61...0x7A).contains(b) }
    private static func isDigit(_ b: UInt8) -> Bool { (0x30...0x39).contains(b) }

    private func failure(_ message: String) -> StatusFailure {
        StatusFailure(.syntax, "line \(lineNumber): \(message)")
    }
}
