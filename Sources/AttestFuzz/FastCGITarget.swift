import AttestCore
import FastCGI
import Glibc

/// The FastCGI request path: the input is the byte stream nginx would send (records
/// `FCGI_BEGIN_REQUEST`, `FCGI_PARAMS`, `FCGI_STDIN`), written to a real unix socket and
/// served by libfcgi and the worker's request handling into the endpoints (routed by
/// `DOCUMENT_URI`), as a pool worker serves it.
///
/// Properties: every request that libfcgi accepts gets a documented status and the JSON
/// error envelope; libfcgi's own refusals close the connection without an answer.
enum FastCGITarget {
    /// Inputs longer than this are skipped: the client writes before the server reads, so
    /// an input must fit in the socket's buffer.
    static let maxInput = 64 * 1024
    /// Longest parameter name or value sent on: Debian's libfcgi (2.4.2-2+deb12u1) allocates
    /// a declared length before reading it, and aborts the process (`Malloc` assertion) when
    /// that allocation fails, so a peer on the socket can stop a worker with a 30-byte
    /// stream declaring gigabytes (found by this target three ways; the inputs are kept in
    /// the corpus as `known-libfcgi-*`). nginx never sends a parameter near this size (its
    /// header buffers are kilobytes) and only nginx's group may connect (socket mode 0660).
    /// Inputs that could declare more (`FastCGIRecords.largestParamLength`) are skipped.
    static let maxParamLength = 1 << 20

    static func make() -> FuzzTarget {
        let service = FuzzService()
        let socketPath = service.path + "/fuzz.sock"
        let listenFD = setUp("listening socket") { try listen(at: socketPath) }
        var responder: any Responder = FuzzResponder(service: service)
        return FuzzTarget(name: "fastcgi", summary: "FastCGI record stream over a unix socket into the endpoints") { input in
            guard input.count <= maxInput, FastCGIRecords.largestParamLength(input) <= maxParamLength else { return }
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
            var scratch = [UInt8](repeating: 0, count: 4096)
            while read(client, &scratch, scratch.count) > 0 {}
        }
    }

    struct SocketError: Error { let what: String }

    /// A non-blocking listening unix socket at `path`.
    static func listen(at path: String) throws -> Int32 {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw SocketError(what: "socket") }
        var address = unixAddress(path)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
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
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
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
