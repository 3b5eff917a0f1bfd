/// How a responder pool listens and runs: one `Sendable` value, validated before the
/// socket is bound.
public struct ServerOptions: Sendable {
    /// The unix socket path nginx connects to (`--socket`, required). At most 107 bytes.
    public var socketPath: String
    /// Worker processes to pre-fork (`--workers`, 1...64).
    public var workers: Int = 2
    /// Largest body read, in bytes (`--body-limit`, 0...16 MiB). A request whose
    /// `CONTENT_LENGTH` is larger is not read and arrives with `bodyTooLarge` set.
    public var bodyLimit: Int = 65536
    /// `listen(2)` backlog: connections that wait while every worker is busy.
    public var backlog: Int32 = 1024
    /// Permission bits of the socket file (`--socket-mode`, octal). nginx's worker user
    /// needs write permission: 0660 with the socket's group shared with nginx.
    public var socketMode: UInt32 = 0o660
    /// How long in-flight requests may run after SIGTERM before workers are killed
    /// (`--shutdown-grace`, 0...3600).
    public var shutdownGraceSeconds: Int = 10
    /// `--check`: make a responder and exit (0 when it could), binding nothing: the preflight a
    /// reload runs before re-executing a binary.
    public var checkOnly = false

    /// Upper bounds checked by `parse` and by `FastCGIServer.run`.
    public static let maxWorkers = 64
    public static let maxBodyLimit = 16 << 20
    public static let maxShutdownGraceSeconds = 3600
    /// `sun_path` holds 108 bytes including the terminating NUL.
    public static let maxSocketPathBytes = 107

    public init(socketPath: String, workers: Int = 2, bodyLimit: Int = 65536, backlog: Int32 = 1024,
                socketMode: UInt32 = 0o660, shutdownGraceSeconds: Int = 10) {
        self.socketPath = socketPath
        self.workers = workers
        self.bodyLimit = bodyLimit
        self.backlog = backlog
        self.socketMode = socketMode
        self.shutdownGraceSeconds = shutdownGraceSeconds
    }

    /// Pulls `--socket PATH`, `--workers N`, `--body-limit BYTES`, `--socket-mode OCTAL` and
    /// `--shutdown-grace SECONDS` (also written `--flag=value`) out of `argv`; returns the rest untouched and in order,
    /// including `argv[0]` if present. Parsing stops at `--`, which stays in the rest. A flag
    /// given twice takes its last value.
    ///
    /// - Throws: `FastCGIError` with code `invalidOption` naming the flag whose value is
    ///   missing or out of range, or `missingOption` when `--socket` is absent.
    public static func parse(_ argv: [String]) throws(FastCGIError) -> (ServerOptions, rest: [String]) {
        var values: [String: String] = [:]
        var rest: [String] = []
        var checkOnly = false
        var i = 0
        while i < argv.count {
            let arg = argv[i]
            i += 1
            if arg == "--" { rest += argv[(i - 1)...]; break }
            if arg == "--check" { checkOnly = true; continue }
            let (flag, inline) = Self.split(arg)
            guard Self.flags.contains(flag) else { rest.append(arg); continue }
            if let inline {
                values[flag] = inline
            } else if i < argv.count, !argv[i].hasPrefix("--") {
                values[flag] = argv[i]
                i += 1
            } else {
                throw FastCGIError(.invalidOption, flag: flag, "needs a value")
            }
        }
        guard let socket = values["--socket"] else {
            throw FastCGIError(.missingOption, flag: "--socket", "is required (the unix socket path nginx connects to)")
        }
        var options = ServerOptions(socketPath: socket)
        options.checkOnly = checkOnly
        if let text = values["--workers"] {
            options.workers = try Self.integer(text, flag: "--workers", in: 1...maxWorkers)
        }
        if let text = values["--body-limit"] {
            options.bodyLimit = try Self.integer(text, flag: "--body-limit", in: 0...maxBodyLimit)
        }
        if let text = values["--shutdown-grace"] {
            options.shutdownGraceSeconds = try Self.integer(text, flag: "--shutdown-grace",
                                                            in: 0...maxShutdownGraceSeconds)
        }
        if let text = values["--socket-mode"] {
            let digits = text.hasPrefix("0o") ? String(text.dropFirst(2)) : text
            guard !digits.isEmpty, let mode = UInt32(digits, radix: 8), mode <= 0o777 else {
                throw FastCGIError(.invalidOption, flag: "--socket-mode",
                                   "must be octal permission bits such as 660, got \"\(text)\"")
            }
            options.socketMode = mode
        }
        try options.validate()
        return (options, rest)
    }

    /// Checks every field against its documented range.
    ///
    /// - Throws: `FastCGIError` with code `invalidOption` naming the flag of the bad field.
    public func validate() throws(FastCGIError) {
        if socketPath.isEmpty {
            throw FastCGIError(.invalidOption, flag: "--socket", "must not be empty")
        }
        if socketPath.utf8.count > Self.maxSocketPathBytes {
            throw FastCGIError(.invalidOption, flag: "--socket",
                               "path is \(socketPath.utf8.count) bytes; "
                                   + "unix socket paths hold at most \(Self.maxSocketPathBytes)")
        }
        if !(1...Self.maxWorkers).contains(workers) {
            throw FastCGIError(.invalidOption, flag: "--workers", "must be in 1...\(Self.maxWorkers), got \(workers)")
        }
        if !(0...Self.maxBodyLimit).contains(bodyLimit) {
            throw FastCGIError(.invalidOption, flag: "--body-limit",
                               "must be in 0...\(Self.maxBodyLimit), got \(bodyLimit)")
        }
        if socketMode > 0o777 {
            throw FastCGIError(.invalidOption, flag: "--socket-mode", "must be at most 777 (octal)")
        }
        if backlog < 1 {
            throw FastCGIError(.invalidOption, "backlog must be positive, got \(backlog)")
        }
        if !(0...Self.maxShutdownGraceSeconds).contains(shutdownGraceSeconds) {
            throw FastCGIError(.invalidOption, flag: "--shutdown-grace",
                               "must be in 0...\(Self.maxShutdownGraceSeconds), got \(shutdownGraceSeconds)")
        }
    }

    private static let flags: Set<String> = ["--socket", "--workers", "--body-limit", "--socket-mode",
                                             "--shutdown-grace"]

    private static func split(_ arg: String) -> (String, String?) {
        guard arg.hasPrefix("--"), let eq = arg.firstIndex(of: "=") else { return (arg, nil) }
        return (String(arg[..<eq]), String(arg[arg.index(after: eq)...]))
    }

    private static func integer(_ text: String, flag: String, in range: ClosedRange<Int>) throws(FastCGIError) -> Int {
        guard let n = Int(text), range.contains(n) else {
            throw FastCGIError(.invalidOption, flag: flag,
                               "must be a whole number in \(range.lowerBound)...\(range.upperBound), got \"\(text)\"")
        }
        return n
    }
}
