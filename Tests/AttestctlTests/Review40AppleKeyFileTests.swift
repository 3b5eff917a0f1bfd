@testable import attestctl
import Foundation
import SupervisorTestSupport
import Testing

/// Review of issue 40 (branch review): `attestctl apple key add --p8 FILE` as root.
@Suite struct Review40AppleKeyFileTests {
    /// Finding R40-7: root reads `--p8 FILE` before acting as the data owner, refusing a link
    /// only as the last component (O_NOFOLLOW). A directory on the way that the service user
    /// controls (`DATA/incoming -> /etc/ssl/private`, planted by the data owner) makes root read
    /// a P-256 PKCS #8 key it never meant to give (a TLS key, 0600), which `add` then writes
    /// into DATA/keys/apple, where the data owner reads it. The usage says a FILE that is a
    /// symbolic link is refused; a path through one is not.
    @Test func aP8PathThroughALinkedDirectoryIsRefused() throws {
        let dir = TemporaryDirectory()
        let real = dir.path + "/private", link = dir.path + "/incoming"
        try FileManager.default.createDirectory(atPath: real, withIntermediateDirectories: true)
        let key = real + "/server.key"
        let openssl = Process()
        openssl.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        openssl.arguments = ["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", key]
        try openssl.run()
        openssl.waitUntilExit()
        #expect(chmod(key, 0o600) == 0)
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: real)
        var refusal = "accepted"
        do {
            let pem = try AppleKeyFile.read(link + "/server.key")
            refusal = pem.contains("BEGIN PRIVATE KEY") ? "accepted" : "read something else"
        } catch { refusal = "\(error)" }
        #expect(refusal != "accepted", "root read the key at \(link)/server.key through the linked directory")
    }
}
