@testable import AttestStore
import Foundation
import Testing

/// The ephemeral environment (no sync at commit) is recreated when the store is first opened
/// after the machine restarted, and the store says when (`ephemeralResetAt`).
@Suite struct EphemeralResetTests {
    let dir = TemporaryDirectory()
    var storePath: String { dir.path + "/store" }

    private func open() throws -> Store {
        try Store(directory: storePath, options: StoreOptions(durableMapSizeMiB: 16, ephemeralMapSizeMiB: 16))
    }

    /// Puts a used challenge in the ephemeral environment and closes the store.
    private func useChallenge() throws {
        let store = try open()
        let fresh = try store.write([.ephemeral]) {
            try $0.consumeChallenge(id: Array(repeating: 7, count: 16), expiry: 4_000_000_000)
        }
        #expect(fresh)
    }

    private func challengeIsUsed(_ store: Store) throws -> Bool {
        try !store.write([.ephemeral]) {
            try $0.consumeChallenge(id: Array(repeating: 7, count: 16), expiry: 4_000_000_000)
        }
    }

    private func recordedBoot() throws -> String {
        try String(contentsOfFile: storePath + "/ephemeral.boot", encoding: .utf8)
    }

    @Test func aStoreHeldOpenByAnotherProcessIsSeenAsOpen() throws {
        do { _ = try open() }  // creates both environments, closed again
        #expect(Store.isOpenElsewhere(directory: storePath) == false)
        // Another process holding what LMDB holds while an environment is open: an fcntl lock
        // on the first byte of its lock.mdb (python's lockf is fcntl's F_SETLK).
        let holder = Process()
        holder.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        let ready = storePath + "/held"
        holder.arguments = ["-c", """
            import fcntl, os, sys, time
            f = open(sys.argv[1], "r+"); fcntl.lockf(f, fcntl.LOCK_SH, 1, 0)
            open(sys.argv[2], "w").close(); time.sleep(10)
            """, storePath + "/ephemeral/lock.mdb", ready]
        try holder.run()
        defer { kill(holder.processIdentifier, SIGKILL); holder.waitUntilExit() }
        var waited = 0
        while !FileManager.default.fileExists(atPath: ready) && waited < 500 { usleep(10_000); waited += 1 }
        #expect(Store.isOpenElsewhere(directory: storePath) == true, "the ephemeral environment is held open elsewhere")
    }

    @Test func aNewStoreRecordsTheBootWithoutAReset() throws {
        let store = try open()
        #expect(store.ephemeralResetAt == 0)
        let boot = try #require(EphemeralReset.currentBootID())
        #expect(try recordedBoot() == "\(boot) 0\n")
    }

    @Test func reopeningInTheSameBootKeepsWhatWasUsed() throws {
        try useChallenge()
        let store = try open()
        #expect(store.ephemeralResetAt == 0)
        #expect(try challengeIsUsed(store), "a process death or restart within one boot forgets nothing")
    }

    @Test func theFirstOpenAfterARestartRecreatesTheEnvironment() throws {
        try useChallenge()
        // The machine restarted: the recorded boot is another one.
        let (cutoff, reset) = try EphemeralReset.prepare(store: storePath, bootID: "another-boot", now: 1_800_000_000)
        #expect(cutoff == 1_800_000_000 && reset)
        #expect(try recordedBoot() == "another-boot 1800000000\n")
        #expect(!FileManager.default.fileExists(atPath: storePath + "/ephemeral/data.mdb"))
        // Later opens in that boot keep the cutoff and what is used from then on.
        let later = try EphemeralReset.prepare(store: storePath, bootID: "another-boot", now: 1_800_000_500)
        #expect(later.cutoff == 1_800_000_000 && !later.reset)
    }

    @Test func aCorruptEnvironmentFromBeforeTheRestartIsNotOpened() throws {
        try useChallenge()
        // What a power cut can leave: pages that do not match the meta page.
        let data = storePath + "/ephemeral/data.mdb"
        let handle = try #require(FileHandle(forWritingAtPath: data))
        handle.seek(toFileOffset: 0)
        handle.write(Data(repeating: 0xA5, count: 16_384))
        try handle.close()
        #expect(throws: StoreError.self, "the same boot: the damage is reported, not hidden") { _ = try open() }
        try "an-earlier-boot 0\n".write(toFile: storePath + "/ephemeral.boot", atomically: true, encoding: .utf8)
        let store = try open()
        #expect(store.ephemeralResetAt > 0)
        #expect(store.ephemeralResetNotice?.contains("recreated after a restart") == true, "the operator is told")
        #expect(try !challengeIsUsed(store), "recreated empty")
        #expect(try open().ephemeralResetNotice == nil, "only the open that recreated it says so")
        try store.write([.durable]) { txn in try txn.put(OrgRecord(name: "acme", createdAt: .init(seconds: 1))) }
    }

