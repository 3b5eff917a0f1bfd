import AttestConfig
import AttestCore
import CLISupport
#if canImport(Glibc)
import Glibc
#endif

/// Renders the deployment files of `nginx/conf/` (nginx.conf, site.conf, fastcgi_params) into a
/// data directory, replacing their `@NAME@` placeholders. The templates are the repository's
/// own files, found beside the binaries (`.build/<config>/` → `nginx/conf/`), under
/// /usr/local/share/attestedge/nginx, or where `--nginx-templates` says.
package struct NginxSite {
    static let files = ["nginx.conf", "site.conf", "fastcgi_params"]
    /// Rendered too when TLS is on: the TLS settings the main server includes, and RFC 7919's
    /// ffdhe2048 group for the DHE suites (Mozilla's ffdhe2048.txt; a fixed, well-known group).
    static let tlsFiles = ["tls.conf", "ffdhe2048.pem"]
    /// Rendered too with a domain: the plain-HTTP server (redirect to HTTPS, ACME challenges).
    static let domainFiles = ["http-redirect.conf"]

    /// `@TLS_HEADERS@`: HSTS for two years, as Mozilla's profiles (no `includeSubDomains`: the
    /// domain's other hosts are not AttestEdge's to commit to HTTPS), and `nosniff` (testssl.sh
    /// rates a site without any security header MEDIUM); `always`, so nginx's own errors carry
    /// them too.
    static let tlsHeaders = "add_header Strict-Transport-Security \"max-age=63072000\" always; "
        + "add_header X-Content-Type-Options nosniff always;"
    /// `@H2_BODY_LIMIT@`, in the 413 envelope's location: over HTTP/2, nginx 1.22 judges the
    /// body again against the location it redirected to and, refusing it twice, sends its HTML
    /// page instead of the envelope (nginx/e2e/tls.sh caught it). Nothing is read: the body is
    /// being discarded.
    static let http2BodyLimit = "client_max_body_size 0;"
    /// `@OCSP_STAPLING@` for a certificate that names an OCSP responder: stapling, then
    /// `ssl_trusted_certificate` naming the chain file, the issuer nginx verifies the responses
    /// with (without one every response fails verification and nothing is stapled). One line:
    /// the placeholder also appears in tls.conf's header comment.
    static let stapling = "ssl_stapling on; ssl_stapling_verify on;"
    static let trustedCertificate = " ssl_trusted_certificate "
    static func stapling(chain: String) -> String { stapling + trustedCertificate + chain + ";" }
    /// Placeholders that may render to nothing: their line is left blank (TLS off renders the
    /// directives it rendered before TLS existed).
    static let optionalPlaceholders: Set = ["@TLS@", "@TLS_HEADERS@", "@H2_BODY_LIMIT@", "@HTTP_SERVER@",
                                                  "@OCSP_STAPLING@"]

    let templates: String

    /// `@CONSOLE_DIR@`: the operator console's static files (the repository's `console/`),
    /// found beside the templates: `<checkout>/nginx/conf` → `<checkout>/console`, an
    /// installed `PREFIX/share/attestedge/nginx` → `PREFIX/share/attestedge/console`
    /// (install.sh copies it there). Resolved (no `..`, no link), so nginx's `alias` names the
    /// real directory. When neither exists, the installed place: `/console/` then answers 404.
    var consoleDirectory: String {
        let base = FileIO.absolute(templates)
        let candidates = [base + "/../../console", base + "/../console"]
        let found = candidates.first { FileIO.exists($0 + "/index.html") } ?? candidates[1]
        guard let resolved = realpath(found, nil) else { return found }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    package static func locate(_ explicit: String?) throws -> NginxSite {
        var candidates = [String]()
        if let explicit { candidates.append(explicit) }
        let exe = executableDirectory()
        candidates += [exe + "/../../nginx/conf", exe + "/../../../nginx/conf", exe + "/../share/attestedge/nginx",
                       "/usr/local/share/attestedge/nginx", "/usr/share/attestedge/nginx"]
        for dir in candidates where files.allSatisfy({ FileIO.exists(dir + "/" + $0) }) {
            return NginxSite(templates: dir)
        }
        throw SupervisorError(.nginxSite, "cannot find the nginx templates (\(files.joined(separator: ", "))); "
                              + "pass --nginx-templates DIR (the repository's nginx/conf/)")
    }

    /// Writes the rendered files into `data.nginxDirectory`; returns the nginx.conf path.
    /// `user` is nginx.conf's `user` line (`name group`); `startID` the id nginx's readiness
    /// server answers (a fresh random one per start). Locations of pools in `absentPools`
    /// (responders this build does not have yet) answer 501 `not_implemented` as JSON instead
    /// of passing to a socket nobody listens on. `write` writes each rendered file (serve, as
    /// root, writes them as the data directory's owner; the templates are read as the caller).
    /// `tls`: HTTPS (`ssl http2` on the listen address, tls.conf, HSTS and nosniff).
    func render(data: DataDirectory, configuration c: Configuration, user: String, startID: String,
                absentPools: [String], tls: TLSSite? = nil,
                write: (_ path: String, _ text: String) throws -> Void = {
                    try FileIO.writeAtomically($0, text: $1)
                }) throws -> String {
        let listen = try Self.listenAddress(c, tls: tls != nil), metrics = try Self.metricsListenAddress(c)
        var values = [
            "@LISTEN@": listen.description, "@METRICS_LISTEN@": metrics.description,
            "@RUN_DIR@": data.runDirectory, "@LOG_DIR@": data.logDirectory,
            "@CONF_DIR@": data.nginxDirectory, "@DATA_DIR@": data.path, "@USER@": user, "@START_ID@": startID,
            "@CONSOLE_DIR@": consoleDirectory,
            "@CHALLENGE_RATE@": String(c.challengePerIPPerSecond), "@CHALLENGE_BURST@": String(c.challengeBurst),
        ].merging(Self.flagStreamValues(c), uniquingKeysWith: { $1 })
        values.merge(try Self.httpsValues(tls: tls, domain: nil, listen: listen, metrics: metrics,
                                          confDirectory: data.nginxDirectory),
                     uniquingKeysWith: { $1 })
        // nginx.conf's readiness server shares the address with site.conf's server: nginx takes
        // a socket option (reuseport) on one of them only. With TLS it is a TLS server too
        // (nginx ORs ssl over the address); a client without SNI gets site.conf's certificate.
        try render(Self.files + (tls == nil ? [] : Self.tlsFiles), values: values,
                   overrides: ["nginx.conf": ["@LISTEN@": listen.directive(socketOptions: false)]],
                   absentPools: absentPools, into: data.nginxDirectory, write: write)
        return data.nginxDirectory + "/nginx.conf"
    }

    /// The files a system nginx includes (site.conf, fastcgi_params) for a host install:
    /// sockets in `runDirectory`, the data directory's jwks.json served from `data`, and the
    /// site's `include` of fastcgi_params pointing at `outputDirectory`. With `logDirectory`,
    /// also nginx.conf, for an nginx of its own rather than the system's (the benchmarks' and
    /// nginx/e2e/fastcgi.sh's): its logs there, its workers as the invoking user.
    /// `tls`: HTTPS as in `render`; `domain`: its server name and the plain-HTTP server.
    package func renderForHost(data: DataDirectory, configuration c: Configuration, runDirectory: String,
                               into outputDirectory: String, logDirectory: String? = nil, tls: TLSSite? = nil,
                               domain: DomainSite? = nil) throws {
        let listen = try Self.listenAddress(c, tls: tls != nil), metrics = try Self.metricsListenAddress(c)
        var values = [
            "@LISTEN@": listen.description, "@METRICS_LISTEN@": metrics.description,
            "@RUN_DIR@": runDirectory, "@CONF_DIR@": outputDirectory,
            "@DATA_DIR@": data.path, "@CONSOLE_DIR@": consoleDirectory,
            "@CHALLENGE_RATE@": String(c.challengePerIPPerSecond), "@CHALLENGE_BURST@": String(c.challengeBurst),
        ].merging(Self.flagStreamValues(c), uniquingKeysWith: { $1 })
        values.merge(try Self.httpsValues(tls: tls, domain: domain, listen: listen, metrics: metrics,
                                          confDirectory: outputDirectory),
                     uniquingKeysWith: { $1 })
        let extra = (tls == nil ? [] : Self.tlsFiles) + (domain == nil ? [] : Self.domainFiles)
        guard let logDirectory else {
            return try render(["site.conf", "fastcgi_params"] + extra, values: values, overrides: [:],
                              absentPools: [], into: outputDirectory)
        }
        values["@LOG_DIR@"] = logDirectory
        values["@USER@"] = Self.currentUser()
        values["@START_ID@"] = Self.newStartID()
        let readiness = ["@LISTEN@": listen.directive(socketOptions: false)]
        try render(Self.files + extra, values: values, overrides: ["nginx.conf": readiness], absentPools: [],
                   into: outputDirectory)
    }

    /// The values of the HTTPS placeholders: with `tls` nil and no domain, the optional ones are
    /// empty and `@SERVER_NAME@` is `_`, so the site is what it was before TLS.
    static func httpsValues(tls: TLSSite?, domain: DomainSite?, listen: ListenAddress, metrics: ListenAddress,
                            confDirectory: String) throws -> [String: String] {
        var values = ["@SERVER_NAME@": domain?.domain ?? "_",
                      "@TLS@": tls == nil ? "" : "include \(confDirectory)/tls.conf;",
                      "@TLS_HEADERS@": tls == nil ? "" : tlsHeaders,
                      "@H2_BODY_LIMIT@": tls == nil ? "" : http2BodyLimit,
                      "@HTTP_SERVER@": domain == nil ? "" : "include \(confDirectory)/http-redirect.conf;"]
        if let tls {
            values["@TLS_CERT@"] = tls.certificate
            values["@TLS_KEY@"] = tls.key
            values["@OCSP_STAPLING@"] = tls.stapling ? stapling(chain: tls.certificate) : ""
        }
        if let domain {
            try check("@SERVER_NAME@", domain.domain)  // first: the redirect target is built from it
            let http: ListenAddress
            do { http = try ListenAddress(parsing: domain.httpListen, key: "--http-listen") } catch {
                throw SupervisorError(.nginxSite, "refusing to write the nginx configuration: \(error.message)")
            }
            // As addresses (a wildcard meets every host of its port), as Configuration.validate does.
            guard !http.overlaps(listen) else {
                throw SupervisorError(.nginxSite, "--http-listen \(http) is the site's own address (server.listen)")
            }
            guard !http.overlaps(metrics) else {
                throw SupervisorError(.nginxSite, "--http-listen \(http) is the metrics server's address "
                                                  + "(server.metricsListen \(metrics))")
            }
            values["@HTTP_LISTEN@"] = http.description
            values["@ACME_WEBROOT@"] = domain.acmeWebroot
            values["@HTTPS_URL@"] = "https://" + domain.domain + (listen.port == 443 ? "" : ":\(listen.port)")
        }
        return values
    }

    /// `server.listen` parsed against `ListenAddress`'s grammar: config.json is the service
    /// user's to write (by hand too), so the renderer refuses what the grammar refuses.
    /// With `tls`, plus `ssl` and `http2` (never read from config.json).
    static func listenAddress(_ c: Configuration, tls: Bool = false) throws -> ListenAddress {
        do {
            let listen = try ListenAddress(parsing: c.listen)
            return tls ? listen.withTLS() : listen
        } catch {
            throw SupervisorError(.nginxSite,
                                  "refusing to write the nginx configuration: config.json: \(error.message)")
        }
    }

    /// `server.metricsListen`, parsed against the same grammar.
    static func metricsListenAddress(_ c: Configuration) throws -> ListenAddress {
        do { return try ListenAddress(parsing: c.metricsListen, key: "server.metricsListen") } catch {
            throw SupervisorError(.nginxSite,
                                  "refusing to write the nginx configuration: config.json: \(error.message)")
        }
    }

    /// Characters nginx would split a directive at or read as its own syntax.
    static let unsafePathCharacters = Set<Character>(" \t\n\r;{}\"'$#\\")

    /// Refuses a value that is not what its placeholder's grammar allows. Nothing is escaped:
    /// a value with nginx syntax in it is an attack or a mistake, and either way not rendered.
    /// The listen address and the limits are rendered from parsed values (`ListenAddress`, `Int`).
    static func check(_ placeholder: String, _ value: String) throws {
        switch placeholder {
        case "@RUN_DIR@", "@LOG_DIR@", "@CONF_DIR@", "@DATA_DIR@", "@CONSOLE_DIR@":
            // The paths go into directives unquoted: one with a space (a checkout under "My
            // Projects") made nginx fail with "invalid number of arguments".
            guard let bad = value.first(where: { unsafePathCharacters.contains($0) }) else { return }
            throw SupervisorError(.nginxSite, "nginx cannot use the path \(value.debugDescription): "
                                              + "it contains \(String(bad).debugDescription). "
                                              + "Use a data directory (--data DIR) whose path has no spaces, quotes, "
                                              + "';', '{', '}', '$' or '#'")
        case "@USER@":
            let names = value.split(separator: " ", omittingEmptySubsequences: false)
            guard (1...2).contains(names.count), names.allSatisfy({ Configuration.isUserName(String($0)) }) else {
                throw SupervisorError(.nginxSite, "refusing to write the nginx configuration: nginx's user "
                                                  + "\(value.debugDescription) is not \"USER [GROUP]\" "
                                                  + "(ASCII letters, digits, '_', '-', '.'; see server.user)")
            }
        case "@START_ID@":
            guard !value.isEmpty, value.allSatisfy(\.isHexDigit), value.allSatisfy(\.isASCII) else {
                throw SupervisorError(.nginxSite, "refusing to write the nginx configuration: the start id "
                                                  + "\(value.debugDescription) is not hex")
            }
        case "@TLS_CERT@", "@TLS_KEY@", "@ACME_WEBROOT@":
            let what = ["@TLS_CERT@": "the TLS certificate", "@TLS_KEY@": "the TLS key",
                        "@ACME_WEBROOT@": "the ACME webroot"][placeholder]!
            guard value.hasPrefix("/") else {
                throw SupervisorError(.nginxSite, "refusing to write the nginx configuration: \(what) path "
                                                  + "\(value.debugDescription) is not absolute")
            }
            if let bad = value.first(where: {
                unsafePathCharacters.contains($0) || $0.isNewline
                    || ($0.asciiValue.map { $0 < 0x20 || $0 == 0x7f } ?? false)
            }) {
                throw SupervisorError(.nginxSite, "refusing to write the nginx configuration: \(what) path "
                                                  + "\(value.debugDescription) contains "
                                                  + "\(String(bad).debugDescription) (nginx would read it as "
                                                  + "syntax): use a path without spaces, quotes, ';', '{', '}', "
                                                  + "'$' or '#'")
            }
        case "@SERVER_NAME@":
            guard value == "_" || ListenAddress.isHostName(value) else {
                throw SupervisorError(.nginxSite, "refusing to write the nginx configuration: the domain "
                                                  + "\(value.debugDescription) is not a DNS host name "
                                                  + "(labels of ASCII letters, digits and '-', dot-separated)")
            }
        case "@HTTPS_URL@":
            let host = value.hasPrefix("https://") ? String(value.dropFirst(8)) : ""
            let colon = host.firstIndex(of: ":")
            let name = String(host[..<(colon ?? host.endIndex)])
            let port = colon.map { String(host[host.index(after: $0)...]) } ?? "443"
            guard ListenAddress.isHostName(name), let p = Int(port), (1...65535).contains(p),
                  port.allSatisfy({ ("0"..."9").contains($0) }) else {
                throw SupervisorError(.nginxSite, "refusing to write the nginx configuration: the redirect target "
                                                  + "\(value.debugDescription) is not https://HOST[:PORT]")
            }
        case "@TLS@", "@HTTP_SERVER@":
            let file = placeholder == "@TLS@" ? "tls.conf" : "http-redirect.conf"
            guard value.isEmpty else {
                guard value.hasPrefix("include /"), value.hasSuffix("/" + file + ";") else {
                    throw SupervisorError(.nginxSite, "refusing to write the nginx configuration: \(placeholder) "
                                                      + "\(value.debugDescription) is not an include of \(file)")
                }
                return try check("@CONF_DIR@", String(value.dropFirst(8).dropLast(file.count + 2)))
            }
        case "@OCSP_STAPLING@":
            let prefix = stapling + trustedCertificate
            guard value.isEmpty else {
                guard value.hasPrefix(prefix), value.hasSuffix(";") else {
                    throw SupervisorError(.nginxSite, "refusing to write the nginx configuration: \(placeholder) "
                                                      + "\(value.debugDescription) is not stapling with a chain file")
                }
                return try check("@TLS_CERT@", String(value.dropFirst(prefix.count).dropLast()))
            }
        case "@TLS_HEADERS@", "@H2_BODY_LIMIT@":
            let fixed = placeholder == "@TLS_HEADERS@" ? tlsHeaders : http2BodyLimit
            guard value.isEmpty || value == fixed else {
                throw SupervisorError(.nginxSite, "refusing to write the nginx configuration: \(placeholder) "
                                                  + "\(value.debugDescription) is not its fixed text")
            }
        case "@LISTEN@", "@METRICS_LISTEN@", "@HTTP_LISTEN@":
            let key = ["@LISTEN@": "server.listen", "@METRICS_LISTEN@": "server.metricsListen",
                       "@HTTP_LISTEN@": "--http-listen"][placeholder]!
            do { _ = try ListenAddress(parsing: value, key: key, allowingTLS: placeholder == "@LISTEN@") } catch {
                throw SupervisorError(.nginxSite, "refusing to write the nginx configuration: \(error.message)")
            }
        case "@CHALLENGE_RATE@", "@CHALLENGE_BURST@", "@FLAGS_KEEPALIVE@", "@FLAGS_STREAM_MAX@":
            guard !value.isEmpty, value.allSatisfy({ ("0"..."9").contains($0) }) else {
                throw SupervisorError(.nginxSite, "refusing to write the nginx configuration: \(placeholder) "
                                                  + "\(value.debugDescription) is not a whole number")
            }
        case "@FLAGS_STREAM_MEMORY@":
            guard value.count > 1, value.hasSuffix("M"),
                  value.dropLast().allSatisfy({ ("0"..."9").contains($0) }) else {
                throw SupervisorError(.nginxSite, "refusing to write the nginx configuration: \(placeholder) "
                                                  + "\(value.debugDescription) is not a whole number of MiB (32M)")
            }
        default:
            throw SupervisorError(.nginxSite, "no grammar for the placeholder \(placeholder): refusing to render it")
        }
    }

    private func render(_ files: [String], values: [String: String], overrides: [String: [String: String]],
                        absentPools: [String], into directory: String,
                        write: (_ path: String, _ text: String) throws -> Void = {
                            try FileIO.writeAtomically($0, text: $1)
                        }) throws {
        for file in files {
            guard var text = try FileIO.readText(templates + "/" + file) else {
                throw SupervisorError(.nginxSite, "cannot read \(templates)/\(file)")
            }
            for pool in absentPools {
                let message = "this server does not run the \(pool) responder yet"
                text = text.replacingAll("fastcgi_pass unix:@RUN_DIR@/\(pool).sock;", with:
                    "default_type application/json; return 501 "
                    + "'{\"error\":\"\(message)\",\"code\":\"not_implemented\","
                    + "\"requestId\":\"$request_id\",\"reason\":\"\(message)\"}\\n';")
            }
            for (placeholder, value) in values.merging(overrides[file] ?? [:], uniquingKeysWith: { $1 }) {
                try Self.check(placeholder, value)
                if value.isEmpty && Self.optionalPlaceholders.contains(placeholder) {
                    // The whole line goes blank (its newline stays: a line count nobody's value changed).
                    text = text.split(separator: "\n", omittingEmptySubsequences: false)
                        .map { $0.trimmingPrefix(while: { $0 == " " }) == placeholder ? "" : $0 }
                        .joined(separator: "\n")
                }
                text = text.replacingAll(placeholder, with: value)
            }
            if let leftover = text.firstMatch(of: /@[A-Z_]+@/) {
                throw SupervisorError(.nginxSite, "\(templates)/\(file) has a placeholder "
                                                  + "this attestctl does not know: \(leftover.0)")
            }
            try write(directory + "/" + file, text)
        }
    }

    /// The flag stream's placeholders in site.conf: nchan's keepalive interval
    /// (`flags.keepaliveSeconds`), how long a stream stays open (`flags.streamMaxSeconds`) and
    /// its shared memory (`flags.streamMemoryMiB`, as `32M`).
    static func flagStreamValues(_ c: Configuration) -> [String: String] {
        ["@FLAGS_KEEPALIVE@": String(c.flagStreamKeepaliveSeconds),
         "@FLAGS_STREAM_MAX@": String(c.flagStreamMaxSeconds),
         "@FLAGS_STREAM_MEMORY@": "\(c.flagStreamMemoryMiB)M"]
    }

    /// Debian's nchan module (`libnginx-mod-nchan`), which nginx.conf loads by this absolute
    /// path: our nginx runs with `-p DATA/run`, where the package's relative `modules/…` is not.
    package static let nchanModule = "/usr/lib/nginx/modules/ngx_nchan_module.so"

    /// A random start id: 16 bytes, hex.
    static func newStartID() -> String {
        SystemRandom().bytes(16).map { String($0 >> 4, radix: 16) + String($0 & 15, radix: 16) }.joined()
    }

    /// The `user` line value for nginx's workers: the invoking user and group.
    static func currentUser() -> String {
        guard let pw = getpwuid(geteuid()), let gr = getgrgid(getegid()) else { return "nobody" }
        return String(cString: pw.pointee.pw_name) + " " + String(cString: gr.pointee.gr_name)
    }
}
