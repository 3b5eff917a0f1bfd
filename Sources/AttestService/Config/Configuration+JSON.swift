import AttestCore

/// Reading and writing `config.json`: nested objects whose leaves are the dotted keys of
/// `ConfigurationKey.all`. Unknown keys and ill-typed values are errors naming the key.
extension Configuration {
    public struct Problem: Error, CustomStringConvertible, Sendable {
        public let message: String
        public var description: String { message }
    }

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
                throw Problem(message: "config.json: unknown key \"\(name)\" (see 'attestctl config show' for the keys)")
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
        let parts = listen.split(separator: ":")
        guard parts.count >= 2, let port = Int(parts.last!), (1...65535).contains(port) else {
            throw Problem(message: "config.json: server.listen must be host:port, got \"\(listen)\"")
        }
        if storeBackend == "postgres" && postgresURL.isEmpty {
            throw Problem(message: "config.json: store.backend is \"postgres\" but store.postgres.url is empty (set it first)")
        }
    }

    /// Sets one dotted key from JSON text (`attestctl config set`).
    public mutating func set(_ name: String, jsonValue text: String) throws(Problem) {
        guard let key = ConfigurationKey.named(name) else {
            throw Problem(message: "unknown key \"\(name)\" (see 'attestctl config show')")
        }
        var value: JSONValue
        do { value = try JSONParser.parse(text) } catch {
            // A bare word is taken as a string, so `config set store.sync interval` works.
            value = .string(text)
        }
        if let problem = key.problem(with: value) { throw Problem(message: "\(name) \(problem)") }
        key.set(&self, value)
        try validate()
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
