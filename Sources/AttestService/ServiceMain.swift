import AttestConfig
import AttestCore
import AttestMetrics
import CLISupport
import FastCGI

/// The whole of an endpoint executable: parse the flags, check the data directory once in the
/// master, then serve with a pre-forked pool whose workers each open their own store.
///
/// ```
/// attest-<endpoint> --socket PATH [--workers N] [--body-limit BYTES] [--socket-mode OCTAL]
///                   [--data DIR] [--trust-root PEM]... [--allow-private-destinations]
/// ```
/// `--allow-private-destinations` sets `webhooks.allowPrivateDestinations` for this process
/// (what `attestctl serve --allow-private-webhooks` passes to attest-webhooks).
public enum ServiceMain {
    public static func run(_ endpoint: Endpoint, arguments argv: [String]) -> Int32 {
        let name = "attest-\(endpoint.rawValue)"
        let usage = "usage: \(name) --socket PATH [--workers N] [--body-limit BYTES] [--socket-mode OCTAL] "
                    + "[--data DIR] [--trust-root PEM]... [--allow-private-destinations]"
        do {
            var (options, rest) = try ServerOptions.parse(argv)
            let args = try Arguments(rest, valued: ["data", "trust-root"], switches: ["allow-private-destinations"])
            let allowPrivate = args.flag("allow-private-destinations")
            guard args.positionals.isEmpty else { throw UsageError("unexpected argument \(args.positionals[0])") }
            let data = DataDirectory(flag: args.value("data"))
            let configuration = try data.loadConfiguration()
            _ = try data.challengeSecret()
            _ = try KeyRing(data).signer(at: SystemClock().now())
            if !argv.contains(where: { $0.hasPrefix("--workers") }) { options.workers = configuration.workers }
            if !argv.contains(where: { $0.hasPrefix("--body-limit") }) {
                options.bodyLimit = configuration.bodyLimitBytes
            }
            let anchors = try TrustAnchors.load(data: data, configuration: configuration,
                                                extraPEMFiles: args.values("trust-root"),
                                                warn: { warning in Output.err(LogMessage("\(name): \(warning)").text) })
            // The other pools' sockets are beside this one's (`attestctl serve`: DATA/run; the units: /run/attestedge).
            let sockets = options.socketPath.lastIndex(of: "/").map { String(options.socketPath[..<$0]) } ?? "."
            // The pool's counters, made before the workers fork so that they share them; a
            // reload's preflight (`--check`) leaves them alone.
            var counters = PoolCounters()
            if !options.checkOnly, let segment = ServiceMetrics.start(run: data.runDirectory, name: endpoint.rawValue,
                                                                      log: { Output.err("\(name): \($0)") }) {
                counters = PoolCounters(workers: { segment.set(MetricsLayout.poolWorkers, UInt64($0)) },
                                        restarted: { segment.add(MetricsLayout.poolRestarts) },
                                        reloaded: { segment.add(MetricsLayout.poolReloads) })
            }
            return FastCGIServer.run(options, name: name, counters: counters) {
                let context = try ServiceContext.open(dataDirectory: data, trust: anchors, random: BufferedRandom(),
                                                      log: { Output.err("\(name)[\(processID())]: \($0.text)") },
                                                      adjust: {
                                                          if allowPrivate { $0.webhookAllowPrivateDestinations = true }
                                                      })
                context.poolSockets = sockets
                context.metricsDirectory = ServiceMetrics.directory
                return ServiceResponder(endpoint: endpoint, context: context, holdsAnswers: true)
            }
        } catch let error as UsageError {
            Output.err("\(name): \(error.message)\n\(usage)")
            return 2
        } catch let error as FastCGIError {
            Output.err("\(name): \(error)\n\(usage)")
            return 2
        } catch {
            Output.err("\(name): \(error)")
            return 1
        }
    }
}
