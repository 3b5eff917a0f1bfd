/// The records a worker sends (FastCGI 1.0 §5.3, §5.5, §4.1, §4.2).
///
/// Every record's content is padded to a multiple of 8 bytes (the spec's recommendation).
/// ```
/// response           = STDOUT(id, ≤ 65535 bytes)… · STDOUT(id, empty) · END_REQUEST(id)
/// END_REQUEST content = appStatus u32 BE | protocolStatus u8 | 3 reserved
/// UNKNOWN_TYPE        = type u8 | 7 reserved                        (request id 0)
/// GET_VALUES_RESULT   = name-value pairs                            (request id 0)
/// ```
enum RecordWriter {
    /// The whole answer to request `requestID`: `stdout` (the CGI response) as `FCGI_STDOUT`
    /// records, the empty one that ends the stream, and `FCGI_END_REQUEST` (complete, status 0).
    static func response(_ stdout: [UInt8], requestID: UInt16) -> [UInt8] {
        let records = (stdout.count + RecordHeader.maxContentLength - 1) / RecordHeader.maxContentLength
        var out = [UInt8]()
        out.reserveCapacity(stdout.count + records * 16 + 32)
        stdout.withUnsafeBufferPointer { bytes in
            var offset = 0
            while offset < bytes.count {
                let count = min(RecordHeader.maxContentLength, bytes.count - offset)
                append(.stdout, requestID: requestID,
                       content: UnsafeBufferPointer(rebasing: bytes[offset..<offset + count]), to: &out)
                offset += count
            }
        }
        append(.stdout, requestID: requestID, content: [], to: &out)
        out += endRequest(requestID: requestID, status: .requestComplete)
        return out
    }

    /// `FCGI_END_REQUEST` with application status 0.
    static func endRequest(requestID: UInt16, status: ProtocolStatus) -> [UInt8] {
        var out = [UInt8]()
        append(.endRequest, requestID: requestID, content: [0, 0, 0, 0, status.rawValue, 0, 0, 0], to: &out)
        return out
    }

    /// `FCGI_UNKNOWN_TYPE`: the answer to a record type this worker does not know.
    static func unknownType(_ type: UInt8) -> [UInt8] {
        var out = [UInt8]()
        append(.unknownType, requestID: 0, content: [type, 0, 0, 0, 0, 0, 0, 0], to: &out)
        return out
    }

    /// `FCGI_GET_VALUES_RESULT` with `pairs`.
    static func getValuesResult(_ pairs: [(String, String)]) -> [UInt8] {
        var content = [UInt8]()
        for (name, value) in pairs { NameValuePairs.append(name: name.utf8, value: value.utf8, to: &content) }
        var out = [UInt8]()
        append(.getValuesResult, requestID: 0, content: content, to: &out)
        return out
    }

    /// Appends one record: header, `content` (at most 65535 bytes), zero padding to 8.
    static func append(_ type: RecordType, requestID: UInt16, content: some Collection<UInt8>, to out: inout [UInt8]) {
        let length = content.count
        precondition(length <= RecordHeader.maxContentLength)
        let padding = (8 - length % 8) % 8
        out += [RecordHeader.version, type.rawValue, UInt8(requestID >> 8), UInt8(requestID & 0xFF),
                UInt8(length >> 8), UInt8(length & 0xFF), UInt8(padding), 0]
        out.append(contentsOf: content)
        out.append(contentsOf: repeatElement(0, count: padding))
    }
}
