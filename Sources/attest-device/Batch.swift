#if canImport(Glibc)
import Glibc
#endif
import AttestCore
import AttestTesting
import CLISupport

/// `batch validate|refresh`: request bodies for a load tool, one JSON object per line.
///
/// Every body carries its own fresh challenge (fetched from the server, so the batch must be
/// replayed within the challenge TTL) and is good for exactly one successful request.
/// validate: N new keys. refresh: M devices enrolled through the server first, then N
/// assertions laid out round-robin (line i belongs to device i mod M, counters rising), so a
/// load tool that keeps fewer than M requests in flight never has two of one device at once.
enum Batch {
    static func run(_ o: DeviceOptions, kind: String, args: Arguments) throws -> Int32 {
        let count = try args.int("count", default: 1000, in: 1...10_000_000)
        guard let out = args.value("out") else { throw UsageError("--out FILE is required") }
        var lines = [String]()
        lines.reserveCapacity(count)
        let started = currentMonotonic()
        switch kind {
        case "validate":
            let pki = try o.testCA(), receipts = try o.testReceipts()
            for i in 0..<count {
                let device = try SoftwareDevice.generate()
                lines.append(try Enroll.validateBody(device, challenge: try o.challenge(), options: o, pki: pki,
                                                     receipts: receipts).jsonText)
                progress("validate bodies", i + 1, count, started)
            }
        case "refresh":
            let deviceCount = try args.int("devices", default: max(1, count / 10), in: 1...count)
            let pki = try o.testCA(), receipts = try o.testReceipts()
            var devices = [SoftwareDevice]()
            for i in 0..<deviceCount {
                let device = try SoftwareDevice.generate()
                let (status, response, text) = try o.post("/api/v1/attestation/validate",
                                                           try Enroll.validateBody(device, challenge: try o.challenge(),
                                                                                   options: o, pki: pki,
                                                                                   receipts: receipts))
                guard status == 200 else { throw o.refused("enrolling batch device \(i)", status, response, text) }
                devices.append(device)
                progress("enrolled devices", i + 1, deviceCount, started)
            }
            for i in 0..<count {
                lines.append(try RefreshCommand.refreshBody(&devices[i % deviceCount], challenge: try o.challenge(),
                                                            options: o).jsonText)
                progress("refresh bodies", i + 1, count, started)
            }
        default:
            throw UsageError("batch kind must be validate or refresh")
        }
        try writeText(out, lines.joined(separator: "\n") + "\n", mode: 0o600)
        if Output.isTerminal { Output.write(fd: 1, "\n") }
        Output.out("wrote \(lines.count) \(kind) bodies to \(out) in \(String(format1(currentMonotonic() - started)))s")
        return 0
    }

    static func progress(_ what: String, _ done: Int, _ total: Int, _ started: Double) {
        guard Output.isTerminal, done == total || done % 100 == 0 else { return }
        Output.write(fd: 1, "\r\(what): \(done)/\(total) (\(format1(currentMonotonic() - started))s)")
        if done == total { Output.write(fd: 1, "\n") }
    }
}

func currentMonotonic() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
}

func format1(_ v: Double) -> String {
    let tenths = Int((v * 10).rounded())
    return "\(tenths / 10).\(tenths % 10)"
}
