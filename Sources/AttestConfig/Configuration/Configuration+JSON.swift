import AttestCore

/// Reading and writing `config.json`: nested objects whose leaves are the dotted keys of
/// `ConfigurationKey.all`. Unknown keys and ill-typed values are errors naming the key.
extension Configuration {
    /// A refused config.json or setting: `ConfigError` with code `invalid`.
    public typealias Problem = ConfigError

    /// Parses a configuration file's text over the defaults.
    public init(jsonText: String) throws(Problem) {
        self.init()
        let root: JSONValue
        do { root = try JSONParser.parse(jsonText) } catch {
            throw Problem(message: "config.json is not valid JSON: \(error.reason)")
        }
        guard root.objectValue != nil else { throw Problem(message: "config.json must hold a JSON object") }
        var leaves = [(String, JSONValue)]()
        Self.flatten(root, prefix: "", into: &leaves)
        for (name, value) in leaves {
            guard let key = ConfigurationKey.named(name) else {
                throw Problem(message: "config.json: unknown key \"\(name)\" "
                                       + "(see 'attestctl config show' for the keys)")
            }
            if let problem = key.problem(with: value) {
                throw Problem(message: "config.json: \(name) \(problem)")
            }
            key.set(&self, value)
        }
        try validate()
    }

    /// Cross-key checks.
    public func validate() throws(Problem) {
        let main: ListenAddress, metrics: ListenAddress
        do { main = try ListenAddress(parsing: listen) } catch {
            throw Problem(message: "config.json: " + error.message)
        }
        do { metrics = try ListenAddress(parsing: metricsListen, key: "server.metricsListen") } catch {
            throw Problem(message: "config.json: " + error.message)
        }
        // Compared as addresses, not text: on one socket nginx would route /metrics to the main
        // site, or (a wildcard) expose the metrics server on every address of the API's port.
        if metrics.overlaps(main) {
            throw Problem(message: "config.json: server.metricsListen must be another socket than server.listen "
                                   + "(another port, or two different non-wildcard hosts), got "
                                   + "\(metricsListen.debugDescription) and \(listen.debugDescription)")
        }
        guard Self.isUserName(serviceUser) else {
            throw Problem(message: "config.json: server.user must be a user name "
                                   + "(ASCII letters, digits, '_', '-', '.'; not '-' first; "
                                   + "at most 32), got \(serviceUser.debugDescription)")
        }
        if storeBackend == .postgres && postgresURL.isEmpty {
            throw Problem(message: "config.json: store.backend is \"postgres\" but store.postgres.url is empty "
                                   + "(set it first)")
        }
    }

    /// `server.user`'s grammar (root writes it into nginx.conf's `user` line): 1 to 32 ASCII
    /// letters, digits, `_`, `-` or `.`, not starting with `-`.
    public static func isUserName(_ name: String) -> Bool {
        (1...32).contains(name.utf8.count) && name.first != "-"
            && name.unicodeScalars.allSatisfy {
                $0.isASCII
                    && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || "-_.".unicodeScalars.contains($0))
            }
    }

    /// Sets one dotted key from JSON text (`attestctl config set`).
    /// `validating` false: only the key's own rule, for a caller that sets several keys that
    /// depend on each other (`--listen` and `--metrics-listen`) and then calls `validate()`.
    public mutating func set(_ name: String, jsonValue text: String, validating: Bool = true) throws(Problem) {
        guard let key = ConfigurationKey.named(name) else {
            throw Problem(message: "unknown key \"\(name)\" (see 'attestctl config show')")
        }
        var value: JSONValue
        do { value = try JSONParser.parse(text) } catch {
            // A bare word is taken as a string, so `config set store.sync interval` works.
            value = .string(text)
        }
        if let problem = key.problem(with: value) { throw Problem(message: "\(name) \(problem)") }
        var changed = self
        key.set(&changed, value)
        if validating { try changed.validate() }  // a refused value is not kept
        self = changed
    }

    /// The full configuration as nested JSON, every key present.
    public var json: JSONValue {
        var root = [(String, JSONValue)]()
        for key in ConfigurationKey.all {
            let parts = key.name.split(separator: ".").map(String.init)
            Self.insert(key.get(self), at: parts[...], into: &root)
        }
        return .object(root)
    }

    static func flatten(_ value: JSONValue, prefix: String, into out: inout [(String, JSONValue)]) {
        if let members = value.objectValue, !(prefix.isEmpty == false && ConfigurationKey.named(prefix) != nil) {
            for (k, v) in members { flatten(v, prefix: prefix.isEmpty ? k : prefix + "." + k, into: &out) }
        } else {
            out.append((prefix, value))
        }
    }

    static func insert(_ value: JSONValue, at path: ArraySlice<String>, into members: inout [(String, JSONValue)]) {
        guard let head = path.first else { return }
        if path.count == 1 { members.append((head, value)); return }
        if let i = members.firstIndex(where: { $0.0 == head }), case .object(var inner) = members[i].1 {
            insert(value, at: path.dropFirst(), into: &inner)
            members[i].1 = .object(inner)
        } else {
            var inner = [(String, JSONValue)]()
            insert(value, at: path.dropFirst(), into: &inner)
            members.append((head, .object(inner)))
        }
    }
}
