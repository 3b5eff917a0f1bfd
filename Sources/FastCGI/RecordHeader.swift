/// The 8-byte header in front of every FastCGI record (FastCGI 1.0 §3.3).
///
/// ```
/// version u8 (1) | type u8 | requestId u16 BE | contentLength u16 BE | paddingLength u8 | reserved u8
/// content   contentLength bytes
/// padding   paddingLength bytes (ignored)
/// ```
/// Request id 0 marks a management record (§3.3, §4); any other id names a request.
struct RecordHeader: Equatable {
    static let size = 8
    static let version: UInt8 = 1
    /// The largest content one record carries.
    static let maxContentLength = 65_535

    var type: UInt8
    var requestID: UInt16
    var contentLength: Int
    var paddingLength: Int

    /// Content and padding: the bytes that follow the header.
    var bodyLength: Int { contentLength + paddingLength }

    /// Reads a header from the first 8 bytes of `bytes` (which must hold that many); the
    /// version byte is not checked here.
    init(_ bytes: ArraySlice<UInt8>) {
        let i = bytes.startIndex
        type = bytes[i + 1]
        requestID = UInt16(bytes[i + 2]) << 8 | UInt16(bytes[i + 3])
        contentLength = Int(bytes[i + 4]) << 8 | Int(bytes[i + 5])
        paddingLength = Int(bytes[i + 6])
    }

    init(type: UInt8, requestID: UInt16, contentLength: Int, paddingLength: Int) {
        self.type = type
        self.requestID = requestID
        self.contentLength = contentLength
        self.paddingLength = paddingLength
    }
}

/// Record types (§8). The web server sends `beginRequest`, `abortRequest`, `params`,
/// `stdin`, `data` and `getValues`; the application sends the rest.
enum RecordType: UInt8 {
    case beginRequest = 1
    case abortRequest = 2
    case endRequest = 3
    case params = 4
    case stdin = 5
    case stdout = 6
    case stderr = 7
    case data = 8
    case getValues = 9
    case getValuesResult = 10
    case unknownType = 11
}

/// `FCGI_END_REQUEST`'s `protocolStatus` (§5.5).
enum ProtocolStatus: UInt8 {
    case requestComplete = 0
    case cantMultiplexConnection = 1
    case overloaded = 2
    case unknownRole = 3
}
