/// What the audit log keeps of a text it is given (names, targets, details): one line a
/// terminal or a page shows as it is. Line breaks and tabs become spaces; other control
/// characters (C0, DEL, C1: ESC starts a terminal's escape sequences) and the characters that
/// reorder text (bidirectional embeddings, overrides and isolates) become U+FFFD. Anything an
/// API caller or a device wrote can reach a detail (a ticket reply, a rule's name), so the log
/// cleans it where it is stored, once, not at each place it is shown.
public enum AuditText {
    /// A control character or one that reorders the text around it.
    public static func isUnsafe(_ s: Unicode.Scalar) -> Bool {
        switch s.value {
        case 0x00...0x1F, 0x7F...0x9F, 0x200E, 0x200F, 0x202A...0x202E, 0x2066...0x2069: return true
        default: return false
        }
    }

    /// `text` made safe to show on one line.
    public static func clean(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: isUnsafe) else { return text }
        var out = String.UnicodeScalarView()
        for s in text.unicodeScalars {
            switch s {
            case "\n", "\r", "\t": out.append(" ")
            case _ where isUnsafe(s): out.append("\u{FFFD}")
            default: out.append(s)
            }
        }
        return String(out)
    }
}
