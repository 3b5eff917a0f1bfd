@testable import FastCGI
import Glibc

/// A non-blocking listening unix socket in a fresh temporary directory, and clients for it:
/// the worker's side of a test, without a pool.
final class TestListener {
    let directory: String
    let path: String
    let fd: Int32

    init() {
        var template = Array("/tmp/attest-fcgi-test-XXXXXX".utf8CString)
        directory = template.withUnsafeMutableBufferPointer { String(cString: mkdtemp($0.baseAddress!)) }
        path = directory + "/s.sock"
        fd = socket(AF_UNIX,
                    Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        var address = Self.address(path)
        _ = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        listen(fd, 8)
    }

    deinit {
        close(fd)
        unlink(path)
        rmdir(directory)
    }

    /// A connected client; non-blocking when `nonBlocking` (for writing more than fits).
    func connect(nonBlocking: Bool = false) -> Int32 {
        let client = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        var address = Self.address(path)
        _ = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(client, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        if nonBlocking { _ = fcntl(client, F_SETFL, fcntl(client, F_GETFL) | O_NONBLOCK) }
        return client
    }

    /// Writes as much of `bytes` as the socket takes; the count written.
    @discardableResult
    static func write(_ fd: Int32, _ bytes: [UInt8]) -> Int {
        var written = 0
        while written < bytes.count {
            let n = bytes.withUnsafeBytes {
                send(fd, $0.baseAddress! + written, bytes.count - written, Int32(MSG_NOSIGNAL))
            }
            if n <= 0 { break }
            written += n
        }
        return written
    }

    /// Everything the worker sent, to EOF (blocking), and the errno that ended it (0 at EOF).
    static func readAll(_ fd: Int32) -> (bytes: [UInt8], errno: Int32) {
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK)
        var out = [UInt8]()
        var scratch = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = read(fd, &scratch, scratch.count)
            if n == 0 { return (out, 0) }
            if n < 0 { return (out, errno) }
            out += scratch[..<n]
        }
    }

    private static func address(_ path: String) -> sockaddr_un {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(path.utf8)) }
        return address
    }
}

/// Answers with the body's length, or 413 when the body was too large.
struct LengthResponder: Responder {
    var seen: [Request] = []
    mutating func respond(to request: Request) -> Response {
        seen.append(request)
        if request.bodyTooLarge { return .json(413, #"{"code":"payload_too_large"}"#) }
        return .json(200, #"{"length":\#(request.body.count)}"#)
    }
}
