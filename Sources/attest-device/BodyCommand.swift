import AttestCore
import AttestTesting
import CLISupport

/// `body validate|refresh`: print one request body without sending it, for tests that
/// tamper with requests or race them.
///
/// validate: a new key (not saved) attesting `--challenge C` (or a fresh challenge).
/// refresh: the saved device asserting `--challenge C` at `--counter N` (the counter is not
/// advanced), or at the next counter (advanced and saved) when `--counter` is absent.
enum BodyCommand {
    static func run(_ o: DeviceOptions, kind: String, args: Arguments) throws -> Int32 {
        let challenge = try args.value("challenge") ?? o.challenge()
        switch kind {
        case "validate":
            Output.out(try Enroll.validateBody(try SoftwareDevice.generate(), challenge: challenge, options: o,
                                               pki: try o.testCA(), receipts: try o.testReceipts()).jsonText)
        case "refresh":
            var device = try o.loadDevice()
            if args.value("counter") != nil {
                let counter = UInt32(try args.int("counter", default: 0, in: 0...Int(UInt32.max)))
                let cdh = SHA256.hash(challenge.utf8)
                let assertion = try device.assertion(clientDataHash: cdh, appID: o.appID, counter: counter)
                Output.out(JSONValue.object([
                    ("keyId", .string(Base64.encode(device.keyID))), ("assertion", .string(Base64.encode(assertion))),
                    ("clientDataHash", .string(Base64.encode(cdh))), ("challenge", .string(challenge)),
                ]).jsonText)
            } else {
                let body = try RefreshCommand.refreshBody(&device, challenge: challenge, options: o)
                try o.save(device)
                Output.out(body.jsonText)
            }
        default:
            throw UsageError("body kind must be validate or refresh")
        }
        return 0
    }
}
