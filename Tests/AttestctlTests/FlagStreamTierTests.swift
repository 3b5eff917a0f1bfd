import Foundation
import SupervisorTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// What attestctl must tell this host's flag-stream publisher socket (found by the review of
/// issue 41). A fake publisher (`FakePublisher`) stands where nginx's
/// `DATA/run/flags-publish.sock` is and keeps, like nchan's buffer of one, the last body POSTed
/// to each channel; GET channel info answers 404 (nothing stored) and DELETE 200.
@Suite("attestctl: what the flag stream is told", .serialized) struct FlagStreamTierTests {
    /// A unix-socket HTTP/1.1 server that records each request (method, path, body).
    final class FakePublisher: @unchecked Sendable {
        let path: String
        private let fd: Int32
        private let lock = NSLock()
        private var requests: [(method: String, path: String, body: String)] = []

        init(path: String) throws {
            self.path = path
            unlink(path)
            fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
            var address = sockaddr_un()
            address.sun_family = sa_family_t(AF_UNIX)
            let bytes = Array(path.utf8)
            withUnsafeMutableBytes(of: &address.sun_path) { raw in
                raw.copyBytes(from: bytes)
                raw[bytes.count] = 0
            }
            let bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
                }
            }
            guard fd >= 0, bound == 0, listen(fd, 16) == 0 else {
                throw CocoaError(.fileWriteUnknown, userInfo: ["why": "bind \(path): \(errno)"])
            }
            let listener = fd
            Thread { [weak self] in
                while true {
                    let client = accept(listener, nil, nil)
                    guard client >= 0 else { return }
                    self?.serve(client)
                    close(client)
                }
            }.start()
        }

        deinit {
            shutdown(fd, Int32(SHUT_RDWR))
            close(fd)
            unlink(path)
        }

        private func serve(_ client: Int32) {
            var data: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 4096)
            var headerEnd: Int?
            var length = 0
            while true {
                if let end = headerEnd, data.count >= end + length { break }
                let n = buffer.withUnsafeMutableBytes { recv(client, $0.baseAddress, $0.count, 0) }
                guard n > 0 else { break }
                data += buffer[0..<n]
                if headerEnd == nil, let r = data.firstRange(of: Array("\r\n\r\n".utf8)) {
                    headerEnd = r.upperBound
                    let head = String(decoding: data[..<r.lowerBound], as: UTF8.self).lowercased()
                    for line in head.split(separator: "\r\n") where line.hasPrefix("content-length:") {
                        length = Int(line.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)) ?? 0
                    }
                }
            }
            let end = headerEnd ?? data.count
            let head = String(decoding: data[..<end], as: UTF8.self)
            let first = head.split(separator: " ", maxSplits: 2)
            let method = first.count > 0 ? String(first[0]) : ""
            let target = first.count > 1 ? String(first[1]) : ""
            let body = String(decoding: data[end...], as: UTF8.self)
            lock.lock()
            requests.append((method, target, body))
            lock.unlock()
            let status = method == "POST" ? "201 Created" : method == "DELETE" ? "200 OK" : "404 Not Found"
            let answer = "HTTP/1.1 \(status)\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
            _ = answer.withCString { send(client, $0, strlen($0), Int32(MSG_NOSIGNAL)) }
        }

        var recorded: [(method: String, path: String, body: String)] {
            lock.lock()
            defer { lock.unlock() }
            return requests
        }

        /// What nchan would now hold for `channel`: the last body POSTed to it.
        func stored(_ channel: String) -> String? {
            recorded.last { $0.method == "POST" && $0.path == "/pub/" + channel }?.body
        }
    }

    static let app = FlagsCommandTests.app

    /// The flag keys of a `{"flags":{…}}` payload.
    static func keys(_ body: String?) -> Set<String> {
        guard let body, let top = try? JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any],
              let flags = top["flags"] as? [String: Any] else { return [] }
        return Set(flags.keys)
    }

    /// `attestctl org set --tier` changes what the flags pool serves (`CompiledFeatureFlags`
    /// keeps the first `FeatureFlagLimits.flags` flags and `environments` environments of the
    /// tier; `FeatureFlagsCache` recompiles on a tier change), but nothing republishes the
    /// stream's channels: nchan keeps the message published under the old tier, so every open
    /// stream, and every new one (the auth's prime sees a message newer than the app's
    /// `changedAt`, which a tier change does not move), keeps getting the flags the free tier
    /// no longer serves. Here a pro organization's 12 flags go to free (10 flags): after the
    /// downgrade the production channel must hold what `GET /api/v1/flags` serves.
    @Test("a tier downgrade republishes the stream: its channel holds only the flags the new tier serves")
    func tierDowngradeRepublishesTheStream() throws {
        let cli = try FlagsCommandTests.CLI()
        let a = ["--app", Self.app]
        let keys = (1...12).map { String(format: "f%02d", $0) }
        for key in keys {
            _ = try cli.ok(["flags", "add"] + a + ["--key", key, "--type", "bool", "--value", "true"])
        }
        let publisher = try FakePublisher(path: cli.data + "/run/flags-publish.sock")
        _ = try cli.ok(["flags", "set"] + a + ["--key", "f01", "--value", "false"])
        let channel = Self.app + "/production"
        #expect(Self.keys(publisher.stored(channel)) == Set(keys), "published under pro: \(publisher.recorded)")
        _ = try cli.ok(["org", "set", "acme", "--tier", "free"])
        // What the pool now serves: the free tier's first 10 flags by key.
        let served = try cli.ok(["flags", "test"] + a + ["--api-key", "--json"])
        #expect(!served.contains("\"f11\"") && served.contains("\"f10\""), "\(served)")
        #expect(Self.keys(publisher.stored(channel)) == Set(keys.prefix(10)),
                "the channel still holds the pro tier's 12 flags after the downgrade: \(publisher.recorded.map(\.path))")
    }
}
