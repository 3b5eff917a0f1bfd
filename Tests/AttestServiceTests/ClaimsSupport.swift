import AttestCore
import AttestService
import AttestStore
import AttestTesting
import Testing

/// Helpers for the claims, subjects, flags and risk suites (issue #9).
extension DeviceFlow {
    /// Stores `json` as the app's claims text, as it is on disk (either format), bypassing the CLI's checks.
    func setStoredClaims(_ json: String) throws {
        try context.store.write { txn in
            var app = try #require(try txn.app(id: Fixture.appID))
            app.customClaimsJSON = json
            try txn.put(app)
        }
    }

    func setClaims(_ rules: [ClaimRule]) throws { try setStoredClaims(CustomClaims.encode(rules)) }

    func setApp(_ change: (inout AppRecord) -> Void) throws {
        try context.store.write { txn in
            var app = try #require(try txn.app(id: Fixture.appID))
            change(&app)
            try txn.put(app)
        }
    }

    /// Validates a new key for `device` with extra body members; returns status and body.
    func attest(_ device: SoftwareDevice, _ extra: [(String, JSONValue)] = [],
                environment: AppAttestEnvironment = .production) throws -> (Int, JSONValue) {
        post(.validate, try validateBody(challenge: try fixture.challenge(), device: device, environment: environment,
                                         extra: extra))
    }

    /// Refreshes `self.device` with extra body members; returns status and body.
    func refresh(_ extra: [(String, JSONValue)] = []) throws -> (Int, JSONValue) {
        let body = try refreshBody(challenge: try fixture.challenge())
        return post(.refresh, .object(body.objectValue! + extra))
    }

    /// The claims of the token in a 200 body.
    static func claims(_ body: JSONValue) throws -> JSONValue {
        try JWT(compact: try #require(body["token"]?.stringValue)).claims
    }

    func flag(_ action: DeviceFlags.Action, _ keyID: [UInt8]? = nil,
              reason: String = "test") throws -> DeviceFlags.Change {
        try DeviceFlags.apply(action, keyID: keyID ?? device.keyID, reason: reason, store: context.store,
                              random: SystemRandom(), now: fixture.clock.now())
    }

    func outbox() throws -> [OutboxEvent] { try context.store.read { try $0.outbox() }.map(\.event) }
}

/// A rule from its `--when` text.
func rule(_ key: String, _ value: JSONValue, when: String? = nil) throws -> ClaimRule {
    ClaimRule(key: key, value: value, condition: try when.map { try ClaimCondition(text: $0, claim: key) })
}
