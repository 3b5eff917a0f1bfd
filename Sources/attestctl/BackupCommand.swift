import AttestConfig
import AttestCore
import AttestOperations
import AttestService
import AttestStore
import CLISupport
#if canImport(Glibc)
import Glibc
#endif

/// `attestctl backup` and `attestctl restore`.
let backupCommand = Command(
    name: "backup",
    summary: "a consistent hot copy of the data directory (store compacted, keys, config) in one file",
    usage: """
        usage: attestctl backup --to FILE [--data DIR]

        Safe while the stack serves: each LMDB environment is copied from one read snapshot,
        compacted. Run as root, it reads the data directory without following a symbolic link
        (a link or other non-regular file is left out and named on stderr) and opens the store
        as the directory's owner. The file (mode 0600: it holds the signing keys and the challenge secret)
        starts with a header naming the format and store schema and ends with a SHA-256 of
        everything before it. 'attestctl restore --from FILE --data NEWDIR' brings it back.

        example: attestctl backup --to /var/backups/attestedge-$(date +%F).aebk
        """,
    run: { argv in
        let args = try Arguments(argv, valued: ["data", "to"], switches: [])
        guard let target = args.value("to") else { throw UsageError("--to FILE is required") }
        let data = dataDirectory(args)
        guard data.isInitialised else {
            throw CommandFailure(.failed, "\(data.path) is not a data directory (attestctl init creates one)")
        }
        // LMDB opens the store's files by path: with the owner's rights, not root's.
        let (_, store) = try asDataOwner(data) { try openStore(data) }
        let summary = try Backup.take(data: data, store: store, to: target, now: now()) { Output.progress($0, $1) }
        Output.progressDone()
        for entry in summary.skipped { Output.err("attestctl backup: left out \(entry)") }
        Output.out("backup of \(data.path) written to \(target): \(summary.header.entries) entries, "
                   + "\(summary.bytes / 1024) KiB, store schema \(summary.header.schema)")
        return 0
    })

let restoreCommand = Command(
    name: "restore",
    summary: "restore a backup into a data directory (checked in full first)",
    usage: """
        usage: attestctl restore --from FILE --data DIR [--force]

        Checks the whole file (format, schema, SHA-256) before writing anything, then writes
        the data directory's files. A directory that already holds a store is refused unless
        --force; a store that a running pool serves (DIR/run/*.sock.pid alive) is always
        refused (a pid file in DIR/run, or any process with the store open, wherever its
        pools run): stop the stack first.

        example: attestctl restore --from /var/backups/attestedge-2026-12-01.aebk --data /var/lib/attestedge-restored
        """,
    run: { argv in
        let args = try Arguments(argv, valued: ["data", "from"], switches: ["force"])
        guard let source = args.value("from") else { throw UsageError("--from FILE is required") }
        guard args.value("data") != nil else { throw UsageError("--data DIR is required (where to restore)") }
        let data = dataDirectory(args)
        // DATA/run is the service user's: its pid files are read through PinnedDirectory (no
        // link followed, no FIFO waited on) and only up to 32 bytes, so a link to /dev/zero or a
        // sparse gigabyte cannot hold root here.
        let run = try? PinnedDirectory.open(data.path).directory("run")
        let live = (run?.names() ?? []).filter { $0.hasSuffix(".sock.pid") }.filter { name in
            guard let bytes = try? run?.read(name, atMost: 32),
                  let pid = PoolMaster.parse(String(decoding: bytes, as: UTF8.self)) else { return false }
            return kill(pid, 0) == 0 || errno == EPERM
        }
        guard live.isEmpty else {
            throw CommandFailure(.failed, "\(data.path) is served right now (\(live.joined(separator: ", "))): "
                                     + "stop the stack before restoring into it")
        }
        // Pools started elsewhere (systemd's run under /run/attestedge) leave no pid file here:
        // the store's own lock files say whether any process has it open.
        switch Store.isOpenElsewhere(directory: data.storeDirectory) {
        case true?:
            throw CommandFailure(.failed, "\(data.storeDirectory) is open in another process "
                                     + "(a running pool or attestctl): stop the stack before restoring into it")
        case nil:
            throw CommandFailure(.failed, "cannot tell whether \(data.storeDirectory) is open elsewhere "
                                     + "(its lock files cannot be read): stop the stack and check the files' owner")
        case false?:
            break
        }
        if FileIO.exists(data.storeDirectory + "/durable/data.mdb") && !args.flag("force") {
            throw CommandFailure(.already, "\(data.path) already holds a store: restore into a new directory, "
                                     + "or pass --force to replace it")
        }
        let summary = try Backup.restore(from: source, into: data) { Output.progress($0, $1) }
        Output.progressDone()
        Output.out("restored \(summary.header.entries) entries (\(summary.bytes / 1024) KiB, "
                   + "taken \(summary.header.created.iso8601)) into \(data.path)")
        return 0
    })
