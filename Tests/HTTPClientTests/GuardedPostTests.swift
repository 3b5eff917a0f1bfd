import HTTPClient
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The SSRF guard at connect time (`GuardedPost`): the address curl is about to connect to is
/// judged, whatever the URL said; a refused address fails the attempt only when no other
/// address of the host answered. Against a one-shot HTTP server on 127.0.0.1.
@Suite struct GuardedPostTests {
    /// Answers one connection with `200 ok` on 127.0.0.1 (an ephemeral port), on a thread.
    final class OneShotServer: @unchecked Sendable {
        let fd: Int32
        let port: Int
        private var thread = pthread_t()

        init() throws {
            let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let bound = withUnsafeMutablePointer(to: &address) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { p -> Int32 in
                    guard bind(listener, p, length) == 0, listen(listener, 4) == 0 else { return -1 }
                    return getsockname(listener, p, &length)
                }
            }
            guard bound == 0 else { close(listener); throw ServerError() }
            fd = listener
            port = Int(UInt16(bigEndian: address.sin_port))
            let box = Unmanaged.passRetained(self).toOpaque()
            pthread_create(&thread, nil, { raw in
                let server = Unmanaged<OneShotServer>.fromOpaque(raw!).takeRetainedValue()
                let client = accept(server.fd, nil, nil)
                guard client >= 0 else { return nil }
                var buffer = [UInt8](repeating: 0, count: 4096)
                var request = [UInt8]()
                // Read the head and the 2-byte body (`{}`).
                while !request.isEmpty ? !(String(decoding: request, as: UTF8.self).contains("\r\n\r\n{}")) : true {
                    let n = read(client, &buffer, buffer.count)
                    guard n > 0 else { break }
                    request += buffer[..<n]
                }
                let answer = Array("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok".utf8)
                _ = write(client, answer, answer.count)
                close(client)
                return nil
            }, box)
        }

        func stop() {
            shutdown(fd, Int32(SHUT_RDWR))
            pthread_join(thread, nil)
            close(fd)
        }
    }

    struct ServerError: Error {}

    static let refuseSecondLoopback: GuardedPost.AddressCheck = {
        $0 == [127, 0, 0, 2] ? "127.0.0.2 is not allowed" : nil
    }

    @Test func anAnswerFromAnAllowedAddressStandsAfterAnotherAddressWasRefused() throws {
        let server = try OneShotServer()
        defer { server.stop() }
        // The name's first address is refused by the guard, the second is the server.
        let post = GuardedPost(check: Self.refuseSecondLoopback, allowPlainHTTP: true,
                               resolve: ["two.test:\(server.port):127.0.0.2,127.0.0.1"])
        let result = post.post("http://two.test:\(server.port)/hook", headers: [], body: Array("{}".utf8),
                               timeoutSeconds: 5)
        #expect(result.status == 200 && result.error.isEmpty, "\(result.status) \(result.error)")
        #expect(result.body == Array("ok".utf8))
    }

    @Test func aHostWhoseOnlyAddressIsRefusedFailsWithTheGuardsReason() throws {
        let server = try OneShotServer()
        defer { server.stop() }
        let post = GuardedPost(check: { $0.count == 4 && $0[0] == 127 ? "loopback" : nil }, allowPlainHTTP: true,
                               resolve: ["one.test:\(server.port):127.0.0.1"])
        let result = post.post("http://one.test:\(server.port)/hook", headers: [], body: Array("{}".utf8),
                               timeoutSeconds: 5)
        #expect(result.status == 0)
        #expect(result.error == "destination refused: loopback")
    }

    /// What the guard judged, kept by a check (which must be `@Sendable`).
    final class Seen: @unchecked Sendable {
        var addresses: [[UInt8]] = []
    }

    /// The check sees an IPv6 address whole: it used to be read from a 16-byte copy of curl's
    /// `struct sockaddr`, so bytes 8–15 of the address (an IPv4-mapped, NAT64 or Teredo
    /// address's IPv4 part) were whatever lay beyond the copy, and `::1` was judged as `::`.
    @Test func anIPv6AddressIsJudgedWhole() throws {
        let seen = Seen()
        let post = GuardedPost(check: { seen.addresses.append($0); return "refused" }, allowPlainHTTP: true)
        for literal in ["::1", "64:ff9b::7f00:1", "2001:db8:1:2:3:4:5:6"] {
            seen.addresses = []
            let result = post.post("http://[\(literal)]:9/hook", headers: [], body: Array("{}".utf8), timeoutSeconds: 5)
            var expected = in6_addr()
            #expect(inet_pton(AF_INET6, literal, &expected) == 1)
            #expect(seen.addresses == [withUnsafeBytes(of: &expected) { Array($0) }], "\(literal): \(seen.addresses)")
            #expect(result.status == 0 && result.error == "destination refused: refused", "\(literal): \(result.error)")
        }
    }
}
