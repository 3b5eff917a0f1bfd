import AttestConfig
import AttestCore
import AttestOperations
import AttestService
import AttestStore
import CLISupport
import FastCGI
#if canImport(Glibc)
import Glibc
#endif

/// Set by SIGTERM and SIGINT: finish the request in flight, record it, exit.
nonisolated(unsafe) var stopRequested: sig_atomic_t = 0

/// `attest-receipts [--data DIR]`: the redemption worker. Only one runs per data directory
/// (an exclusive lock on store/receipts.lock); a second one exits with status 1 saying so.
enum Receipts {
    static let usage = "usage: attest-receipts [--data DIR]"

    static func run(_ argv: [String]) -> Int32 {
        do {
            let args = try Arguments(argv, valued: ["data"], switches: [])
            guard args.positionals.isEmpty else { throw UsageError("unexpected argument \(args.positionals[0])") }
            let data = DataDirectory(flag: args.value("data"))
            let trust = try TrustAnchors.load(data: data, configuration: try data.loadConfiguration(), warn: { _ in })
            let lockPath = data.storeDirectory + "/receipts.lock"
            let fd = open(lockPath, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
            guard fd >= 0, flock(fd, LOCK_EX | LOCK_NB) == 0 else {
                Output.err("attest-receipts: another attest-receipts holds \(lockPath)")
                return 1
            }
            let ctx = try ServiceContext.open(dataDirectory: data, trust: trust,
                                              log: { Output.err("attest-receipts[\(processID())]: \($0.text)") })
            let configuration = ctx.configuration
            ServiceMetrics.start(run: data.runDirectory, name: ServiceMetrics.receiptsName,
                                 log: { Output.err("attest-receipts: \($0)") })
            signal(SIGTERM) { _ in stopRequested = 1 }
            signal(SIGINT) { _ in stopRequested = 1 }
            signal(SIGPIPE, SIG_IGN)
            let keyStore = AppleKeyStore(data)
            let redeemer = ReceiptRedeemer(store: ctx.store, configuration: configuration,
                                           transport: CurlAppleTransport(caFile: configuration.receiptAppleCAFile),
                                           keys: { try keyStore.key(team: $0) }, verifiers: ReceiptVerifiers(ctx),
                                           storeRedeemed: ReceiptRedeemer.recorder(ctx))
            redeemer.log = { Output.err("attest-receipts[\(processID())]: \($0.text)") }
            redeemer.shouldStop = { stopRequested != 0 }
            let teams = keyStore.teams()
            Output.err("attest-receipts[\(processID())]: redeeming from \(data.path) "
                       + "(\(configuration.receiptRequestsPerSecond) requests/s at most; teams with a key: "
                       + "\(teams.isEmpty ? "none" : teams.joined(separator: ", ")))")
            redeemer.run()
            Output.err("attest-receipts[\(processID())]: stopped after \(redeemer.attempts) requests, "
                       + "\(redeemer.redeemed) redeemed, \(redeemer.deferred) put off")
            return 0
        } catch let error as UsageError {
            Output.err("attest-receipts: \(error.message)\n\(usage)")
            return 2
        } catch {
            Output.err("attest-receipts: \(error)")
            return 1
        }
    }
}
