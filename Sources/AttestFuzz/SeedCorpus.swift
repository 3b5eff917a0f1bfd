import AttestCore
import AttestService
import AttestTesting

/// The synthetic part of the seed corpus (`attest-fuzz seed DIR`): real objects for every
/// target, built from Apple's guide sample and the fixed fuzz keys. Returns inputs by target.
public enum SeedCorpus {
    public static func make() throws -> [String: [[UInt8]]] {
        let sample = AppleSample.attestationObject
        let sampleObject = try AttestationObject(cborEncoded: sample[...])
        let device = try SoftwareDevice(key: FuzzKeys.device)
        let appID = FuzzService.appID
        let production = try device.synthetic(clientDataHash: FuzzKeys.clientDataHash, appID: appID)
            .build(pki: FuzzKeys.pki, at: FuzzKeys.verifyAt)
        let development = try device.synthetic(clientDataHash: FuzzKeys.clientDataHash, appID: appID,
                                               environment: .development)
            .build(pki: FuzzKeys.pki, at: FuzzKeys.verifyAt)
        let assertion = try device.assertion(clientDataHash: FuzzKeys.clientDataHash, appID: appID, counter: 2)
        let replay = try device.assertion(clientDataHash: FuzzKeys.clientDataHash, appID: appID, counter: 1)
        let assertionAuthData = try Assertion(cborEncoded: assertion[...]).authenticatorData

        var seeds = [String: [[UInt8]]]()
        seeds["cbor"] = [sample, production.attestationObject, assertion, [0xA0], [0x80],
                         CBORWriter.encode(.map([CBORMapEntry(key: .unsigned(1),
                                                              value: .array([.negative(6), .bool(true), .null]))]))]
        seeds["receipt"] = [Array(sampleObject.receipt), Array(sampleObject.receipt.prefix(1200))]
        seeds["der"] = sampleObject.x5c.map(Array.init)
            + [production.credentialCertificate, FuzzKeys.pki.intermediateDER, FuzzKeys.pki.rootCertificate.derEncoded]
        seeds["authdata"] = [Array(sampleObject.authData), production.authenticatorData, development.authenticatorData,
                             Array(assertionAuthData)]
        seeds["attestation"] = [[0] + sample, [1] + production.attestationObject, [3] + development.attestationObject]
        seeds["assertion"] = [assertion, replay,
                              try device.assertion(clientDataHash: FuzzKeys.clientDataHash,
                                                   appID: "OTHERTEAM1.x", counter: 3)]
        seeds["request"] = requestBodies(device: device, production: production).map { [$0.0] + $0.1 }
        let challenge = ChallengeAuthority(secret: ChallengeTarget.secret)
        seeds["challenge"] = [Array(challenge.issue(appID: appID, issued: ChallengeTarget.now,
                                                    expiry: ChallengeTarget.now + 300, id: Array(0..<16)).utf8),
                              Array(challenge.issue(appID: nil, issued: ChallengeTarget.now - 301,
                                                    expiry: ChallengeTarget.now - 1, id: Array(16..<32)).utf8),
                              [1, 1] + [UInt8](repeating: 0x7F, count: 8) + Array(0..<16)]
        let claims: JSONValue = ["sub": "device", "exp": 1_780_000_000,
                                 "custom_claims": ["tier": "pro", "n": [1, .double(2.5), nil, true]]]
        seeds["jwt"] = [Array(try JWTSigner(key: FuzzKeys.tokenKey).sign(claims).utf8), claims.jsonBytes]
        seeds["fastcgi"] = requestBodies(device: device, production: production).map { endpoint, body in
            FastCGIRecords.request(params: [("REQUEST_METHOD", endpoint == 2 ? "GET" : "POST"),
                                            ("DOCUMENT_URI",
                                             [Endpoint.validate, .refresh, .challenge][Int(endpoint)].path),
                                            ("REQUEST_ID", "seed"), ("HTTP_X_BUNDLE_ID", FuzzService.bundleID),
                                            ("HTTP_X_TEAM_ID", FuzzService.teamID),
                                            ("CONTENT_LENGTH", "\(body.count)")],
                                   body: body)
        }
        return seeds
    }

    /// Bodies by endpoint selector (0 validate, 1 refresh, 2 challenge) with the request
    /// target's placeholders.
    static func requestBodies(device: SoftwareDevice, production: SyntheticAttestation.Built) -> [(UInt8, [UInt8])] {
        let app: [(String, JSONValue)] = [("bundleId", .string(FuzzService.bundleID)),
                                          ("teamId", .string(FuzzService.teamID))]
        let proof: [(String, JSONValue)] = [("challenge", "@CHALLENGE@"), ("clientDataHash", "@CDH@"),
                                            ("keyId", .string(Base64.encode(device.keyID)))]
        let validate = JSONValue.object(proof + app
                                        + [("attestationObject", .string(Base64.encode(production.attestationObject))),
                                           ("deviceModel", "iPhone15,2"), ("deviceFingerprint", "fp-1"),
                                           ("subjectId", "")])
        let assertion = (try? device.assertion(clientDataHash: FuzzKeys.clientDataHash, appID: FuzzService.appID,
                                               counter: 9)) ?? []
        let refresh = JSONValue.object(proof + [("assertion", .string(Base64.encode(assertion))),
                                                ("subjectId", "family-1")])
        return [(0, validate.jsonBytes), (1, refresh.jsonBytes), (2, []),
                (0, Array(#"{"keyId":"\u00e9\ud83d\ude00","bundleId":1e3,"teamId":[true,null,-0.5]}"#.utf8))]
    }
}
