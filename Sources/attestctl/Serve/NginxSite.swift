import AttestCore
import AttestService
#if canImport(Glibc)
import Glibc
#endif

/// Renders the deployment files of `nginx/` (nginx.conf, site.conf, fastcgi_params) into a
/// data directory, replacing their `@NAME@` placeholders. The templates are the repository's
/// own files, found beside the binaries (`.build/<config>/` → `nginx/`), under
/// /usr/local/share/attestedge/nginx, or where `--nginx-templates` says.
struct NginxSite {
    static let files = ["nginx.conf", "site.conf", "fastcgi_params"]

    let templates: String

    static func locate(_ explicit: String?) throws -> NginxSite {
        var candidates = [String]()
        if let explicit { candidates.append(explicit) }
        let exe = executableDirectory()
        candidates += [exe + "/../../nginx", exe + "/../../../nginx", exe + "/../share/attestedge/nginx",
                       "/usr/local/share/attestedge/nginx", "/usr/share/attestedge/nginx"]
        for dir in candidates where files.allSatisfy({ FileIO.exists(dir + "/" + $0) }) {
            return NginxSite(templates: dir)
        }
        throw CommandFailure("cannot find the nginx templates (\(files.joined(separator: ", "))); pass --nginx-templates DIR (the repository's nginx/)")
    }

    /// Writes the rendered files into `data.nginxDirectory`; returns the nginx.conf path.
    /// `user` is nginx.conf's `user` line (`name group`); `startID` the id nginx's readiness
    /// server answers (a fresh random one per start). Locations of pools in `absentPools`
    /// (responders this build does not have yet) answer 501 `not_implemented` as JSON instead
    /// of passing to a socket nobody listens on.
    func render(data: DataDirectory, configuration c: Configuration, user: String, startID: String, absentPools: [String]) throws -> String {
        let values = [
            "@LISTEN@": c.listen, "@RUN_DIR@": data.runDirectory, "@LOG_DIR@": data.logDirectory,
            "@CONF_DIR@": data.nginxDirectory, "@DATA_DIR@": data.path, "@USER@": user, "@START_ID@": startID,
            "@CHALLENGE_RATE@": String(c.challengePerIPPerSecond), "@CHALLENGE_BURST@": String(c.challengeBurst),
        ]
        try render(Self.files, values: values, absentPools: absentPools, into: data.nginxDirectory)
        return data.nginxDirectory + "/nginx.conf"
    }

    /// The files a system nginx includes (site.conf, fastcgi_params) for a host install:
    /// sockets in `runDirectory`, the data directory's jwks.json served from `data`, and the
    /// site's `include` of fastcgi_params pointing at `outputDirectory`.
    func renderForHost(data: DataDirectory, configuration c: Configuration, runDirectory: String, into outputDirectory: String) throws {
        let values = [
            "@LISTEN@": c.listen, "@RUN_DIR@": runDirectory, "@CONF_DIR@": outputDirectory, "@DATA_DIR@": data.path,
            "@CHALLENGE_RATE@": String(c.challengePerIPPerSecond), "@CHALLENGE_BURST@": String(c.challengeBurst),
        ]
        try render(["site.conf", "fastcgi_params"], values: values, absentPools: [], into: outputDirectory)
    }

    /// Characters nginx would split a directive at or read as its own syntax.
    static let unsafePathCharacters = Set<Character>(" \t\n\r;{}\"'$#\\")

    private func render(_ files: [String], values: [String: String], absentPools: [String], into directory: String) throws {
        // The paths go into directives unquoted: one with a space (a checkout under "My
        // Projects") made nginx fail with "invalid number of arguments".
        for placeholder in ["@RUN_DIR@", "@LOG_DIR@", "@CONF_DIR@", "@DATA_DIR@"] {
            guard let path = values[placeholder], let bad = path.first(where: { Self.unsafePathCharacters.contains($0) }) else { continue }
            throw CommandFailure("nginx cannot use the path \(path.debugDescription): it contains \(String(bad).debugDescription). "
                                 + "Use a data directory (--data DIR) whose path has no spaces, quotes, ';', '{', '}', '$' or '#'")
        }
        for file in files {
            guard var text = try FileIO.readText(templates + "/" + file) else { throw CommandFailure("cannot read \(templates)/\(file)") }
            for pool in absentPools {
                let message = "this server does not run the \(pool) responder yet"
                text = text.replacingAll("fastcgi_pass unix:@RUN_DIR@/\(pool).sock;", with:
                    "default_type application/json; return 501 '{\"error\":\"\(message)\",\"code\":\"not_implemented\",\"requestId\":\"$request_id\",\"reason\":\"\(message)\"}\\n';")
            }
            for (placeholder, value) in values { text = text.replacingAll(placeholder, with: value) }
            if let leftover = text.firstMatch(of: /@[A-Z_]+@/) {
                throw CommandFailure("\(templates)/\(file) has a placeholder this attestctl does not know: \(leftover.0)")
            }
            try FileIO.writeAtomically(directory + "/" + file, text: text)
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

extension String {
    func replacingAll(_ target: String, with replacement: String) -> String {
        guard !target.isEmpty else { return self }
        var out = ""
        var rest = self[...]
        while let range = rest.firstRange(of: target) {
            out += rest[..<range.lowerBound]
            out += replacement
            rest = rest[range.upperBound...]
        }
        return out + rest
    }
}
