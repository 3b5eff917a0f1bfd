/// `attestctl status --watch` on a terminal: each frame is drawn over the last in place, with
/// no alternate screen (tmux, screen and ssh keep it as drawn, and the last frame stays on the
/// terminal after Ctrl-C).
///
///     frame = ESC "[H"                      ; cursor to the top left
///             *( line ESC "[K" LF )         ; each line, then erase what an older, longer line left
///             ESC "[J"                      ; erase the rest of the screen (older, taller frames)
public enum StatusScreen {
    public static func frame(_ text: String) -> String {
        "\u{1B}[H" + text.split(separator: "\n", omittingEmptySubsequences: false).map { $0 + "\u{1B}[K\n" }.joined()
            + "\u{1B}[J"
    }
}
