import AttestCore
@testable import AttestStore
import Testing

/// `put(_ device:)` writes the deviceId index only when it changes: every refresh stores its
/// device, and rewriting an equal index entry copied a whole B-tree path in LMDB per commit.
@Suite struct DeviceIndexWriteTests {
    /// An in-memory backend transaction that records which databases were written.
    final class Recording: StoreTransaction {
        var entries: [Database: [[UInt8]: [UInt8]]] = [:]
        var writes: [Database] = []

        func get(_ db: Database, _ key: [UInt8]) throws -> [UInt8]? { entries[db]?[key] }
        func put(_ db: Database, _ key: [UInt8], _ value: [UInt8], noOverwrite: Bool) throws -> Bool {
            if noOverwrite, entries[db]?[key] != nil { return false }
            writes.append(db)
            entries[db, default: [:]][key] = value
            return true
        }
        func delete(_ db: Database, _ key: [UInt8]) throws -> Bool {
            writes.append(db)
            return entries[db]?.removeValue(forKey: key) != nil
        }
        func scan(_ db: Database, from start: [UInt8]?, _ visit: ([UInt8], [UInt8]) throws -> Bool) throws {
            for (k, v) in (entries[db] ?? [:]).sorted(by: { $0.key.lexicographicallyPrecedes($1.key) })
            where start.map({ !k.lexicographicallyPrecedes($0) }) ?? true {
                guard try visit(k, v) else { return }
            }
        }
        func scanBackward(_ db: Database, before bound: [UInt8], _ visit: ([UInt8], [UInt8]) throws -> Bool) throws {
            for (k, v) in (entries[db] ?? [:]).sorted(by: { $1.key.lexicographicallyPrecedes($0.key) })
            where k.lexicographicallyPrecedes(bound) {
                guard try visit(k, v) else { return }
            }
        }
        func lastKey(_ db: Database) throws -> [UInt8]? {
            entries[db]?.keys.max(by: { $0.lexicographicallyPrecedes($1) })
        }
        func count(_ db: Database) throws -> Int { entries[db]?.count ?? 0 }
        func prefetch(_ db: Database, _ key: [UInt8]) {}
        func sweepBelow(_ db: Database, _ bound: [UInt8], limit: Int) throws {}
        var prefetches: Bool { false }
        func deleteBelow(_ db: Database, _ bound: [UInt8], limit: Int) throws -> Int { 0 }
        func increment(_ db: Database, _ key: [UInt8]) throws -> UInt32 { try incrementByReadAndWrite(db, key) }
        func append(_ db: Database, _ value: [UInt8]) throws { try appendAfterLastKey(db, value) }
        func insertLater(_ db: Database, _ key: [UInt8], _ value: [UInt8]) throws -> () throws -> Bool {
            try insertNow(db, key, value)
        }
    }

    func device(_ keyByte: UInt8, counter: UInt32 = 0) -> DeviceRecord {
        DeviceRecord(keyID: Array(repeating: keyByte, count: 32), deviceID: "dev-1", appID: "ABCDE12345.com.a",
                     publicKey: [4], counter: counter, environment: .production,
                     createdAt: Timestamp(seconds: 1_790_000_000))
    }

    @Test func aNewDeviceWritesItsIndexEntry() throws {
        let engine = Recording()
        try Transaction(engine, writable: [.durable]).put(device(1))
        #expect(engine.writes == [.devices, .deviceIDs])
        #expect(engine.entries[.deviceIDs]?[Array("dev-1".utf8)] == Array(repeating: 1, count: 32))
    }

    @Test func storingAgainWritesOnlyTheRecord() throws {
        let engine = Recording()
        let txn = Transaction(engine, writable: [.durable])
        try txn.put(device(1))
        engine.writes = []
        try txn.put(device(1, counter: 7))
        #expect(engine.writes == [.devices])
        #expect(try txn.device(deviceID: "dev-1")?.counter == 7)
    }

    @Test func aNewKeyForTheSameDeviceIdMovesTheIndex() throws {
        let engine = Recording()
        let txn = Transaction(engine, writable: [.durable])
        try txn.put(device(1))
        engine.writes = []
        try txn.put(device(2))
        #expect(engine.writes == [.devices, .deviceIDs])
        #expect(try txn.device(deviceID: "dev-1")?.keyID == Array(repeating: 2, count: 32))
    }
}