    @Test func anEnvironmentOpenInAnotherProcessIsLeftAlone() throws {
        try useChallenge()
        // Another process (LMDB holds a lock on lock.mdb's first byte while it has it open).
        let lockFile = storePath + "/ephemeral/lock.mdb"
        let python = Process()
        python.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        python.arguments = ["-c", """
            import fcntl, sys
            f = open(sys.argv[1], 'r+b')
            fcntl.lockf(f, fcntl.LOCK_SH, 1, 0)
            print('locked', flush=True)
            sys.stdin.read()
            """, lockFile]
        let input = Pipe(), out = Pipe()
        python.standardInput = input
        python.standardOutput = out
        try python.run()
        defer {
            try? input.fileHandleForWriting.close()  // the holder exits at EOF
            python.waitUntilExit()
        }
        _ = out.fileHandleForReading.availableData  // "locked"
        let (cutoff, reset) = try EphemeralReset.prepare(store: storePath, bootID: "another-boot", now: 1_800_000_000)
        #expect(cutoff == 0 && !reset, "in use: not reset")
        #expect(FileManager.default.fileExists(atPath: storePath + "/ephemeral/data.mdb"))
        #expect(try recordedBoot() == "another-boot 0\n")
    }

    @Test func filesRecreatedByRootGoToTheStoresOwner() throws {
        guard geteuid() == 0 else { return }  // only root can hand files to another user
        try useChallenge()
        #expect(chown(storePath, 65_534, 65_534) == 0)
        try "an-earlier-boot 0\n".write(toFile: storePath + "/ephemeral.boot", atomically: true, encoding: .utf8)
        _ = try open()
        for file in ["ephemeral/data.mdb", "ephemeral/lock.mdb", "ephemeral.boot"] {
            let owner = try FileManager.default.attributesOfItem(atPath: storePath + "/" + file)[.ownerAccountID]
                as? NSNumber
            #expect(owner?.intValue == 65_534, "\(file)")
        }
    }
}

/// Root opening a store whose directory another user owns (issue 37's review, F1): the files
/// the store keeps beside LMDB's are opened without following a link and handed to that user
/// only when they are a regular file with one name.
@Suite struct StoreFilesUnderAnotherUsersDirectoryTests {
    static let victimText = "root's file, must stay as it is\n"

    /// A store directory owned by `nobody` holding `name` as a link to (or, `hard`, a second
    /// name of) a root-owned 0600 victim outside it; returns the directory, store path and victim.
    static func scene(_ name: String, hard: Bool = false) throws -> (TemporaryDirectory, String, String) {
        let dir = TemporaryDirectory()
        chmod(dir.path, 0o755)
        let victim = dir.path + "/victim"
        _ = FileManager.default.createFile(atPath: victim, contents: Data(victimText.utf8),
                                           attributes: [.posixPermissions: 0o600])
        let store = dir.path + "/store"
        mkdir(store, 0o755)
        mkdir(store + "/durable", 0o755)
        let nobody = try #require(getpwnam("nobody"))
        chown(store, nobody.pointee.pw_uid, nobody.pointee.pw_gid)
        chown(store + "/durable", nobody.pointee.pw_uid, nobody.pointee.pw_gid)
        if hard { link(victim, store + "/" + name) } else { symlink(victim, store + "/" + name) }
        return (dir, store, victim)
    }

    static func untouched(_ victim: String) -> Bool {
        var st = stat()
        return stat(victim, &st) == 0 && st.st_uid == 0 && st.st_mode & 0o777 == 0o600
            && (try? String(contentsOfFile: victim, encoding: .utf8)) == victimText
    }

    @Test(.enabled(if: geteuid() == 0)) func aLinkedBootFileIsNeitherFollowedNorHandedOver() throws {
        let (dir, store, victim) = try Self.scene("ephemeral.boot")
        _ = try EphemeralReset.prepare(store: store, bootID: "boot-a", now: 1_000)
        #expect(Self.untouched(victim), "ephemeral.boot -> root's file: root wrote or chowned the target")
        _ = dir
    }

    @Test(.enabled(if: geteuid() == 0)) func aBootFileWithASecondNameIsNotHandedOver() throws {
        let (dir, store, victim) = try Self.scene("ephemeral.boot", hard: true)
        #expect(throws: StoreError.self) { _ = try EphemeralReset.prepare(store: store, bootID: "boot-a", now: 1_000) }
        #expect(Self.untouched(victim), "a hard link to root's file was written or handed to the directory's owner")
        _ = dir
    }

    @Test(.enabled(if: geteuid() == 0)) func aLinkedSyncStateIsNeitherFollowedNorHandedOver() throws {
        let (dir, store, victim) = try Self.scene("durable/sync.state")
        let nobody = try #require(getpwnam("nobody"))
        _ = try? Store(directory: store, options: StoreOptions(durableMapSizeMiB: 16, ephemeralMapSizeMiB: 16))
        #expect(Self.untouched(victim), "durable/sync.state -> root's file: root truncated or chowned the target")
        _ = (dir, nobody)
    }
}
