import AttestConfig
import AttestCore
import AttestOperations
import AttestService
import AttestStore
import AttestTesting
import CLISupport
import FastCGI
#if canImport(Glibc)
import Glibc
#endif

/// `attest-bench validate`: what verifying the attestation's receipt adds to a validate,
/// inside the process (no nginx, no FastCGI).
///
/// In a scratch data directory (removed afterwards) trusting a test PKI as a test root and a
/// `TestReceiptAuthority` as its test receipt root, it prepares `--count` validates of fresh
/// software devices, alternately with a signed receipt (verified: CMS parse, the signing
/// chain cached after the first, one P-256 signature, the payload, the checks) and with an
/// empty one (nothing to verify: the validate as it was before receipts were checked, but
/// for storing a smaller record), and times each on one thread (thread CPU time). Then the
/// receipt's verification alone (`ReceiptVerifier`, chain cached). Prints
/// `validate_us=… validate_without_receipt_us=… receipt_us=… receipt_share=…` (receipt_us ÷
/// validate_us) and a table.
enum ValidateBench {
    static let teamID = RefreshBench.teamID, bundleID = RefreshBench.bundleID

    static func run(_ argv: [String]) throws -> Int32 {
        let args = try Arguments(argv, valued: ["count", "dir"], switches: [])
        let count = try args.int("count", default: 600, in: 2...100_000)
        let parent = args.value("dir") ?? "/tmp"
        var template = Array((parent + "/attestctl-bench-validate.XXXXXX").utf8CString)
        guard let made = mkdtemp(&template) else {
            throw UsageError("--dir \(parent): cannot create a scratch directory in it: "
                                 + "\(String(cString: strerror(errno)))")
        }
        let path = String(cString: made)
        defer { _ = system("rm -rf '\(path)'") }

        let start = SystemClock().now()
        let pki = try TestPKI.generate(validFrom: start - 86_400, validUntil: start + 365 * 86_400)
        let receipts = try TestReceiptAuthority.generate(validFrom: start - 86_400, validUntil: start + 365 * 86_400)
        let data = DataDirectory(path)
        var config = Configuration()
        config.validatePerIPPerMinute = 0
        _ = try data.initialise(configuration: config, now: start)
        let trust = TrustAnchors(hardware: [try AppleAppAttestationRoot.certificate()], test: [pki.rootCertificate],
                                 testReceipt: [receipts.root])
        let context = try ServiceContext.open(dataDirectory: data, trust: trust, log: { _ in })
        try context.store.write([.durable]) { txn in
            try txn.put(OrgRecord(name: "bench", tier: .enterprise, createdAt: start))
            try txn.put(AppRecord(teamID: teamID, bundleID: bundleID, org: "bench", createdAt: start))
        }
        Output.err("preparing \(count) validates of new software devices, every other one with a signed receipt")
        var requests = [(withReceipt: Bool, request: Request)]()
        var sample = [UInt8]()
        for i in 0..<count {
            let device = try SoftwareDevice.generate()
            let challenge = try RefreshBench.fetchChallenge(context)
            let cdh = SHA256.hash(challenge.utf8)
            var attestation = device.synthetic(clientDataHash: cdh, appID: teamID + "." + bundleID)
            if i % 2 == 0 { attestation.receiptAuthority = receipts } else { attestation.receipt = [] }
            let built = try attestation.build(pki: pki, at: start)
            if i == 0 { sample = try AttestationObject(cborEncoded: built.attestationObject[...]).receipt.map { $0 } }
            let body = JSONValue.object([
                ("challenge", .string(challenge)), ("keyId", .string(Base64.encode(built.keyID))),
                ("attestationObject", .string(Base64.encode(built.attestationObject))),
                ("clientDataHash", .string(Base64.encode(cdh))),
                ("bundleId", .string(bundleID)), ("teamId", .string(teamID)), ("deviceModel", "iPhone15,2"),
                ("osVersion", "18.0"), ("appVersion", "1.0"), ("appBuildNumber", "1"), ("platform", "iOS"),
            ])
            requests.append((i % 2 == 0, RefreshBench.request(.validate, "POST", body: body.jsonBytes, id: i)))
        }
        // The first of each kind warms the caches (intermediate, receipt chain, key ring).
        for (_, r) in requests.prefix(2) { try RefreshBench.check(Endpoint.validate.handle(r, context)) }
        var seconds = (with: 0.0, without: 0.0)
        for (withReceipt, r) in requests.dropFirst(2) {
            let began = Throughput.threadCPUSeconds()
            let response = Endpoint.validate.handle(r, context)
            let spent = Throughput.threadCPUSeconds() - began
            try RefreshBench.check(response)
            if withReceipt { seconds.with += spent } else { seconds.without += spent }
        }
        let stored = try context.store.read { txn in try txn.count(.receiptDue) }
        guard stored == (count + 1) / 2 else {
            throw BenchError("\(stored) receipts were scheduled, not \((count + 1) / 2): a receipt did not verify")
        }
        let each = Double((count - 2) / 2)
        let verifier = try ReceiptVerifier(anchor: receipts.root)
        _ = try verifier.verify(sample, at: start)
        let receiptUS = RefreshBench.microseconds(max(1_000, count)) { _ = try? verifier.verify(sample, at: start) }
        let validateUS = seconds.with / each * 1e6, withoutUS = seconds.without / each * 1e6
        Output.out("validate_us=\(String(format2: validateUS)) validate_without_receipt_us=\(String(format2: withoutUS)) "
                   + "receipt_us=\(String(format2: receiptUS)) receipt_share=\(String(format2: receiptUS / validateUS))")
        Output.err("""

            in-process validate, one thread (thread CPU time): \(count) new devices (test root, test receipt root)
            """)
        Output.err(Output.table(["part", "µs per validate", "share"], [
            ["validate, receipt verified and stored", String(format2: validateUS), "1.00"],
            ["validate, empty receipt (nothing to verify)", String(format2: withoutUS),
             String(format2: withoutUS / validateUS)],
            ["receipt verification alone (chain cached)", String(format2: receiptUS),
             String(format2: receiptUS / validateUS)],
        ]))
        return 0
    }
}
