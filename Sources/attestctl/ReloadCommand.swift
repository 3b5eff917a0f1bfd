import AttestConfig
import AttestOperations
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

        ENDPOINT is challenge, validate, refresh, mad, webhooks, monitor, flags or feedback.
        Sends SIGHUP to the pool's master
        (DATA/run/ENDPOINT.sock.pid, signalled only if that process is the pool's master:
        its executable is attest-ENDPOINT and it serves DATA/run/ENDPOINT.sock): it runs the binary at its path \
        with --check first, then
        re-executes it in place (same PID), handing over the socket; the old workers finish
        what they hold. A binary that fails its check is refused and the old one keeps serving.
        Waits for the outcome (DATA/run/ENDPOINT.sock.reload) and prints it.
        Exit status: 0 swapped, 1 refused or no answer, 2 bad usage.

        example: cp .build/release/attest-refresh /usr/local/bin/ && attestctl reload refresh
        """,
    run: { argv in
        let args = try Arguments(argv, valued: ["data", "timeout"], switches: [])
        let name = try args.positional(0, "ENDPOINT (challenge, validate, refresh, mad, webhooks, monitor, flags, feedback)")
        guard Endpoint(rawValue: name) != nil else {
            throw UsageError("unknown endpoint \(name): " + Endpoint.allCases.map(\.rawValue).joined(separator: ", "))
        }
        let timeout = try args.int("timeout", default: 45, in: 1...600)
        let data = dataDirectory(args)
        let socket = data.runDirectory + "/\(name).sock"
        // DATA/run is the service user's: its files are read without following a link, and
        // the PID is signalled only when it is this pool's master (PoolMaster).
        let run: PinnedDirectory
        do { run = try PinnedDirectory.open(data.path).directory("run") } catch {
            throw CommandFailure(.notFound, "no running \(name) pool found (\(error)): "
                                     + "is 'attestctl serve' (or its systemd unit) running on \(data.path)?")
        }
        // Both files are read with a bound (a sparse gigabyte planted there is refused from its
        // size, not read): the pool writes a PID of at most 10 digits and a one-line status.
        let status: () throws -> String? = {
            try run.read("\(name).sock.reload", atMost: 4096).map { String(decoding: $0, as: UTF8.self) }
        }
        let pidBytes: [UInt8]?
        do {
            pidBytes = try run.read("\(name).sock.pid", atMost: 32)
        } catch let failure as ConfigError where failure.errorNumber == EFBIG {
            throw CommandFailure(.failed, "\(socket).pid holds more than 32 bytes, not a process id: nothing signalled")
        }
        guard let pidText = pidBytes.map({ String(decoding: $0, as: UTF8.self) }) else {
            throw CommandFailure(.notFound, "no running \(name) pool found (\(socket).pid): "
                                     + "is 'attestctl serve' (or its systemd unit) running on \(data.path)?")
        }
        guard let pid = PoolMaster.parse(pidText) else {
            throw CommandFailure(.failed, "\(socket).pid holds \(pidText.prefix(40).debugDescription), "
                                     + "not a process id: nothing signalled")
        }
        if let problem = PoolMaster.problem(pid: pid, endpoint: name, socket: socket) {
            throw CommandFailure(.failed, "\(socket).pid names a process that is not the \(name) pool's master "
                                     + "(\(problem)): nothing signalled")
        }
        let before = try status() ?? ""
        guard kill(pid, SIGHUP) == 0 else {
            throw CommandFailure(.failed, "cannot signal the \(name) pool (pid \(pid)): "
                                     + "\(String(cString: strerror(errno)))")
        }
        Output.err("reloading \(name) (pid \(pid))…")
        var waited = 0
        while waited < timeout * 10 {
            usleep(100_000)
            waited += 1
            guard let now = try status(), now != before else { continue }
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
