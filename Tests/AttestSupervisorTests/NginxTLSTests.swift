import AttestConfig
import CLISupport
@testable import AttestSupervisor
import Foundation
import SupervisorTestSupport
import Testing

/// HTTPS in the rendered site (issue 39): TLS off renders the site as before, TLS on adds the
/// listen parameters, tls.conf and HSTS, a domain adds the plain-HTTP server, OCSP stapling only
/// for a certificate that names a responder, and hostile paths, domains and addresses are
/// refused, never escaped.
@Suite("nginx TLS rendering") struct NginxTLSTests {
    static let templates = NginxTemplateTests.templates

    /// Self-signed P-256 certificates (openssl req -x509, CN and SAN attestedge.test, valid to
    /// 2126): one plain, as a test CA issues, one with an Authority Information Access naming
    /// an OCSP responder (http://ocsp.example.test), as a public CA's does.
    static let plainCertificate = """
        -----BEGIN CERTIFICATE-----
        MIIBpzCCAU2gAwIBAgIULLFmwD5bk4IcFaSbl80EzOuPe8gwCgYIKoZIzj0EAwIw
        GjEYMBYGA1UEAwwPYXR0ZXN0ZWRnZS50ZXN0MCAXDTI2MTIwNTA2MzE0MFoYDzIx
        MjYxMTExMDYzMTQwWjAaMRgwFgYDVQQDDA9hdHRlc3RlZGdlLnRlc3QwWTATBgcq
        hkjOPQIBBggqhkjOPQMBBwNCAASlqyBW8776GClImIuEsWtU0kR1z8xAGvKwBEqT
        StMUZv1DUWGqXhOkSobbhk5ezfevD+h8aYCUqy5/OgGV+IHHo28wbTAdBgNVHQ4E
        FgQUUJ9PgdMobfLi3Com0v5K8eHRogAwHwYDVR0jBBgwFoAUUJ9PgdMobfLi3Com
        0v5K8eHRogAwDwYDVR0TAQH/BAUwAwEB/zAaBgNVHREEEzARgg9hdHRlc3RlZGdl
        LnRlc3QwCgYIKoZIzj0EAwIDSAAwRQIhAPWM30V4A523PAjhWJe+bgK8gZDMcEmy
        RPGgMTf5EvdyAiBmTCJVV2H03sqJE9ZrrMISfGZEqw/aVP+edz+zU/lo8w==
        -----END CERTIFICATE-----
        """
    static let ocspCertificate = """
        -----BEGIN CERTIFICATE-----
        MIICCzCCAbCgAwIBAgIUbHHq36JVeM18ztH70WKQFyelh0swCgYIKoZIzj0EAwIw
        GjEYMBYGA1UEAwwPYXR0ZXN0ZWRnZS50ZXN0MCAXDTI2MTIwNTA2MzE0MFoYDzIx
        MjYxMTExMDYzMTQwWjAaMRgwFgYDVQQDDA9hdHRlc3RlZGdlLnRlc3QwWTATBgcq
        hkjOPQIBBggqhkjOPQMBBwNCAASlqyBW8776GClImIuEsWtU0kR1z8xAGvKwBEqT
        StMUZv1DUWGqXhOkSobbhk5ezfevD+h8aYCUqy5/OgGV+IHHo4HRMIHOMB0GA1Ud
        DgQWBBRQn0+B0yht8uLcKibS/krx4dGiADAfBgNVHSMEGDAWgBRQn0+B0yht8uLc
        KibS/krx4dGiADAPBgNVHRMBAf8EBTADAQH/MBoGA1UdEQQTMBGCD2F0dGVzdGVk
        Z2UudGVzdDBfBggrBgEFBQcBAQRTMFEwJAYIKwYBBQUHMAGGGGh0dHA6Ly9vY3Nw
        LmV4YW1wbGUudGVzdDApBggrBgEFBQcwAoYdaHR0cDovL2NhLmV4YW1wbGUudGVz
        dC9jYS5jcnQwCgYIKoZIzj0EAwIDSQAwRgIhAOi//FH9shFx9530lu1c53hKyMYs
        Ka02IrPAXB7Ql+qzAiEA8aVq17qEIFIXhbMqE07XNTdY6XrILxJ23eQ4QdrO9+E=
        -----END CERTIFICATE-----
        """
    /// Rendering reads the key only for its PEM label (nginx -t checks it matches).
    static let key = "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"

