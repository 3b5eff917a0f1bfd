import AttestConfig
import AttestCore
import AttestOperations
import AttestStore
import CLISupport
#if canImport(Glibc)
import Glibc
#endif

/// `attestctl apple key add|list|remove`: the teams' DeviceCheck keys (`AppleKeyStore`).
let appleCommand = Command(
    name: "apple",
    summary: "register the DeviceCheck keys attest-receipts redeems receipts with (one per team)",
    usage: """
        usage: attestctl apple key add --team TEAMID --key-id KEYID --p8 FILE|- [--data DIR]
               attestctl apple key list [--json] [--data DIR]
               attestctl apple key remove --team TEAMID [--data DIR]

        add stores the team's DeviceCheck key (Apple's AuthKey_KEYID.p8: a P-256 key in PKCS #8
        PEM) as DATA/keys/apple/TEAMID.p8, mode 0600, owned by the data directory's owner, and
        lifts a stop a 401 put on the team (the team's receipts put off meanwhile are due again).
        FILE must be a regular file reached through no symbolic link, and not readable by every
        user (chmod 600 it first); '-' reads the key from standard input.
        The key is never printed: list shows the team, the key id and the public key's SHA-256.
        Backups carry these files like the signing keys.

        example: attestctl apple key add --team ABCDE12345 --key-id KEY1234567 --p8 AuthKey_KEY1234567.p8
        """,
    run: { argv in
        let (word, afterKey) = try subcommand(argv, ["key"])
        _ = word
        let (sub, rest) = try subcommand(afterKey, ["add", "list", "remove"])
        let args = try Arguments(rest, valued: ["data", "team", "key-id", "p8"], switches: ["json"])
        let data = dataDirectory(args)
        let keys = AppleKeyStore(data)
        switch sub {
        case "add":
            guard let team = args.value("team"), let keyID = args.value("key-id"), let file = args.value("p8") else {
                throw UsageError("add needs --team, --key-id and --p8")
            }
            let pem = try AppleKeyFile.read(file)
            let key = try DeviceCheckKey(teamID: team, keyID: keyID, pem: pem)
            try keys.add(key)
            let (_, store) = try openStore(data)
            let lifted: String? = try store.write { txn in
                guard var record = try txn.appleTeam(team), record.stoppedAt != nil else { return nil }
                let reason = record.stopReason
                record.stoppedAt = nil
                record.stopReason = ""
                try txn.put(record)
                return reason
            }
            let resumed = try ReceiptRedeemer.resume(team: team, store: store, at: now())
            Output.out("DeviceCheck key \(keyID) stored for team \(team) in \(keys.directory)/\(team).p8 (0600)")
            if let lifted { Output.out("team \(team) was stopped (\(lifted)): its receipts are redeemed again") }
            if resumed > 0 { Output.out("\(resumed) receipt(s) of team \(team) put off meanwhile are due now") }
            return 0
        case "remove":
            guard let team = args.value("team") else { throw UsageError("remove needs --team") }
            guard DeviceCheckKey.isIdentifier(team) else {
                throw UsageError("--team: an Apple team id is ten upper-case letters or digits")
            }
            guard try keys.remove(team: team) else {
                Output.err("attestctl apple: no key for team \(team)")
                return 1
            }
            Output.out("DeviceCheck key of team \(team) removed: its receipts are no longer redeemed")
            return 0
        default:
            let listed = keys.list()
            if args.flag("json") {
                let items: [JSONValue] = listed.map {
                    ["team": .string($0.teamID), "keyId": .string($0.keyID),
                     "publicKeySha256": .string($0.publicKeySHA256)]
                }
                Output.out(JSONValue.array(items).prettyJSONText)
            } else if listed.isEmpty {
                Output.out("no DeviceCheck keys (attestctl apple key add --team T --key-id K --p8 FILE)")
            } else {
                Output.out(Output.table(["TEAM", "KEY ID", "PUBLIC KEY SHA-256"],
                                        listed.map { [$0.teamID, $0.keyID, $0.publicKeySHA256] }))
            }
            return 0
        }
    }
)

