import AttestConfig
import Testing

/// `receipts.appleURL` is where attest-receipts sends a team's provider token: only an https
/// URL without user info, query or fragment is a value (finding R40-5 of issue 40's review).
@Suite struct HTTPSURLKeyTests {
    @Test(arguments: ["", "https://data.appattest.apple.com", "https://127.0.0.1:8443",
                      "https://[::1]:8443/apple", "https://stand-in.test/base/path"])
    func accepted(_ url: String) throws {
        var config = Configuration()
        try config.set("receipts.appleURL", jsonValue: "\"\(url)\"")
        #expect(config.receiptAppleURL == url)
    }

    @Test(arguments: ["file:///etc/os-release#", "http://data.appattest.apple.com", "https://user@host",
                      "https://host/path?x=1", "https://host/#frag", "https://", "https://host:0",
                      "https://host:99999", "https://ho st", "ftp://host", "https://host\\n/x", "gopher://x"])
    func refused(_ url: String) {
        var config = Configuration()
        #expect(throws: (any Error).self, "\(url)") {
            try config.set("receipts.appleURL", jsonValue: "\"\(url)\"")
        }
        #expect(config.receiptAppleURL == "")
    }
}
