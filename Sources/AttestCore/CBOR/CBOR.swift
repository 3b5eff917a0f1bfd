/// Namespace for the CBOR (RFC 8949) subset App Attest uses.
///
/// Supported: unsigned and negative integers, byte and text strings, arrays, maps whose keys
/// are integers or text, and the simple values `false`, `true`, `null`, `undefined`.
/// Rejected: indefinite lengths, tags, floats, reserved additional-information values,
/// duplicate map keys, non-UTF-8 text, and anything over the named `Limits`.
public enum CBOR {
    /// Bounds on what the reader accepts, so that hostile input costs bounded work.
    public struct Limits: Sendable, Hashable {
        /// Deepest nesting of arrays and maps (the top-level item is depth 1).
        public var maxDepth: Int
        /// Most elements of one array, or entries of one map.
        public var maxContainerCount: Int
        /// Longest byte or text string, in bytes.
        public var maxStringLength: Int
        /// Most items in the whole decoded value.
        public var maxTotalItems: Int

        public init(maxDepth: Int = 8, maxContainerCount: Int = 64, maxStringLength: Int = 64 * 1024,
                    maxTotalItems: Int = 512) {
            self.maxDepth = maxDepth
            self.maxContainerCount = maxContainerCount
            self.maxStringLength = maxStringLength
            self.maxTotalItems = maxTotalItems
        }

        /// Limits sized for App Attest attestation objects and assertions.
        public static let appAttest = Limits()
    }
}
