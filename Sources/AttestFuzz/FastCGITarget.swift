import AttestCore
import FastCGI
import Glibc

/// The FastCGI request path: the input is the byte stream nginx would send (records
/// `FCGI_BEGIN_REQUEST`, `FCGI_PARAMS`, `FCGI_STDIN`), written to a real unix socket and
/// served by the worker's record reader and request handling into the endpoints (routed by
/// `DOCUMENT_URI`), as a pool worker serves it.
///
/// Properties: whatever the stream, the worker answers or closes the connection, and what
/// it sends back is whole, well-formed records. A request it answers gets a documented
/// status and the JSON error envelope, sent as `FCGI_STDOUT` records, the empty one and a
/// complete `FCGI_END_REQUEST`; a stream it refuses gets no `FCGI_STDOUT` at all, only
/// management replies or an `FCGI_END_REQUEST`. The inputs that aborted Debian's libfcgi
/// 2.4.2 (a huge declared parameter length; kept as `known-libfcgi-*`) are ordinary inputs.
enum FastCGITarget {
    /// Inputs longer than this are skipped: the client writes before the server reads, so
    /// an input must fit in the socket's buffer.
    static let maxInput = 64 * 1024

    static func make() -> FuzzTarget {
        let service = FuzzService()
        let socketPath = service.path + "/fuzz.sock"
        let listenFD = setUp("listening socket") { try listen(at: socketPath) }
        var responder: any Responder = FuzzResponder(service: service)
        return FuzzTarget(name: "fastcgi",
                          summary: "FastCGI record stream over a unix socket into the endpoints") { input in
            guard input.count <= maxInput else { return }
            let client = connect(to: socketPath)
            defer { close(client) }
            var written = 0
            input.withUnsafeBytes { bytes in
                while written < bytes.count {
                    let n = write(client, bytes.baseAddress! + written, bytes.count - written)
                    if n <= 0 { break }
                    written += n
                }
            }
            shutdown(client, Int32(SHUT_WR))
            let response = SingleConnection.serve(listenFD: listenFD, bodyLimit: 65_536, responder: &responder)
            if let response {
                let id = (try? JSONParser.parse(response.body))?["requestId"]?.stringValue ?? ""
                FuzzService.checkAnswer(response, requestID: id)
            }
            checkReplies(readAll(client), answered: response)
        }
    }

    /// What the worker sent back, to its EOF (it has closed: `serve` returned).
    static func readAll(_ fd: Int32) -> [UInt8] {
        var out = [UInt8]()
        var scratch = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = read(fd, &scratch, scratch.count)
            if n <= 0 { return out }
            out += scratch[..<n]
        }
    }

    /// The reply properties (see the type's summary).
    static func checkReplies(_ bytes: [UInt8], answered response: Response?) {
        guard let records = FastCGIRecords.replies(bytes) else {
            fatalError("fuzz property violated: the worker sent malformed records (\(bytes.count) bytes)")
        }
        let stdout = records.filter { $0.type == 6 }
        guard let response else {
            expect(stdout.isEmpty, "a refused stream got FCGI_STDOUT")
            expect(records.allSatisfy { [3, 10, 11].contains($0.type) },
                   "a refused stream got record types \(records.map(\.type))")
            return
        }
        expect(records.count >= 2 && records[records.count - 1].type == 3 && records[records.count - 2].type == 6
               && records[records.count - 2].content.isEmpty,
               "the answer does not end with an empty STDOUT and END_REQUEST")
        expect(records[records.count - 1].content == [0, 0, 0, 0, 0, 0, 0, 0],
               "END_REQUEST is not complete with status 0")
        let cgi = stdout.flatMap(\.content)
        expect(cgi.starts(with: Array("Status: \(response.status) ".utf8)), "STDOUT does not start with the status")
        expect(cgi.suffix(response.body.count).elementsEqual(response.body), "STDOUT does not end with the body")
    }

    struct SocketError: Error { let what: String }

    /// A non-blocking listening unix socket at `path`.
    static func listen(at path: String) throws -> Int32 {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw SocketError(what: "socket") }
        var address = unixAddress(path)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard bound == 0, Glibc.listen(fd, 16) == 0 else { throw SocketError(what: "bind/listen \(path)") }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        return fd
    }

    /// A connected client socket; traps when the listener refuses (the backlog never fills:
    /// each connection is served before the next).
    static func connect(to path: String) -> Int32 {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var address = unixAddress(path)
        let status = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        expect(fd >= 0 && status == 0, "cannot connect to the fuzz socket (errno \(errno))")
        return fd
    }

    static func unixAddress(_ path: String) -> sockaddr_un {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            let bytes = Array(path.utf8.prefix(raw.count - 1))
            raw.copyBytes(from: bytes)
        }
        return address
    }
}
