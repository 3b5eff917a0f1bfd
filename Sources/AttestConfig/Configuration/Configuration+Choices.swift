/// The choice-valued keys' values. Each raw value is the key's spelling in `config.json`, so
/// the file reads and writes as it did when these were strings; `ConfigurationKey.choice`
/// takes the allowed spellings from `allCases`, in declaration order (the order a refusal
/// lists them in).
extension Configuration {
    /// `server.requestLog`.
    public enum RequestLog: String, CaseIterable, Sendable {
        case errors, all
    }

    /// `store.backend`.
    public enum StoreBackend: String, CaseIterable, Sendable {
        case lmdb, postgres
    }

    /// `store.sync` (`StoreOptions.Sync`, with `store.syncIntervalMs`).
    public enum Sync: String, CaseIterable, Sendable {
        case commit, interval
    }

    /// `tokens.algorithm`: the algorithm of new signing keys (`KeyRing.rotate`).
    public enum TokenAlgorithm: String, CaseIterable, Sendable {
        case es256 = "ES256"
        case rs256 = "RS256"
    }

    /// `tokens.audience`: what a token's `aud` is (`TokenIssuer`).
    public enum TokenAudience: String, CaseIterable, Sendable {
        /// The App ID, `TEAMID.bundleId`, unique to one team's app.
        case appId
        /// The bundle ID alone (the hosted service's contract, docs/contract.md §5), which two
        /// teams' apps can share.
        case bundle
    }
}
