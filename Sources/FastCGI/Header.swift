/// One HTTP response header, written as `name: value\r\n`.
///
/// Names and values are written as given, except that CR and LF are replaced by spaces so a
/// value can never start a second header or end the header block.
public struct Header: Sendable, Hashable {
    public var name: String
    public var value: String

    public init(_ name: String, _ value: String) {
        self.name = name
        self.value = value
    }
}
