/// Reads one FastCGI request (FastCGI 1.0, responder role) from bytes in any fragmentation and
/// turns it into events. Pure: no I/O and no clock, so tests and the fuzzer drive it directly.
///
/// What nginx sends on one connection (`fastcgi_pass`, no `fastcgi_keep_conn`):
/// ```
/// BEGIN_REQUEST(id, role 1 = RESPONDER, flags)       content: role u16 BE | flags u8 | 5 reserved
/// PARAMS(id)…  PARAMS(id, empty)                     name-value pairs (NameValuePairs), split anywhere
/// STDIN(id)…   STDIN(id, empty)                      the request body
/// ```
/// Also handled, at any point:
/// - a management record (request id 0): `GET_VALUES` → `.reply(GET_VALUES_RESULT)` with
///   `FCGI_MAX_CONNS`, `FCGI_MAX_REQS` (1) and `FCGI_MPXS_CONNS` (0); any other type →
///   `.reply(UNKNOWN_TYPE)`. A record type nobody defined gets `UNKNOWN_TYPE` too.
/// - a `BEGIN_REQUEST` with another id while a request is active → `.reply(END_REQUEST
///   CANT_MPX_CONN)`; a role other than responder → `.refused(END_REQUEST UNKNOWN_ROLE)`.
/// - `ABORT_REQUEST` → `.aborted`; records of inactive request ids and `DATA` are ignored.
///
/// Limits: the `PARAMS` stream holds at most `maxParamsBytes` (`paramsTooLarge` beyond), a
/// connection gets at most `maxReplies` replies, and the buffer keeps only the bytes not yet
/// turned into events (a caller that takes every event before it consumes more holds at most
/// one record, 8 + 65535 + 255 bytes, plus one read). Anything the protocol does not allow
/// throws `protocolViolation`; after a throw every `next()` throws the same error.
struct RequestParser {
    enum Event: Equatable {
        /// Send these bytes now and keep reading.
        case reply([UInt8])
        /// The request's params: `BEGIN_REQUEST` and the whole `PARAMS` stream are in.
        case params(Params)
        /// Body bytes (a slice of the parser's buffer: use it before the next `consume`).
        case stdin(ArraySlice<UInt8>)
        /// The empty `STDIN` record: the body is complete.
        case stdinEnd
        /// Send these bytes, then close: the request cannot be served.
        case refused([UInt8])
        /// The web server aborted the request.
        case aborted
    }

    private enum Phase { case awaitingBegin, params, stdin, done }

    static let maxParamsBytes = 64 * 1024
    static let maxReplies = 32
    static let responderRole: UInt16 = 1

    /// Reported as `FCGI_MAX_CONNS`.
    let maxConnections: Int
    private(set) var requestID: UInt16 = 0
    private var phase = Phase.awaitingBegin
    private var buffer: [UInt8] = []
    private var start = 0
    private var paramsBytes: [UInt8] = []
    private var replies = 0
    private var failure: FastCGIError?

    init(maxConnections: Int = 1) {
        self.maxConnections = maxConnections
    }

    /// Starts over for a new connection, keeping the buffers' capacity.
    mutating func reset() {
        requestID = 0
        phase = .awaitingBegin
        buffer.removeAll(keepingCapacity: true)
        start = 0
        paramsBytes.removeAll(keepingCapacity: true)
        replies = 0
        failure = nil
    }

    /// Adds bytes received from the peer.
    mutating func consume(_ bytes: UnsafeRawBufferPointer) {
        compact()
        buffer.append(contentsOf: bytes)
    }

    /// Adds bytes received from the peer.
    mutating func consume(_ bytes: some Collection<UInt8>) {
        compact()
        buffer.append(contentsOf: bytes)
    }

    /// The next event, or `nil` when the buffered bytes end inside a record.
    mutating func next() throws(FastCGIError) -> Event? {
        if let failure { throw failure }
        do {
            while let (header, content) = try nextRecord() {
                if let event = try handle(header, content) { return event }
            }
            return nil
        } catch {
            failure = error
            throw error
        }
    }

    private mutating func compact() {
        guard start > 0 else { return }
        if start == buffer.count {
            buffer.removeAll(keepingCapacity: true)
        } else {
            buffer.removeSubrange(..<start)
        }
        start = 0
    }

