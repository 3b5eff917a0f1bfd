#if canImport(Glibc)
import Glibc
#endif

/// Writing to standard output and standard error without Foundation.
public enum Output {
    public static func out(_ text: String) {
        var line = text
        if !line.hasSuffix("\n") { line += "\n" }
        write(fd: 1, line)
    }

    public static func err(_ text: String) {
        var line = text
        if !line.hasSuffix("\n") { line += "\n" }
        write(fd: 2, line)
    }

    /// Writes all of `text` to a file descriptor (unbuffered, so lines from several
    /// processes do not interleave mid-line).
    public static func write(fd: Int32, _ text: String) {
        var bytes = Array(text.utf8)
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeMutableBytes { Glibc.write(fd, $0.baseAddress! + offset, $0.count - offset) }
            if n <= 0 { if errno == EINTR { continue }; return }
            offset += n
        }
    }

    /// Whether standard output is a terminal (progress lines and colours only then).
    public static var isTerminal: Bool { isatty(1) == 1 }

    /// A progress line on standard error, redrawn in place, only when standard error is a
    /// terminal (logs and pipes get nothing). `fraction` nil: a step with no measure yet.
    public static func progress(_ what: String, _ fraction: Double?) {
        guard isatty(2) == 1 else { return }
        let percent = fraction.map { " \(Int(($0 * 100).rounded()))%" } ?? ""
        write(fd: 2, "\r\u{1B}[K" + what + percent)
    }

    /// Ends a progress line (a newline, when one was drawn).
    public static func progressDone() {
        if isatty(2) == 1 { write(fd: 2, "\r\u{1B}[K") }
    }

    /// Pads `text` on the right to `width` characters, for aligned tables.
    public static func pad(_ text: String, _ width: Int) -> String {
        text.count >= width ? text : text + String(repeating: " ", count: width - text.count)
    }

    /// Renders rows as an aligned table with a header.
    public static func table(_ header: [String], _ rows: [[String]]) -> String {
        var widths = header.map(\.count)
        for row in rows {
            for (i, cell) in row.enumerated() where i < widths.count { widths[i] = max(widths[i], cell.count) }
        }
        func line(_ cells: [String]) -> String {
            cells.enumerated().map { i, c in i == cells.count - 1 ? c : pad(c, widths[i]) }.joined(separator: "  ")
        }
        return ([line(header)] + rows.map(line)).joined(separator: "\n")
    }
}