    struct Fixture {
        let dir = TemporaryDirectory()
        var data: DataDirectory { DataDirectory(dir.path + "/data") }
        var host: String { dir.path + "/host" }

        init() {
            for sub in [dir.path + "/data", dir.path + "/data/nginx", dir.path + "/host"] { mkdir(sub, 0o755) }
        }

        func tls(_ certificate: String = NginxTLSTests.plainCertificate) throws -> TLSSite {
            try certificate.write(toFile: dir.path + "/cert.pem", atomically: true, encoding: .utf8)
            try NginxTLSTests.key.write(toFile: dir.path + "/key.pem", atomically: true, encoding: .utf8)
            return try TLSSite.load(certificate: dir.path + "/cert.pem", key: dir.path + "/key.pem").site
        }

        func serve(_ tls: TLSSite?, listen: String = "127.0.0.1:8443") throws -> (site: String, conf: String) {
            var config = Configuration()
            config.listen = listen
            let path = try NginxSite(templates: NginxTLSTests.templates)
                .render(data: data, configuration: config, user: "attestedge attestedge",
                        startID: NginxSite.newStartID(), absentPools: [], tls: tls)
            return (try read(data.nginxDirectory + "/site.conf"), try read(path))
        }

        func host(_ tls: TLSSite?, _ domain: DomainSite?, listen: String = "*:443") throws {
            var config = Configuration()
            config.listen = listen
            try NginxSite(templates: NginxTLSTests.templates)
                .renderForHost(data: data, configuration: config, runDirectory: "/run/attestedge", into: host,
                               tls: tls, domain: domain)
        }

        func read(_ path: String) throws -> String { try String(contentsOfFile: path, encoding: .utf8) }
    }

    /// The server block's locations: `location … {` to its closing brace at 4 spaces.
    static func locations(_ site: String) -> [Substring] {
        site.split(separator: "\n    location ").dropFirst()
            .map { $0.prefix(upTo: $0.range(of: "\n    }")!.lowerBound) }
    }

    @Test("TLS off: the site as before TLS existed (no ssl, HSTS or includes; placeholder lines blank)")
    func tlsOffIsUnchanged() throws {
        let f = Fixture()
        let (site, conf) = try f.serve(nil, listen: "127.0.0.1:8080")
        let template = try f.read(Self.templates + "/site.conf")
        // Every line of the rendered site is its template line with the values in, or blank
        // where a TLS placeholder stood: nothing was added or moved.
        let rendered = site.split(separator: "\n", omittingEmptySubsequences: false)
        let lines = template.split(separator: "\n", omittingEmptySubsequences: false)
        #expect(rendered.count == lines.count)
        let placeholders = ["@TLS_HEADERS@", "@TLS@", "@HTTP_SERVER@", "@H2_BODY_LIMIT@"]
        for (r, t) in zip(rendered, lines) where placeholders.contains(where: { t.contains($0) }) {
            #expect(r.isEmpty || t.hasPrefix("#"), "\(t) rendered as \(r)")
        }
        for text in [site, conf] {
            #expect(text.firstMatch(of: /\n\s*(ssl_|add_header Strict|include [^\n]*(tls|http-redirect)\.conf)/) == nil)
            #expect(text.firstMatch(of: /\n\s*listen [^\n]*(ssl|http2)/) == nil)
        }
        #expect(site.contains("\n    listen 127.0.0.1:8080;\n    server_name _;\n"))
        #expect(!FileManager.default.fileExists(atPath: f.data.nginxDirectory + "/tls.conf"))
    }

