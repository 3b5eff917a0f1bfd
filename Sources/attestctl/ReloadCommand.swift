import AttestService
import CLISupport
#if canImport(Glibc)
import Glibc
#endif

/// `attestctl reload ENDPOINT`: swap one pool to the binary (and configuration) now on disk.
let reloadCommand = Command(
    name: "reload",
    summary: "re-execute one endpoint's pool with the binary on disk, without dropping a request",
    usage: """
        usage: attestctl reload ENDPOINT [--timeout SECONDS] [--data DIR]

        ENDPOINT is challenge, validate, refresh, mad or webhooks. Sends SIGHUP to the pool's master
        (DATA/run/ENDPOINT.sock.pid): it runs the binary at its path with --check first, then
        re-executes it in place (same PID), handing over the socket; the old workers finish
        what they hold. A binary that fails its check is refused and the old one keeps serving.
        Waits for the outcome (DATA/run/ENDPOINT.sock.reload) and prints it.
        Exit status: 0 swapped, 1 refused or no answer, 2 bad usage.

        example: cp .build/release/attest-refresh /usr/local/bin/ && attestctl reload refresh
        """,
    run: { argv in
        let args = try Arguments(argv, valued: ["data", "timeout"], switches: [])
        let name = try args.positional(0, "ENDPOINT (challenge, validate, refresh, mad, webhooks)")
        guard Endpoint(rawValue: name) != nil else { throw UsageError("unknown endpoint \(name): challenge, validate, refresh, mad or webhooks") }
        let timeout = try args.int("timeout", default: 45, in: 1...600)
        let data = dataDirectory(args)
        let socket = data.runDirectory + "/\(name).sock"
        guard let pidText = try FileIO.readText(socket + ".pid"), let pid = pid_t(pidText.trimmingWhitespace) else {
            throw CommandFailure("no running \(name) pool found (\(socket).pid): is 'attestctl serve' (or its systemd unit) running on \(data.path)?")
        }
        let before = try FileIO.readText(socket + ".reload") ?? ""
        guard kill(pid, SIGHUP) == 0 else {
            throw CommandFailure("cannot signal the \(name) pool (pid \(pid)): \(String(cString: strerror(errno)))")
        }
        Output.err("reloading \(name) (pid \(pid))…")
        var waited = 0
        while waited < timeout * 10 {
            usleep(100_000)
            waited += 1
            guard let now = try FileIO.readText(socket + ".reload"), now != before else { continue }
            let line = now.trimmingWhitespace
            let fields = line.split(separator: " ", maxSplits: 2)
            let ok = fields.count >= 2 && fields[1] == "ok"
            let text = fields.count == 3 ? String(fields[2]) : line
            if ok {
                Output.out("\(name): swapped: \(text)")
                return 0
            }
            Output.err("\(name): reload refused, the running binary keeps serving: \(text)")
            return 1
        }
        Output.err("\(name): no outcome within \(timeout) s; see the pool's log (DATA/log/attest-\(name).log)")
        return 1
    })

extension String {
    var trimmingWhitespace: String {
        String(self.drop(while: { $0.isWhitespace }).reversed().drop(while: { $0.isWhitespace }).reversed())
    }
}
