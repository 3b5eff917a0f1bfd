import AttestConfig
import AttestCore
#if canImport(Glibc)
import Glibc
#endif

extension KeyRing {
    /// Makes a new key and publishes it in jwks.json at once; it signs from
    /// `now + publicationDelay` (from `now` when the delay is 0 or no key is active, as for
    /// the first key). Every other key that would still sign then retires at that moment
    /// (its private key is deleted) and leaves jwks.json `overlap` seconds later, or then if it
    /// never signed (a pending key overtaken by a rotation with a shorter delay). Writes the
    /// private key (0600), then, holding the lock, jwks.json and index.json in that order, so
    /// no index names a key jwks.json lacks. Withdrawn entries are dropped from the index.
    @discardableResult
    public func rotate(algorithm: String, now: Timestamp, publicationDelay: Int64, overlap: Int64) throws -> KeyEntry {
        let key = try SigningKey.generate(algorithm == "RS256" ? .rsa2048 : .p256)
        let kid = try JWK.thumbprint(of: key)
        let file = "key-\(now.seconds)-\(kid.prefix(8)).pem"
        try FileIO.writeAtomically(directory + "/" + file, text: key.pemEncoded, mode: 0o600)
        let entry = try withLock { () throws -> KeyEntry in
            try reload()
            let activateAt = activeEntry(at: now) == nil ? now : now + max(0, publicationDelay)
            var updated = entries.filter { $0.state(at: now) != .withdrawn }
            for i in updated.indices where updated[i].retireAt.map({ $0 > activateAt }) ?? true {
                updated[i].retireAt = activateAt
                // It signed, or will before `activateAt`, unless it is still pending then.
                let signs = updated[i].activateAt <= now || updated[i].activateAt < activateAt
                updated[i].withdrawAt = signs ? activateAt + max(0, overlap) : activateAt
            }
            let entry = KeyEntry(kid: kid, algorithm: key.jwtAlgorithm, file: file, jwk: try JWK.publicJWK(of: key),
                                 publishAt: now, activateAt: activateAt)
            updated.insert(entry, at: 0)
            try FileIO.writeAtomically(jwksPath, text: KeyIndex.jwksText(updated, at: now), mode: 0o644)
            // Private keys of dropped (withdrawn) entries, should a process not have deleted them.
            for gone in entries where !updated.contains(where: { $0.kid == gone.kid }) {
                unlink(directory + "/" + gone.file)
            }
            try FileIO.writeAtomically(indexPath, text: KeyIndex.json(updated).prettyJSONText + "\n", mode: 0o600)
            try reload()
            return entry
        }
        try publish(now: now)  // deletes the private keys retired at `now` (a rotation without delay)
        return entry
    }
}