    @Test("TLS on: ssl http2 on both servers of the address, tls.conf with the certificate, the DH group")
    func tlsOn() throws {
        let f = Fixture()
        let tls = try f.tls()
        #expect(!tls.stapling, "a certificate without an OCSP responder: no stapling")
        let (site, conf) = try f.serve(tls)
        #expect(site.contains("\n    listen 127.0.0.1:8443 ssl http2;\n    server_name _;\n"
                              + "    include \(f.data.nginxDirectory)/tls.conf;\n"))
        #expect(conf.contains("\n        listen 127.0.0.1:8443 ssl http2;\n"),
                "the readiness server is on the TLS port")
        let tlsConf = try f.read(f.data.nginxDirectory + "/tls.conf")
        #expect(tlsConf.contains("\nssl_certificate \(f.dir.path)/cert.pem;\n"
                                 + "ssl_certificate_key \(f.dir.path)/key.pem;\n"))
        #expect(tlsConf.contains("\nssl_protocols TLSv1.2 TLSv1.3;\n"))
        #expect(tlsConf.contains("\nssl_session_tickets off;\n"))
        #expect(tlsConf.contains("\nssl_dhparam \(f.data.nginxDirectory)/ffdhe2048.pem;\n"))
        #expect(tlsConf.firstMatch(of: /\nssl_stapling/) == nil, "no stapling lines, so no nginx warning")
        #expect(try f.read(f.data.nginxDirectory + "/ffdhe2048.pem") == f.read(Self.templates + "/ffdhe2048.pem"))
        #expect(!FileManager.default.fileExists(atPath: f.data.nginxDirectory + "/http-redirect.conf"))
        #expect(site.contains("location = /.attestedge/error/413 {\n        internal;\n"
                              + "        client_max_body_size 0;\n"),
                "HTTP/2: the 413 envelope's location does not judge the body again")
    }

    /// nginx inherits add_header into a location only when it has none of its own: HSTS must
    /// be in the server block and in every location that adds a header (the JSON 429 too).
    @Test("TLS on: HSTS on the server and in every location with an add_header of its own")
    func hstsEverywhere() throws {
        let f = Fixture()
        let (site, _) = try f.serve(try f.tls())
        let hsts = "add_header Strict-Transport-Security \"max-age=63072000\" always; "
            + "add_header X-Content-Type-Options nosniff always;"
        let main = site[..<site.range(of: "# Prometheus's scrape target")!.lowerBound]
        #expect(main.contains("\n    server_name _;\n    include ") && main.contains("\n    \(hsts)\n"))
        let withHeaders = Self.locations(String(main)).filter { $0.contains("add_header") }
        #expect(withHeaders.count == 6, "the two JWKS locations, the 429 envelope, the flag stream, the console and its 404")
        for location in withHeaders {
            #expect(location.contains(hsts), "\(location.prefix(60)) has add_header but no HSTS")
        }
    }

    @Test("OCSP stapling only when the certificate names a responder")
    func stapling() throws {
        let f = Fixture()
        let tls = try f.tls(Self.ocspCertificate)
        #expect(tls.stapling)
        _ = try f.serve(tls)
        let tlsConf = try f.read(f.data.nginxDirectory + "/tls.conf")
        // Review of issue 39: verifying without a trusted certificate fails every response.
        #expect(tlsConf.contains("\nssl_stapling on; ssl_stapling_verify on; "
                                 + "ssl_trusted_certificate \(tls.certificate);\n"), "\(tlsConf)")
        // One line, as the template's: the placeholder is in its header comment too, and a second
        // line there would leave the comment (nginx -t: unknown directive).
        let template = try f.read(Self.templates + "/tls.conf")
        #expect(tlsConf.split(separator: "\n", omittingEmptySubsequences: false).count
                == template.split(separator: "\n", omittingEmptySubsequences: false).count)
        #expect(throws: SupervisorError.self) {
            try NginxSite.check("@OCSP_STAPLING@", NginxSite.stapling(chain: "/x; include /etc/shadow"))
        }
        #expect(throws: SupervisorError.self) { try NginxSite.check("@OCSP_STAPLING@", NginxSite.stapling) }
    }

    /// Review of issue 39: after `serve --tls-cert/--tls-key` as root, the key's copy stayed in
    /// the service user's DATA/nginx when serve next ran without TLS (or not as root).
    @Test("serve without TLS removes an earlier start's certificate and key copies, links not followed")
    func staleTLSCopiesAreRemoved() throws {
        let f = Fixture()
        let nginx = f.data.nginxDirectory
        try "key".write(toFile: nginx + "/tls-key.pem", atomically: true, encoding: .utf8)
        try "outside".write(toFile: f.dir.path + "/outside.pem", atomically: true, encoding: .utf8)
        #expect(symlink(f.dir.path + "/outside.pem", nginx + "/tls-certificate.pem") == 0)
        let serve = Serve(try Arguments(["--data", f.data.path], valued: ["data", "tls-cert", "tls-key"]))
        #expect(try serve.tlsSite(serviceUser: nil) == nil)
        var st = stat()
        for name in Serve.tlsCopies {
            #expect(lstat(nginx + "/" + name, &st) != 0 && errno == ENOENT, "\(name) is still there")
        }
        #expect(try f.read(f.dir.path + "/outside.pem") == "outside", "the link's target is untouched")
        #expect(try serve.tlsSite(serviceUser: nil) == nil, "nothing to remove is no error")
    }

    @Test("a domain: server_name, and the port-80 server redirecting to https except ACME's path")
    func domain() throws {
        let f = Fixture()
        try f.host(try f.tls(), DomainSite(domain: "attest.example.com", acmeWebroot: "/var/lib/attestedge-acme"))
        let site = try f.read(f.host + "/site.conf")
        #expect(site.contains("\n    listen *:443 ssl http2;\n    server_name attest.example.com;\n"))
        #expect(site.contains("\ninclude \(f.host)/http-redirect.conf;\n"))
        let redirect = try f.read(f.host + "/http-redirect.conf")
        #expect(redirect.contains("\n    listen *:80;\n    server_name attest.example.com;\n"))
        #expect(redirect.contains("location ^~ /.well-known/acme-challenge/ {\n        root /var/lib/attestedge-acme;"))
        #expect(redirect.contains("return 301 https://attest.example.com$request_uri;"))
        try f.host(try f.tls(), DomainSite(domain: "attest.example.com", httpListen: "127.0.0.1:18080",
                                           acmeWebroot: "/srv/acme"), listen: "127.0.0.1:18443")
        let moved = try f.read(f.host + "/http-redirect.conf")
        #expect(moved.contains("listen 127.0.0.1:18080;")
                && moved.contains("https://attest.example.com:18443$request_uri;"),
                "the redirect keeps the HTTPS server's port when it is not 443")
    }

    static let hostilePaths = ["/x;", "/x{", "/x}", "/x'", "/x\"", "/x$y", "/x#", "/x\n", "/x y", "/x\\y", "/x\ty",
                               "relative/cert.pem", "", "/etc/x; } server { listen 81; root /; } #"]
    static let hostileDomains = ["a;b.com", "example.com; include /etc/shadow", "$host", "_ ", "", "a b.com",
                                 "*.example.com", "example.com\n", "ex'ample.com", "-a.com", "1.2.3.4", "exämple.com",
                                 "example.com:80", String(repeating: "a", count: 64) + ".com"]
    static let hostileHTTPListen = ["*:80 ssl", "*:80;", "*:80 http2", "*:80 }", "80", "$x:80", "*:80\nuser root;"]

    /// Root renders these (install.sh): each value is given by an attacker in turn; rendering
    /// refuses every one and writes nothing.
    @Test("hostile certificate paths, domains, webroots and HTTP addresses are refused, nothing written")
    func hostileValuesAreRefused() throws {
        let f = Fixture()
        let good = try f.tls()
        func refused(_ tls: TLSSite, _ domain: DomainSite, _ what: String) {
            let fresh = f.host + "-" + String(UInt32.random(in: 0...UInt32.max))
            mkdir(fresh, 0o755)
            var config = Configuration()
            config.listen = "*:443"
            do {
                try NginxSite(templates: Self.templates).renderForHost(
                    data: f.data, configuration: config, runDirectory: "/run/attestedge", into: fresh,
                    tls: tls, domain: domain)
                Issue.record("rendered with \(what)")
            } catch {
                #expect(error is SupervisorError, "\(what): \(error)")
                #expect(!"\(error)".contains("\n"), "the refusal is one line: \(error)")
            }
            // Every value is checked before the first file is written.
            #expect((try? FileManager.default.contentsOfDirectory(atPath: fresh)) == [], "\(what): nothing written")
        }
        let domain = DomainSite(domain: "attest.example.com", acmeWebroot: "/srv/acme")
        for path in Self.hostilePaths {
            refused(TLSSite(certificate: path, key: good.key, stapling: false), domain,
                    "certificate \(path.debugDescription)")
            refused(TLSSite(certificate: good.certificate, key: path, stapling: false), domain,
                    "key \(path.debugDescription)")
            var d = domain
            d.acmeWebroot = path
            refused(good, d, "webroot \(path.debugDescription)")
        }
        for name in Self.hostileDomains {
            var d = domain
            d.domain = name
            refused(good, d, "domain \(name.debugDescription)")
        }
        for listen in Self.hostileHTTPListen {
            var d = domain
            d.httpListen = listen
            refused(good, d, "--http-listen \(listen.debugDescription)")
        }
        var same = domain
        same.httpListen = "*:443"
        refused(good, same, "--http-listen equal to the site's address")
        // Review of issue 39: compared as addresses, and with the metrics server's too (the
        // fixture's server.metricsListen is the default, 127.0.0.1:9469).
        for (listen, what) in [("127.0.0.1:443", "a host on the site's wildcard address"),
                               ("127.0.0.1:9469", "the metrics server's address"),
                               ("*:9469", "a wildcard over the metrics server's address"),
                               ("127.0.0.1:09469", "the metrics server's address spelled with a 0")] {
            var d = domain
            d.httpListen = listen
            refused(good, d, "--http-listen \(listen) (\(what))")
        }
    }

    /// `ssl`/`http2` are the renderer's: config.json (the service user's file) cannot ask for them.
    @Test("server.listen cannot carry ssl or http2; the renderer's own check takes them")
    func tlsParametersAreTheRenderers() throws {
        for text in ["127.0.0.1:8443 ssl", "127.0.0.1:8443 http2", "127.0.0.1:8443 ssl http2"] {
            #expect(throws: Configuration.Problem.self) { try ListenAddress(parsing: text) }
            #expect(try ListenAddress(parsing: text, allowingTLS: true).description == text)
        }
        #expect(try ListenAddress(parsing: "[::1]:8443 reuseport").withTLS().description
                == "[::1]:8443 reuseport ssl http2")
        #expect(throws: SupervisorError.self) {
            try NginxSite.check("@LISTEN@", "127.0.0.1:8443 ssl ssl")
        }
    }

    @Test("what is not a certificate chain or a key is refused by name")
    func loadRefusesNonPEM() throws {
        let f = Fixture()
        try "not a certificate".write(toFile: f.dir.path + "/bad.pem", atomically: true, encoding: .utf8)
        try Self.key.write(toFile: f.dir.path + "/key.pem", atomically: true, encoding: .utf8)
        try Self.plainCertificate.write(toFile: f.dir.path + "/cert.pem", atomically: true, encoding: .utf8)
        for (cert, key) in [("bad.pem", "key.pem"), ("cert.pem", "bad.pem"), ("missing.pem", "key.pem"),
                            ("cert.pem", "missing.pem")] {
            let failure = #expect(throws: SupervisorError.self) {
                try TLSSite.load(certificate: f.dir.path + "/" + cert, key: f.dir.path + "/" + key)
            }
            let named = cert == "cert.pem" ? key : cert
            #expect("\(failure.map { "\($0)" } ?? "")".contains(named), "names \(named)")
        }
    }
}
