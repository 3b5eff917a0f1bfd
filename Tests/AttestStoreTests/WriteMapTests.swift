@testable import AttestStore
import CLMDB
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The ephemeral environment writes through its memory map once every block of the map is
/// reserved on disk; the durable one keeps `pwrite`.
@Suite struct WriteMapTests {
    let dir = TemporaryDirectory()

    /// Whether the test directory's file system overwrites reserved blocks in place.
    var reservable: Bool {
        var fs = statfs()
        guard statfs(dir.path, &fs) == 0 else { return false }
        return [0xEF53, 0x5846_5342, 0x0102_1994].contains(Int(fs.f_type))
    }

    /// The file's size and the bytes the disk has allocated to it; (-1, -1) when missing.
    func sizes(_ path: String) -> (size: Int, allocated: Int) {
        var st = stat()
        return stat(path, &st) == 0 ? (Int(st.st_size), Int(st.st_blocks) * 512) : (-1, -1)
    }

    @Test func theEphemeralMapIsReservedAndWrittenThroughTheDurableIsNot() throws {
        let store = try Store(directory: dir.path + "/store",
                              options: StoreOptions(durableMapSizeMiB: 16, ephemeralMapSizeMiB: 8))
        let lmdb = try #require(store.backend as? LMDBStore)
        #expect(lmdb.ephemeral.writesThroughMap == reservable, "ext4, XFS and tmpfs reserve; others write with pwrite")
        #expect(!lmdb.durable.writesThroughMap)
        if reservable {
            #expect(sizes(dir.path + "/store/ephemeral/data.mdb").allocated >= 8 << 20, "every block of the 8 MiB map")
        }
        #expect(sizes(dir.path + "/store/durable/data.mdb").allocated < 16 << 20, "the durable map stays sparse")
    }

    @Test func writesThroughTheMapAreReadBackAfterReopening() throws {
        let options = StoreOptions(durableMapSizeMiB: 16, ephemeralMapSizeMiB: 8)
        let ids = (0..<500).map { i in [UInt8(i >> 8), UInt8(i & 0xFF)] + [UInt8](repeating: 0xA5, count: 14) }
        do {
            let store = try Store(directory: dir.path + "/store", options: options)
            try store.write([.ephemeral]) { txn in
                for id in ids {
                    let fresh = try txn.consumeChallenge(id: id, expiry: 4_000_000_000)
                    #expect(fresh)
                }
                for _ in 0..<3 { _ = try txn.hitRateWindow("ip:192.0.2.1", windowEnd: 4_000_000_000) }
            }
        }
        let store = try Store(directory: dir.path + "/store", options: options)
        try store.write([.ephemeral]) { txn in
            let used = try ids.filter { try txn.isChallengeUsed(id: $0, expiry: 4_000_000_000) }.count
            #expect(used == ids.count)
            let again = try txn.consumeChallenge(id: ids[7], expiry: 4_000_000_000)
            #expect(!again, "still used: single use holds")
            let hits = try txn.hitRateWindow("ip:192.0.2.1", windowEnd: 4_000_000_000)
            #expect(hits == 4)
        }
    }

    /// A process configured with a smaller map than the file's (the setting lowered while
    /// pools still run with the old one) must not open it writable: LMDB would truncate the
    /// file to its map under the others' writable maps. It writes with pwrite instead, and
    /// the file keeps its size. (One store at a time: LMDB forbids opening an environment
    /// twice in one process.)
    @Test func aSmallerMapThanTheFileIsNotWrittenThroughAndDoesNotShrinkIt() throws {
        guard reservable else { return }
        let path = dir.path + "/store/ephemeral/data.mdb"
        func open(_ mib: Int) throws -> Store {
            try Store(directory: dir.path + "/store",
                      options: StoreOptions(durableMapSizeMiB: 16, ephemeralMapSizeMiB: mib))
        }
        do {
            let store = try open(8)
            try store.write([.ephemeral]) { txn in _ = try txn.hitRateWindow("ip:192.0.2.9", windowEnd: 4_000_000_000) }
        }
        #expect(sizes(path).size == 8 << 20)
        #expect(attest_reserve_file(path, 4 << 20) == -EFBIG, "a smaller map than the file is refused")
        do {
            let store = try open(4)
            #expect(try #require(store.backend as? LMDBStore).ephemeral.writesThroughMap == false)
            try store.write([.ephemeral]) { txn in _ = try txn.hitRateWindow("ip:192.0.2.9", windowEnd: 4_000_000_000) }
        }
        #expect(sizes(path).size == 8 << 20, "not truncated to the smaller map")
        let store = try open(8)
        #expect(try #require(store.backend as? LMDBStore).ephemeral.writesThroughMap,
                "the file's size again: through the map")
        try store.write([.ephemeral]) { txn in
            let hits = try txn.hitRateWindow("ip:192.0.2.9", windowEnd: 4_000_000_000)
            #expect(hits == 3)
        }
    }

    @Test func aDataFileThatCannotBeReservedFailsToOpenCleanly() throws {
        // A data.mdb that is a directory cannot be reserved (EISDIR): the environment then
        // fails to open exactly as it did before reservations existed, without a crash.
        #expect(mkdir(dir.path + "/store", 0o700) == 0 && mkdir(dir.path + "/store/ephemeral", 0o700) == 0
                && mkdir(dir.path + "/store/ephemeral/data.mdb", 0o700) == 0)
        #expect(attest_reserve_file(dir.path + "/store/ephemeral/data.mdb", 1 << 20) == -EISDIR)
        #expect(throws: StoreError.self) {
            try Store(directory: dir.path + "/store",
                      options: StoreOptions(durableMapSizeMiB: 16, ephemeralMapSizeMiB: 8))
        }
    }
}
