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

/// Set by SIGTERM and SIGINT: finish the attempts in flight, record them, exit.
nonisolated(unsafe) var stopRequested: sig_atomic_t = 0

/// `attest-webhooks deliver [--data DIR] [--allow-private-destinations]`: the delivery worker.
/// Only one runs per data directory (an exclusive lock on store/deliver.lock); a second one
/// exits with status 1 saying so.
enum Deliver {
    static let usage = "usage: attest-webhooks deliver [--data DIR] [--allow-private-destinations]"

    static func run(_ argv: [String]) -> Int32 {
        do {
            let args = try Arguments(argv, valued: ["data"], switches: ["allow-private-destinations"])
            guard args.positionals.isEmpty else { throw UsageError("unexpected argument \(args.positionals[0])") }
            let data = DataDirectory(flag: args.value("data"))
            var configuration = try data.loadConfiguration()
            if args.flag("allow-private-destinations") { configuration.webhookAllowPrivateDestinations = true }
            let lockPath = data.storeDirectory + "/deliver.lock"
            let fd = open(lockPath, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
            guard fd >= 0, flock(fd, LOCK_EX | LOCK_NB) == 0 else {
                Output.err("attest-webhooks deliver: another delivery worker holds \(lockPath)")
                return 1
            }
            let store = try Store(directory: data.storeDirectory, options: configuration.storeOptions)
            ServiceMetrics.start(run: data.runDirectory, name: ServiceMetrics.senderName,
                                 log: { Output.err("attest-webhooks deliver: \($0)") })
            signal(SIGTERM) { _ in stopRequested = 1 }
            signal(SIGINT) { _ in stopRequested = 1 }
            signal(SIGPIPE, SIG_IGN)
            let allowPrivate = configuration.webhookAllowPrivateDestinations
            if allowPrivate {
                Output.err("attest-webhooks deliver: WARNING webhooks.allowPrivateDestinations is on: "
                           + "http:// and private addresses are allowed")
            }
            let worker = DeliveryWorker(store: store, configuration: configuration) {
                CurlTransport(allowPrivate: allowPrivate)
            }
            worker.log = { Output.err("attest-webhooks deliver[\(processID())]: \($0.text)") }
            Output.err("attest-webhooks deliver[\(processID())]: delivering from \(data.path) "
                       + "(\(configuration.webhookMaxConcurrentDeliveries) threads, "
                       + "\(configuration.webhookConcurrencyPerEndpoint) per endpoint)")
            worker.run { stopRequested != 0 }
            Output.err("attest-webhooks deliver[\(processID())]: stopped after \(worker.attempts) attempts, "
                       + "\(worker.delivered) delivered, \(worker.pruned) pruned from the log")
            return 0
        } catch let error as UsageError {
            Output.err("attest-webhooks deliver: \(error.message)\n\(usage)")
            return 2
        } catch {
            Output.err("attest-webhooks deliver: \(error)")
            return 1
        }
    }
}
