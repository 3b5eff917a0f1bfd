import AttestCore
import AttestTesting
import CLISupport
import FoundationEssentials

/// `attest-bench`: verification rates against raw OpenSSL ECDSA (`VerifyBench`), a refresh
/// in-process (`RefreshBench`), monthly counting at scale (`UsageBench`), custom claims'
/// cost (`ClaimsBench`) and the store's floors (`StoreBench`).
enum Bench {
    static let usage = """
        usage: attest-bench verify [--seconds N] [--json]
               attest-bench usage [--devices N] [--from I] [--batch N] [--at TIME] [--data DIR]
               attest-bench claims [--seconds N]
               attest-bench store puts [--seconds N] [--dir DIR]
               attest-bench store load --count N --app APPID [--data DIR]
               attest-bench refresh [--devices N] [--count N] [--cold] [--sync S] [--dir DIR] [--metrics]
               attest-bench validate [--count N] [--dir DIR]

        On one thread (use 'taskset -c 0' to pin it to one core), measures
          attestation verifications/s: Apple's guide sample at its time, intermediate cache warm
                                       (the steady state: one P-384 leaf signature each)
          assertion verifications/s:   a software-device assertion, public key parsed once
                                       (and, for reference, loaded from its point each time)
        next to the raw OpenSSL rate of the signature each one costs (P-384, P-256:
        EVP_PKEY_verify on a precomputed digest with a prepared context), and prints each
        ratio. Rates are per second of thread CPU time; each side gets about N seconds
        (default 3) in alternating 50 ms slices, and the ratio is the median of the slices'
        side-by-side ratios, so bursts of machine noise do not decide it.

          --seconds N  seconds per measurement (1 to 600)
          --json       print one JSON object

        bench usage counts N synthetic devices (default 1000000) for this month in the
        organization "bench-usage" (created, enterprise) of DIR, through the same admission
        code requests use, in transactions of 10000, and reports the counting rate and how
        long reading the month's report takes. Use a scratch data directory. --from I counts
        devices I ..< I + N (default 0), --batch N puts N in a transaction, --at TIME counts
        them at that ISO-8601 time instead of now: devices counted on an earlier day of the
        month are counted active for TIME's day (nginx/bench/daystart.sh runs several
        processes so, as a fleet's first requests of a day arrive).

        bench claims measures what an app's 20 conditional custom claims add to a token (parse
        the stored text, build the profile, score the risk, evaluate), as a fraction of the
        ES256 signature every token costs.

        bench store puts measures LMDB's floors: one small put per write transaction, synced
        (store.sync commit) and not synced. bench store load writes N synthetic device records
        of APPID straight into the store (scaling benchmarks) and prints the bytes per device,
        then compacts the durable environment as a restore would (bulk transactions leave
        LMDB's free-page list large, and every later commit rewrites it). Nothing may have the
        store open meanwhile.

        bench refresh measures one refresh inside the process (no nginx, no FastCGI): N
        software devices (default 200) enrolled in a scratch data directory (made under --dir,
        default /tmp, and removed afterwards), then --count
        refreshes (default 5000) through the endpoint on one thread, keys warm; --cold sends
        one refresh per device with no warm-up, so each loads a key this process has not seen.
        Prints µs per refresh next to a raw P-256 verify and an ES256 token signature measured
        on the same thread, and the rest (store, JSON, admission, claims). --metrics: the
        refreshes count into a metrics segment, as a pool's do, and record_ns is what one
        refresh's recording costs alone (run it back to back with a run without).

        bench validate measures what verifying the attestation's receipt adds to a validate: --count
        (default 600) new software devices validated in-process on one thread, alternately with a
        signed receipt (verified and stored) and an empty one (nothing to verify), then the
        receipt's verification alone (chain cached); prints µs per validate of each kind and
        the receipt's share of a validate (the issue asks for less than 0.1).

        example: taskset -c 0 attest-bench verify --seconds 5
        """

    /// Runs the benchmark `argv` names; prints the usage on `help`, `--help`, `-h` or a
    /// `UsageError` (exit status 2); any other failure is `attest-bench: ERROR`, status 1.
    static func main(_ argv: [String]) -> Int32 {
        if argv.first == "help" || argv.contains("--help") || argv.contains("-h") {
            Output.out(usage)
            return 0
        }
        do {
            return try run(argv)
        } catch let error as UsageError {
            Output.err("attest-bench: \(error.message)\n\n\(usage)")
            return 2
        } catch {
            Output.err("attest-bench: \(error)")
            return 1
        }
    }

    static func run(_ argv: [String]) throws -> Int32 {
        if argv.first == "usage" { return try UsageBench.run(Array(argv.dropFirst())) }
        if argv.first == "claims" { return try ClaimsBench.run(Array(argv.dropFirst())) }
        if argv.first == "store" { return try StoreBench.run(Array(argv.dropFirst())) }
        if argv.first == "refresh" { return try RefreshBench.run(Array(argv.dropFirst())) }
        if argv.first == "validate" { return try ValidateBench.run(Array(argv.dropFirst())) }
        guard argv.first == "verify" else {
            throw UsageError("say what to measure: verify, usage, claims, store, refresh or validate")
        }
        let args = try Arguments(Array(argv.dropFirst()), valued: ["seconds"], switches: ["json"])
        guard args.positionals.isEmpty else { throw UsageError("unexpected argument \(args.positionals[0])") }
        let seconds = try args.int("seconds", default: 3, in: 1...600)
        let results = try VerifyBench.run(seconds: Double(seconds))
        if args.flag("json") {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            let report = BenchReport(seconds: seconds, clock: "thread CPU time", results: results)
            Output.out(String(decoding: try encoder.encode(report), as: UTF8.self))
        } else {
            let rows = results.map { r in
                [r.name, String(format0: r.rate), "\(String(format0: r.rawRate)) (\(r.rawCurve))",
                 String(format2: r.ratio)]
            }
            Output.out("verification rate vs raw OpenSSL ECDSA: one thread, \(seconds) s of CPU time each side\n")
            Output.out(Output.table(["measurement", "verify/s", "raw verify/s", "ratio"], rows))
        }
        return 0
    }
}

struct BenchReport: Encodable {
    let seconds: Int
    let clock: String
    let results: [VerifyBench.Result]
}

extension String {
    init(format0 value: Double) { self = String(Int(value.rounded())) }
    init(format2 value: Double) {
        let hundredths = abs(Int((value * 100).rounded()))
        let sign = value < 0 && hundredths > 0 ? "-" : ""
        self = "\(sign)\(hundredths / 100).\(hundredths % 100 < 10 ? "0" : "")\(hundredths % 100)"
    }
}
