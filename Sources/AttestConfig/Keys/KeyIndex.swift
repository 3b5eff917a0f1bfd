import AttestCore

/// The JSON of `keys/index.json` (`{"keys": [KeyEntry, …]}`, newest first) and of jwks.json.
package enum KeyIndex {
    package static func json(_ entries: [KeyEntry]) -> JSONValue {
        ["keys": .array(entries.map { e in
            .object([("kid", .string(e.kid)), ("algorithm", .string(e.algorithm)), ("file", .string(e.file)),
                     ("jwk", e.jwk ?? .null), ("publishAt", .string(e.publishAt.iso8601)),
                     ("activateAt", .string(e.activateAt.iso8601)), ("retireAt", time(e.retireAt)),
                     ("withdrawAt", time(e.withdrawAt))])
        })]
    }

    package static func time(_ t: Timestamp?) -> JSONValue { t.map { .string($0.iso8601) } ?? .null }

    /// Parses an index. Entries written before lifecycles (`createdAt`, `retiresAt`) read as:
    /// published and active from `createdAt`, retired when the next newer key was created,
    /// withdrawn at `retiresAt`.
    static func parse(_ text: String) throws -> [KeyEntry] {
        let root = try JSONParser.parse(text)
        guard let list = root["keys"]?.arrayValue else {
            throw ConfigError(.keyRing, "keys/index.json has no keys array")
        }
        var entries = [KeyEntry]()
        for item in list {
            guard let kid = item["kid"]?.stringValue, let algorithm = item["algorithm"]?.stringValue,
                  let file = item["file"]?.stringValue, !file.contains("/"), !file.hasPrefix(".") else {
                throw ConfigError(.keyRing, "keys/index.json has a malformed entry")
            }
            func time(_ name: String) throws -> Timestamp? {
                guard let value = item[name], !value.isNull else { return nil }
                guard let t = value.stringValue.flatMap(Timestamp.init(iso8601:)) else {
                    throw ConfigError(.keyRing, "keys/index.json: \(name) of \(kid) is not an ISO 8601 time")
                }
                return t
            }
            let jwk = item["jwk"].flatMap { $0.objectValue == nil ? nil : $0 }
            if let publishAt = try time("publishAt") {
                guard let activateAt = try time("activateAt") else {
                    throw ConfigError(.keyRing, "keys/index.json: \(kid) has no activateAt")
                }
                entries.append(KeyEntry(kid: kid, algorithm: algorithm, file: file, jwk: jwk, publishAt: publishAt,
                                        activateAt: activateAt, retireAt: try time("retireAt"),
                                        withdrawAt: try time("withdrawAt")))
            } else if let created = try time("createdAt") {
                let retires = try time("retiresAt")
                let successor = entries.last.map(\.publishAt)
                entries.append(KeyEntry(kid: kid, algorithm: algorithm, file: file, jwk: jwk, publishAt: created,
                                        activateAt: created, retireAt: retires.map { min($0, successor ?? $0) },
                                        withdrawAt: retires))
            } else {
                throw ConfigError(.keyRing, "keys/index.json: \(kid) has neither publishAt nor createdAt")
            }
        }
        return entries
    }

    /// The JWKS of the keys published at `now`, newest first: `{"keys":[JWK,…]}` and a newline.
    package static func jwksText(_ entries: [KeyEntry], at now: Timestamp) -> String {
        let keys = entries.filter { $0.state(at: now).isPublished }.compactMap(\.jwk)
        return JSONValue.object([("keys", .array(keys))]).jsonText + "\n"
    }
}