/// Reading the operator's .p8 file: a regular file, not a link, not readable by every user,
/// at most `DeviceCheckKey.maxPEMBytes`; or standard input for `-`.
///
/// Root on a data directory another user owns acts as that user before a command runs
/// (`actAsDataOwner`), and that user cannot read root's own files (`/root/AuthKey_….p8`): so
/// main reads the file root named first (`readBeforeSwitching`), with root's rights on root's
/// choice of path, and the command uses what was read.
enum AppleKeyFile {
    /// What `readBeforeSwitching` read: the path and its text, or the refusal.
    nonisolated(unsafe) static var early: (path: String, result: Result<String, any Error>)?

    /// For `attestctl apple key add … --p8 FILE`: reads FILE now.
    static func readBeforeSwitching(_ argv: [String]) {
        guard argv.count > 2, argv[0] == "apple", argv[1] == "key", argv[2] == "add",
              let i = argv.firstIndex(of: "--p8"), i + 1 < argv.count, argv[i + 1] != "-" else { return }
        let path = argv[i + 1]
        early = (path, Result { try open(path) })
    }

    static func read(_ path: String) throws -> String {
        if path == "-" { return try bounded(STDIN_FILENO, path: "standard input") }
        if let early, early.path == path { return try early.result.get() }
        return try open(path)
    }

    /// Opens `path` one component at a time from `/` (or the working directory), none of them
    /// followed if it is a symbolic link: root reads this file, and a directory on the way
    /// that someone else controls (a link planted in the data directory) must not lead it to
    /// a key it never meant to hand over.
    private static func open(_ path: String) throws -> String {
        let parts = path.split(separator: "/", omittingEmptySubsequences: true).map(String.init)
        guard let name = parts.last, name != "..", name != "." else {
            throw CommandFailure(.failed, "refusing \(path): not a file name")
        }
        var dir = Glibc.open(path.hasPrefix("/") ? "/" : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        for part in parts.dropLast() {
            let next = openat(dir, part, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            let failure = errno
            close(dir)
            guard next >= 0 else {
                let why = failure == ELOOP || failure == ENOTDIR
                    ? "\(part) on its path is a symbolic link or not a directory, not followed (give the real path, "
                      + "or --p8 - to read standard input)"
                    : String(cString: strerror(failure))
                throw CommandFailure(.failed, "refusing \(path): \(why)")
            }
            dir = next
        }
        let fd = openat(dir, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        let failure = errno
        close(dir)
        guard fd >= 0 else {
            let why = failure == ELOOP ? "a symbolic link, not followed" : String(cString: strerror(failure))
            throw CommandFailure(.failed, "refusing \(path): \(why)")
        }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0, st.st_mode & S_IFMT == S_IFREG else {
            throw CommandFailure(.failed, "refusing \(path): not a regular file")
        }
        guard st.st_mode & 0o004 == 0 else {
            let mode = String(st.st_mode & 0o777, radix: 8)
            throw CommandFailure(.failed, "refusing \(path): readable by every user (mode \(mode)); "
                                 + "the key may have leaked: chmod 600 it, or revoke it in Apple's developer account")
        }
        return try bounded(fd, path: path)
    }

    private static func bounded(_ fd: Int32, path: String) throws -> String {
        var bytes = [UInt8]()
        var buffer = [UInt8](repeating: 0, count: 4096)
        while bytes.count <= DeviceCheckKey.maxPEMBytes {
            let n = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            guard n >= 0 else {
                throw CommandFailure(.failed, "cannot read \(path): \(String(cString: strerror(errno)))")
            }
            if n == 0 { break }
            bytes += buffer[..<n]
        }
        guard bytes.count <= DeviceCheckKey.maxPEMBytes else {
            throw CommandFailure(.failed,
                                 "refusing \(path): larger than \(DeviceCheckKey.maxPEMBytes) bytes, not a .p8 key")
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
