import AttestConfig
import AttestCore
import AttestService
import AttestStore
import CLISupport
#if canImport(Glibc)
import Glibc
#endif

/// `attest-bench store`: the store's floors and a bulk loader for scaling benchmarks.
///
/// - `bench store puts [--seconds N] [--dir DIR]`: LMDB put rates in a scratch store, one
///   100-byte put per write transaction: `commit` (synced: what one durable commit costs)
///   and `interval` (no sync at commit; the background sync every 10 ms runs). Prints
///   `durable_puts_per_s=… nosync_puts_per_s=…`.
/// - `bench store load --count N --app APPID [--data DIR]`: writes N synthetic active device
///   records of APPID (random keyIds, one P-256 public key shared by all, counter 0) and their
///   deviceId index entries straight into the durable store, 10,000 per transaction, so that
///   throughput can be measured against a store of N devices. Prints bytes used per device.
///   Then it compacts the durable environment (`mdb_env_copy2` with `MDB_CP_COMPACT`, as a
///   restore from backup would): transactions of 10,000 random keys leave LMDB's free-page list
///   holding the pages the last batches copied (38,844 pages at 1M devices), and every later
///   commit then rewrites that list (76 overflow pages, about 300 KB), which made refreshes
///   20–25% dearer at 1M than at 10k devices. A store grown one request at a time reuses its
///   freed pages as it goes. Nothing may have the store open while it loads.
enum StoreBench {
    static func run(_ argv: [String]) throws -> Int32 {
        switch argv.first {
        case "puts": return try puts(Array(argv.dropFirst()))
        case "load": return try load(Array(argv.dropFirst()))
        default: throw UsageError("bench store puts|load")
        }
    }

    static func puts(_ argv: [String]) throws -> Int32 {
        let args = try Arguments(argv, valued: ["seconds", "dir"], switches: [])
        let seconds = Double(try args.int("seconds", default: 2, in: 1...600))
        let base = args.value("dir") ?? "/tmp"
        var results = [String]()
        for (name, sync) in [("durable", StoreOptions.Sync.commit), ("nosync", .interval(milliseconds: 10))] {
            var template = Array((base + "/attestctl-bench-store.XXXXXX").utf8CString)
            guard let dir = mkdtemp(&template) else { throw UsageError("cannot create a directory under \(base)") }
            let path = String(cString: dir)
            defer { _ = system("rm -rf '\(path)'") }
            let store = try Store(directory: path + "/store", options: StoreOptions(durableMapSizeMiB: 256, sync: sync))
            let value = [UInt8](repeating: 7, count: 100)
            var n = 0
            let start = UsageBench.seconds()
            while UsageBench.seconds() - start < seconds {
                let key = Array("bench-\(n)".utf8)
                try store.write([.durable]) { txn in _ = try txn.put(.meta, key, value) }
                n += 1
            }
            results.append("\(name)_puts_per_s=\(Int(Double(n) / (UsageBench.seconds() - start)))")
        }
        Output.out(results.joined(separator: " "))
        return 0
    }

    static func load(_ argv: [String]) throws -> Int32 {
        let args = try Arguments(argv, valued: ["data", "count", "app"], switches: [])
        let count = try args.int("count", default: 10_000, in: 1...100_000_000)
        guard let appID = args.value("app") else { throw UsageError("--app APPID is required") }
        let data = DataDirectory(flag: args.value("data"))
        let (loaded, elapsed, perDevice) = try loadDevices(count, appID: appID, into: data)
        let compacted = try compactDurable(data)
        Output.out("loaded=\(loaded) seconds=\(String(format2: elapsed)) bytes_per_device=\(perDevice) "
                   + "compacted_bytes=\(compacted)")
        return 0
    }

    /// Writes `count` synthetic devices; returns them, the seconds taken and the map bytes used
    /// per device. The store is closed on return.
    private static func loadDevices(_ count: Int, appID: String,
                                    into data: DataDirectory) throws -> (Int, Double, Int) {
        let store = try Store(directory: data.storeDirectory, options: try data.loadConfiguration().storeOptions)
        let publicKey = try SigningKey.generate(.p256).publicKey().x962Point
        let created = SystemClock().now()
        let before = store.usage().first { $0.environment == .durable }?.used ?? 0
        let random = SystemRandom()
        let started = UsageBench.seconds()
        var done = 0
        while done < count {
            let batch = min(10_000, count - done)
            try store.write([.durable]) { txn in
                for _ in 0..<batch {
                    let keyID = random.bytes(32)
                    try txn.put(DeviceRecord(keyID: keyID, deviceID: DeviceIdentity.deviceID(keyID: keyID),
                                             appID: appID, publicKey: publicKey, environment: .production,
                                             createdAt: created))
                }
            }
            done += batch
        }
        let after = store.usage().first { $0.environment == .durable }?.used ?? 0
        return (count, UsageBench.seconds() - started, (after - before) / count)
    }

    /// Replaces the durable environment's `data.mdb` by a compacted copy (no free pages), with
    /// a fresh `lock.mdb` and no `sync.state` (the copy restarts transaction ids). Returns the
    /// new file's size.
    private static func compactDurable(_ data: DataDirectory) throws -> Int {
        let durable = data.storeDirectory + "/durable", scratch = durable + ".compacting"
        _ = system("rm -rf '\(scratch)'")
        guard mkdir(scratch, 0o700) == 0 else {
            throw UsageError("cannot create \(scratch): \(String(cString: strerror(errno)))")
        }
        do {
            let store = try Store(directory: data.storeDirectory, options: try data.loadConfiguration().storeOptions)
            try store.copyCompacted(.durable, to: scratch)
        }
        guard rename(scratch + "/data.mdb", durable + "/data.mdb") == 0 else {
            throw UsageError("cannot replace \(durable)/data.mdb: \(String(cString: strerror(errno)))")
        }
        for file in ["lock.mdb", "sync.state"] { unlink(durable + "/" + file) }
        rmdir(scratch)
        var info = stat()
        return stat(durable + "/data.mdb", &info) == 0 ? Int(info.st_size) : 0
    }
}
