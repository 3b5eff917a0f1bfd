import AttestConfig
import AttestCore
import Testing

/// `server.listen`'s grammar (`ListenAddress`): root writes the value into nginx's
/// configuration, and the service user can write config.json (issue 37, item 1).
@Suite struct ListenAddressTests {
    /// The exploit of issue 37: it ends in a valid port, which was all the old check asked.
    static let issuePayload = "127.0.0.1:18080; } log_format p escape=none '$http_x'; server { listen 127.0.0.1:18081; "
        + "access_log /etc/cron.d/x p; } server { listen 127.0.0.1:18082"

    @Test("valid forms are accepted and written back as given", arguments: [
        "127.0.0.1:8080", "0.0.0.0:443", "[::1]:8080", "[::]:80", "[2001:db8::1]:443", "[::ffff:127.0.0.1]:8080",
        "localhost:8080", "api.example.com:443", "a-b.example:1", "*:80", "127.0.0.1:65535",
        "127.0.0.1:8080 reuseport", "[::1]:8443 reuseport",
    ])
    func validForms(text: String) throws {
        let address = try ListenAddress(parsing: text)
        #expect(address.description == text)
    }

    /// Review of issue 39: metricsListen was compared with listen as text, so each of these
    /// pairs passed and nginx routed /metrics to the main site or opened the metrics server on
    /// every address of the API's port.
    @Test("one socket however it is spelled, or a wildcard over the other host", arguments: [
        ("127.0.0.1:8080 reuseport", "127.0.0.1:8080"), ("127.0.0.1:08080", "127.0.0.1:8080"),
        ("*:8080", "127.0.0.1:8080"), ("127.0.0.1:8080", "0.0.0.0:8080"), ("[::]:8080", "[::1]:8080"),
        ("[::1]:8080", "[0:0:0:0:0:0:0:1]:8080"), ("API.example.com:443", "api.example.com:443"),
        ("*:443", "api.example.com:443"), ("[::]:9469", "127.0.0.1:9469"),
    ])
    func overlapping(a: String, b: String) throws {
        let (x, y) = (try ListenAddress(parsing: a), try ListenAddress(parsing: b))
        #expect(x.overlaps(y) && y.overlaps(x))
    }

    @Test("other ports, or two different specific hosts, are other sockets", arguments: [
        ("127.0.0.1:9469", "127.0.0.1:8080"), ("*:9469", "*:8080"), ("127.0.0.1:8080", "127.0.0.2:8080"),
        ("[::1]:8080", "127.0.0.1:8080"), ("10.0.0.1:443", "api.example.com:443"),
    ])
    func separate(a: String, b: String) throws {
        let (x, y) = (try ListenAddress(parsing: a), try ListenAddress(parsing: b))
        #expect(!x.overlaps(y) && !y.overlaps(x))
    }

    @Test func partsAreParsed() throws {
        let v6 = try ListenAddress(parsing: "[2001:db8::1]:443 reuseport")
        #expect(v6.host == .ipv6("2001:db8::1") && v6.port == 443 && v6.parameters == [.reuseport])
        #expect(v6.authority == "[2001:db8::1]:443")
        #expect(v6.directive(socketOptions: false) == "[2001:db8::1]:443",
                "reuseport is a socket option: once per address")
        #expect(try ListenAddress(parsing: "localhost:80").host == .name("localhost"))
        #expect(try ListenAddress(parsing: "10.0.0.1:80").host == .ipv4("10.0.0.1"))
        #expect(try ListenAddress(parsing: "*:80").host == .any)
    }

    @Test("hostile and malformed forms are refused, naming the key", arguments: [
        issuePayload, "127.0.0.1:8080;", "127.0.0.1:8080; access_log /etc/passwd", "127.0.0.1:8080 }",
        "{127.0.0.1:8080", "127.0.0.1:8080\n", "127.0.0.1:8080\nuser root;", "127.0.0.1:8080\treuseport",
        "'127.0.0.1:8080'", "\"127.0.0.1:8080\"", "127.0.0.1:8080 $x", "127.0.0.1:8080 #", "127.0.0.1:8080 \\",
        "$host:8080", "ex;ample.com:80", "127.0.0.1:8080 ssl", "127.0.0.1:8080 default_server",
        "127.0.0.1:8080 reuseport reuseport", "127.0.0.1:8080  reuseport", " 127.0.0.1:8080", "127.0.0.1:8080 ",
        "127.0.0.1:8080 backlog=1", "", "8080", "127.0.0.1", "127.0.0.1:", ":8080", "127.0.0.1:0", "127.0.0.1:65536",
        "127.0.0.1:+80", "127.0.0.1:-1", "127.0.0.1:0x50", "127.0.0.1:٨٠", "127.0.0.1:080080", "::1:8080", "[::1]",
        "[]:80", "[::1%lo]:80", "[fe80::1%eth0]:80", "[127.0.0.1]:80", "[::1:80", "::1]:80", "1.2.3:80", "256.0.0.1:80",
        "127.0.0.01:80", "-a.example:80", "a-.example:80", "a..example:80", ".example:80", "exämple.com:80",
        "unix:/tmp/x.sock", "127.0.0.1:8080 unix:/x", String(repeating: "a", count: 64) + ".example:80",
        String(repeating: "a.", count: 127) + "com:80",
    ])
    func hostileForms(text: String) {
        do {
            let address = try ListenAddress(parsing: text)
            Issue.record("accepted \(text.debugDescription) as \(address)")
        } catch {
            #expect(error.message.hasPrefix("server.listen "), "\(error.message)")
            #expect(!error.message.contains("\n"), "the message escapes the value: \(error.message)")
        }
    }

    @Test("config.json and config set refuse the issue's payload")
    func configurationRefusesThePayload() {
        let file = #"{"server": {"listen": "\#(Self.issuePayload)"}}"#
        do { _ = try Configuration(jsonText: file); Issue.record("config.json with the payload loaded") } catch {
            #expect(error.message.contains("server.listen"), "\(error.message)")
        }
        var c = Configuration()
        do {
            try c.set("server.listen", jsonValue: Self.issuePayload); Issue.record("config set took the payload")
        } catch {
            #expect(error.message.contains("server.listen"), "\(error.message)")
        }
        #expect(c.listen == Configuration().listen, "a refused value is not kept")
    }

    @Test("server.user: a user name, nothing nginx would read as syntax", arguments: [
        ("attestedge", true), ("www-data", true), ("svc_1.x", true), ("root", true),
        ("", false), ("-x", false), ("a b", false), ("a;", false), ("a\n", false), ("a$", false), ("a'", false),
        ("a{", false), (String(repeating: "a", count: 33), false), ("ä", false),
    ])
    func userNames(name: String, valid: Bool) {
        #expect(Configuration.isUserName(name) == valid, "\(name.debugDescription)")
        let file = #"{"server": {"user": \#(JSONValue.string(name).jsonText)}}"#
        do {
            _ = try Configuration(jsonText: file)
            #expect(valid, "config.json accepted server.user \(name.debugDescription)")
        } catch {
            #expect(!valid && error.message.contains("server.user"), "\(error.message)")
        }
    }
}
