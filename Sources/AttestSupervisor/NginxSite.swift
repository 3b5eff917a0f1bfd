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

    let templates: String

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
    func render(data: DataDirectory, configuration c: Configuration, user: String, startID: String,
                absentPools: [String],
                write: (_ path: String, _ text: String) throws -> Void = {
                    try FileIO.writeAtomically($0, text: $1)
                }) throws -> String {
        let listen = try Self.listenAddress(c)
        let values = [
            "@LISTEN@": listen.description, "@METRICS_LISTEN@": try Self.metricsListenAddress(c).description,
            "@RUN_DIR@": data.runDirectory, "@LOG_DIR@": data.logDirectory,
            "@CONF_DIR@": data.nginxDirectory, "@DATA_DIR@": data.path, "@USER@": user, "@START_ID@": startID,
            "@CHALLENGE_RATE@": String(c.challengePerIPPerSecond), "@CHALLENGE_BURST@": String(c.challengeBurst),
        ]
        // nginx.conf's readiness server shares the address with site.conf's server: nginx takes
        // a socket option (reuseport) on one of them only.
        try render(Self.files, values: values,
                   overrides: ["nginx.conf": ["@LISTEN@": listen.directive(socketOptions: false)]],
                   absentPools: absentPools, into: data.nginxDirectory, write: write)
        return data.nginxDirectory + "/nginx.conf"
    }

    /// The files a system nginx includes (site.conf, fastcgi_params) for a host install:
    /// sockets in `runDirectory`, the data directory's jwks.json served from `data`, and the
    /// site's `include` of fastcgi_params pointing at `outputDirectory`. With `logDirectory`,
    /// also nginx.conf, for an nginx of its own rather than the system's (the benchmarks' and
    /// nginx/e2e/fastcgi.sh's): its logs there, its workers as the invoking user.
    package func renderForHost(data: DataDirectory, configuration c: Configuration, runDirectory: String,
                       into outputDirectory: String, logDirectory: String? = nil) throws {
        let listen = try Self.listenAddress(c)
        var values = [
            "@LISTEN@": listen.description, "@METRICS_LISTEN@": try Self.metricsListenAddress(c).description,
            "@RUN_DIR@": runDirectory, "@CONF_DIR@": outputDirectory,
            "@DATA_DIR@": data.path,
            "@CHALLENGE_RATE@": String(c.challengePerIPPerSecond), "@CHALLENGE_BURST@": String(c.challengeBurst),
        ]
        guard let logDirectory else {
            return try render(["site.conf", "fastcgi_params"], values: values, overrides: [:], absentPools: [],
                              into: outputDirectory)
        }
        values["@LOG_DIR@"] = logDirectory
        values["@USER@"] = Self.currentUser()
        values["@START_ID@"] = Self.newStartID()
        let readiness = ["@LISTEN@": listen.directive(socketOptions: false)]
        try render(Self.files, values: values, overrides: ["nginx.conf": readiness], absentPools: [],
                   into: outputDirectory)
    }

    /// `server.listen` parsed against `ListenAddress`'s grammar: config.json is the service
    /// user's to write (by hand too), so the renderer refuses what the grammar refuses.
    static func listenAddress(_ c: Configuration) throws -> ListenAddress {
        do { return try ListenAddress(parsing: c.listen) } catch {
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
        case "@RUN_DIR@", "@LOG_DIR@", "@CONF_DIR@", "@DATA_DIR@":
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
        case "@LISTEN@", "@METRICS_LISTEN@":
            let key = placeholder == "@LISTEN@" ? "server.listen" : "server.metricsListen"
            do { _ = try ListenAddress(parsing: value, key: key) } catch {
                throw SupervisorError(.nginxSite, "refusing to write the nginx configuration: \(error.message)")
            }
        case "@CHALLENGE_RATE@", "@CHALLENGE_BURST@":
            guard !value.isEmpty, value.allSatisfy({ ("0"..."9").contains($0) }) else {
                throw SupervisorError(.nginxSite, "refusing to write the nginx configuration: \(placeholder) "
                                                  + "\(value.debugDescription) is not a whole number")
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
                text = text.replacingAll(placeholder, with: value)
            }
            if let leftover = text.firstMatch(of: /@[A-Z_]+@/) {
                throw SupervisorError(.nginxSite, "\(templates)/\(file) has a placeholder "
                                                  + "this attestctl does not know: \(leftover.0)")
            }
            try write(directory + "/" + file, text)
        }
    }

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
