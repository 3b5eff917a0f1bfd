import AttestConfig
import AttestCore
import AttestOperations
import AttestService
import AttestStore
import CLISupport

/// `attestctl receipts try`: one redemption with Apple now, printed, nothing written.
enum ReceiptsTry {
    static func run(_ data: DataDirectory, team: String?, file: String?, environment: String?) throws -> Int32 {
        guard let team else { throw UsageError("try needs --team") }
        guard DeviceCheckKey.isIdentifier(team) else {
            throw UsageError("--team: an Apple team id is ten upper-case letters or digits")
        }
        let (config, store) = try openStore(data)
        guard let key = try AppleKeyStore(data).key(team: team) else {
            throw CommandFailure(.notFound, "no DeviceCheck key for team \(team) (attestctl apple key add)")
        }
        let receipt: [UInt8], env: AppAttestEnvironment, anchor: DeviceRecord.Anchor
        var device: DeviceRecord?
        if let file {
            guard let bytes = try FileIO.read(file) else { throw CommandFailure(.notFound, "\(file) does not exist") }
            receipt = try receiptBytes(bytes, path: file)
            guard let chosen = AppAttestEnvironment(rawValue: environment ?? "production") else {
                throw UsageError("--environment is production or development")
            }
            (env, anchor) = (chosen, .apple)
        } else {
            let found: (DeviceRecord, ReceiptRecord)? = try store.read { txn in
                var best: (DeviceRecord, ReceiptRecord)?
                for d in try txn.devices(limit: 100_000) where DeviceCheckKey.teamID(ofAppID: d.appID) == team {
                    // Only a receipt that verified: an invalid one is whatever bytes a device
                    // sent, never worth sending to Apple with the team's token.
                    guard best == nil || d.lastSeenAt > best!.0.lastSeenAt,
                          let r = try txn.receiptRecord(keyID: d.keyID), r.check == .valid else { continue }
                    best = (d, r)
                }
                return best
            }
            guard let found else {
                throw CommandFailure(.notFound, "no verified receipt of team \(team) stored: pass --receipt FILE")
            }
            device = found.0
            (receipt, env, anchor) = (found.1.receipt, found.0.environment, found.0.anchor)
        }
        let time = now()
        let url = AppleEndpoint.url(base: config.receiptAppleURL, environment: env)
        let token = try ProviderToken(key: key).token(at: time)
        Output.out("POST \(url) (team \(team), key \(key.keyID), \(receipt.count)-byte receipt)")
        let answer = CurlAppleTransport(caFile: config.receiptAppleCAFile)
            .post(url: url, headers: [("Authorization", config.receiptAuthorizationPrefix + token)],
                  body: Array(Base64.encode(receipt).utf8), timeoutSeconds: 30)
        let outcome = RedemptionOutcome.classify(status: answer.status, body: answer.body, error: answer.error)
        let code = answer.status == 0 ? "none" : String(answer.status)
        Output.out("answer: \(code) \(outcome.kind.rawValue): \(outcome.text)")
        let next = config.receiptSchedule.next(after: outcome, at: time, failures: outcome.backsOff ? 1 : 0,
                                               notBefore: nil, expiresAt: nil, retryAfter: answer.retryAfter,
                                               jitter: 0)
        Output.out("attest-receipts would: "
                   + (outcome.stopsTeam ? "stop team \(team) until its key is added again; " : "")
                   + (next.map { "try this receipt again at \($0.iso8601)" } ?? "not send this receipt again"))
        guard outcome.kind == .redeemed else { return 1 }
        do {
            let trust = try TrustAnchors.load(data: data, configuration: config, warn: { _ in })
            let verifiers = ReceiptVerifiers(apple: try ReceiptVerifier.apple(),
                                             test: try trust.testReceipt.map { try ReceiptVerifier(anchor: $0) })
            let text = String(decoding: answer.body, as: UTF8.self).filter { !$0.isWhitespace }
            guard let raw = Base64.decode(text) else { throw AttestError(.base64Invalid, "the answer is not base64") }
            let fresh = try verifiers.verify(raw, anchor: anchor, at: time)
            if let device {
                try fresh.check(appID: device.appID, publicKey: device.publicKey[...], at: time, maxAge: 300)
            }
            Output.out(ReceiptReport(receipt: fresh, error: nil).human)
            return 0
        } catch {
            Output.out("the answer does not verify as a receipt: \(error)")
            return 1
        }
    }
}
