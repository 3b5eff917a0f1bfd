import AttestConfig
import AttestCore
import AttestService
import AttestStore
import CLISupport
#if canImport(Glibc)
import Glibc
#endif

/// `attest-bench usage`: monthly counting and reporting at a million devices.
enum UsageBench {
    static func run(_ argv: [String]) throws -> Int32 {
        let args = try Arguments(argv, valued: ["data", "devices", "from", "batch", "at"], switches: [])
        let devices = try args.int("devices", default: 1_000_000, in: 1...100_000_000)
        let first = try args.int("from", default: 0, in: 0...100_000_000)
        let batch = try args.int("batch", default: 10_000, in: 1...100_000)
        var time = SystemClock().now()
        if let at = args.value("at") {
            guard let t = Timestamp(iso8601: at) else {
                throw UsageError("--at wants an ISO-8601 time such as 2026-12-04T00:00:30Z, not \(at)")
            }
            time = t
        }
        let data = DataDirectory(flag: args.value("data"))
        let context = try ServiceContext.open(
            dataDirectory: data, trust: TrustAnchors(hardware: [try AppleAppAttestationRoot.certificate()]),
            log: { _ in })
        let org = try context.store.write([.durable]) { txn -> OrgRecord in
            if let org = try txn.org(named: "bench-usage") { return org }
            let org = OrgRecord(name: "bench-usage", tier: .enterprise, createdAt: time)
            try txn.put(org)
            return org
        }
        let appID = "BENCHUSAGE.com.example.usage"
        var counted = 0
        let started = seconds()
        let step = max(1, devices / 10)
        for chunk in stride(from: 0, to: devices, by: step) {
            counted += try context.countSyntheticDevices(org: org, appID: appID,
                                                         range: first + chunk..<first + min(devices, chunk + step),
                                                         batch: batch, now: time)
            Output.err("  counted \(min(devices, chunk + step)) of \(devices) "
                       + "(\(Int(Double(min(devices, chunk + step)) / (seconds() - started)))/s)")
        }
        let countTime = seconds() - started
        let readStart = seconds()
        let totals = try context.store.read { try $0.usageMonthReport(org: org.name, month: time.monthKey) }
        let report = UsageReport(org: org, month: time.monthKey, totals: totals, now: time).json.jsonText
        let readTime = seconds() - readStart
        let durable = context.store.usage().first { $0.environment == .durable }
        Output.out("""
            counted \(counted) new devices of \(devices) in \(String(format2: countTime)) s \
            (\(Int(Double(devices) / countTime))/s, in transactions of \(batch))
            month report: \(totals?.activeDevices ?? 0) active devices, read and rendered in \
            \(String(format2: readTime * 1000)) ms (\(report.utf8.count) bytes of JSON)
            durable environment: \((durable?.used ?? 0) / 1_048_576) MiB used of \
            \((durable?.mapSize ?? 0) / 1_048_576) MiB
            """)
        return 0
    }

    static func seconds() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }
}