    /// The next whole record in the buffer. The version is checked as soon as the header is
    /// in, so a stream that is not FastCGI fails before its declared lengths are waited for.
    private mutating func nextRecord() throws(FastCGIError) -> (RecordHeader, ArraySlice<UInt8>)? {
        let available = buffer.count - start
        guard available >= RecordHeader.size else { return nil }
        guard buffer[start] == RecordHeader.version else {
            throw FastCGIError(.protocolViolation, "record version \(buffer[start]), expected 1")
        }
        let header = RecordHeader(buffer[start..<start + RecordHeader.size])
        guard available >= RecordHeader.size + header.bodyLength else { return nil }
        let contentStart = start + RecordHeader.size
        start = contentStart + header.bodyLength
        return (header, buffer[contentStart..<contentStart + header.contentLength])
    }

    private mutating func handle(_ header: RecordHeader, _ content: ArraySlice<UInt8>) throws(FastCGIError) -> Event? {
        guard let type = RecordType(rawValue: header.type) else {
            return try reply(RecordWriter.unknownType(header.type))
        }
        if header.requestID == 0 {
            return try reply(type == .getValues ? getValuesResult(content) : RecordWriter.unknownType(header.type))
        }
        switch type {
        case .beginRequest: return try begin(header.requestID, content)
        case .endRequest, .stdout, .stderr, .getValues, .getValuesResult, .unknownType:
            throw FastCGIError(.protocolViolation, "record type \(header.type) for request \(header.requestID) "
                                                       + "comes from an application, not a web server")
        case .abortRequest, .params, .stdin, .data: break
        }
        // Records of a request that is not the active one are ignored (§3.3).
        guard phase != .awaitingBegin, header.requestID == requestID else { return nil }
        switch type {
        case .abortRequest:
            phase = .done
            return .aborted
        case .params: return try params(content)
        case .stdin: return try stdin(content)
        default: return nil  // DATA: the filter role's second stream
        }
    }

    private mutating func begin(_ id: UInt16, _ content: ArraySlice<UInt8>) throws(FastCGIError) -> Event? {
        guard content.count == 8 else {
            throw FastCGIError(.protocolViolation, "BEGIN_REQUEST content is \(content.count) bytes, not 8")
        }
        guard phase == .awaitingBegin else {
            guard id != requestID else {
                throw FastCGIError(.protocolViolation, "a second BEGIN_REQUEST for request \(id)")
            }
            return try reply(RecordWriter.endRequest(requestID: id, status: .cantMultiplexConnection))
        }
        requestID = id
        let role = UInt16(content[content.startIndex]) << 8 | UInt16(content[content.startIndex + 1])
        guard role == Self.responderRole else {
            phase = .done
            return .refused(RecordWriter.endRequest(requestID: id, status: .unknownRole))
        }
        phase = .params
        return nil
    }

    private mutating func params(_ content: ArraySlice<UInt8>) throws(FastCGIError) -> Event? {
        guard phase == .params else { throw FastCGIError(.protocolViolation, "PARAMS after the params stream ended") }
        if content.isEmpty {
            phase = .stdin
            let params = try NameValuePairs.params(paramsBytes[...])
            paramsBytes.removeAll(keepingCapacity: true)
            return .params(params)
        }
        guard content.count <= Self.maxParamsBytes - paramsBytes.count else {
            throw FastCGIError(.paramsTooLarge, "the PARAMS stream exceeds \(Self.maxParamsBytes) bytes")
        }
        paramsBytes.append(contentsOf: content)
        return nil
    }

    private mutating func stdin(_ content: ArraySlice<UInt8>) throws(FastCGIError) -> Event? {
        switch phase {
        case .stdin:
            if !content.isEmpty { return .stdin(content) }
            phase = .done
            return .stdinEnd
        case .params: throw FastCGIError(.protocolViolation, "STDIN before the params stream ended")
        case .awaitingBegin, .done: throw FastCGIError(.protocolViolation, "STDIN after the body ended")
        }
    }

    private mutating func reply(_ bytes: [UInt8]) throws(FastCGIError) -> Event {
        replies += 1
        guard replies <= Self.maxReplies else {
            throw FastCGIError(.protocolViolation,
                               "more than \(Self.maxReplies) management records or refused requests")
        }
        return .reply(bytes)
    }

    /// The values asked for that this worker knows, each once (§4.1).
    private func getValuesResult(_ content: ArraySlice<UInt8>) throws(FastCGIError) -> [UInt8] {
        var asked = Set<String>()
        try NameValuePairs.decode(content) { name, _ in asked.insert(String(decoding: name, as: UTF8.self)) }
        let known = [("FCGI_MAX_CONNS", String(maxConnections)), ("FCGI_MAX_REQS", "1"), ("FCGI_MPXS_CONNS", "0")]
        return RecordWriter.getValuesResult(known.filter { asked.contains($0.0) })
    }
}
