import AttestCore

/// One RFC 7468 block: `-----BEGIN <label>-----`, base64 lines, `-----END <label>-----`.
/// Text outside blocks (comments) is ignored.
struct PEMBlock: Sendable {
    let label: String
    let der: [UInt8]

    /// Every block of `text`, in order; fails on an unterminated block or bad base64.
    static func all(in text: String) throws(AttestError) -> [PEMBlock] {
        var blocks = [PEMBlock]()
        var open: (label: String, lines: [String])? = nil
        for raw in text.split(whereSeparator: \.isNewline) {
            let line = String(raw.drop { $0 == " " || $0 == "\t" }.reversed()
                .drop { $0 == " " || $0 == "\t" || $0 == "\r" }.reversed())
            if let current = open {
                if line == "-----END \(current.label)-----" {
                    guard let der = Base64.decode(current.lines.joined()) else {
                        throw AttestError(.base64Invalid, "PEM block \(current.label) is not base64")
                    }
                    blocks.append(PEMBlock(label: current.label, der: der))
                    open = nil
                } else {
                    open!.lines.append(line)
                }
            } else if line.hasPrefix("-----BEGIN "), line.hasSuffix("-----"), line.count > 16 {
                open = (String(line.dropFirst(11).dropLast(5)), [])
            }
        }
        guard open == nil else { throw AttestError(.derMalformed, "PEM block \(open!.label) has no END line") }
        return blocks
    }
}
