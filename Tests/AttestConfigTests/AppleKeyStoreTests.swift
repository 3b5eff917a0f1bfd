import AttestConfig
import AttestCore
import Foundation
import Testing

/// The teams' DeviceCheck keys under DATA/keys/apple (issue 40): 0600, never listed, and a
/// directory or file the service user swapped for a link is refused.
@Suite struct AppleKeyStoreTests {
    static func dataDirectory() throws -> DataDirectory {
        let dir = NSTemporaryDirectory() + "applekeys-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir + "/keys", withIntermediateDirectories: true)
        return DataDirectory(dir)
    }

    static let pem = try! SigningKey.generate(.p256).pemEncoded

    @Test func aKeyIsStored0600ListedWithoutItsKeyAndRemoved() throws {
        let data = try Self.dataDirectory()
        defer { try? FileManager.default.removeItem(atPath: data.path) }
        let store = AppleKeyStore(data)
        try store.add(try DeviceCheckKey(teamID: "ABCDE12345", keyID: "KEY1234567", pem: Self.pem))
        var info = stat()
        #expect(stat(store.directory + "/ABCDE12345.p8", &info) == 0 && info.st_mode & 0o777 == 0o600)
        #expect(stat(store.directory + "/ABCDE12345.keyid", &info) == 0 && info.st_mode & 0o777 == 0o600)
        let listed = store.list()
        #expect(listed.map(\.teamID) == ["ABCDE12345"] && listed.map(\.keyID) == ["KEY1234567"])
        let body = String(Self.pem.split(separator: "\n")[1])
        #expect(!"\(listed)".contains(body), "the listing never holds the key")
        let loaded = try #require(try store.key(team: "ABCDE12345"))
        #expect(loaded.key.subjectPublicKeyInfo == (try SigningKey(pemEncoded: Self.pem)).subjectPublicKeyInfo)
        #expect(try store.remove(team: "ABCDE12345"))
        #expect(try store.key(team: "ABCDE12345") == nil && store.teams().isEmpty)
    }

    @Test func keysAppleSwappedForALinkIsRefused() throws {
        let data = try Self.dataDirectory()
        defer { try? FileManager.default.removeItem(atPath: data.path) }
        let elsewhere = data.path + "/elsewhere"
        try FileManager.default.createDirectory(atPath: elsewhere, withIntermediateDirectories: true)
        #expect(symlink(elsewhere, data.keysDirectory + "/apple") == 0)
        let store = AppleKeyStore(data)
        #expect(throws: ConfigError.self) {
            try store.add(try DeviceCheckKey(teamID: "ABCDE12345", keyID: "KEY1234567", pem: Self.pem))
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: elsewhere).isEmpty, "nothing written through it")
    }

    @Test func aKeyFileThatIsALinkIsNotRead() throws {
        let data = try Self.dataDirectory()
        defer { try? FileManager.default.removeItem(atPath: data.path) }
        let store = AppleKeyStore(data)
        try store.add(try DeviceCheckKey(teamID: "ABCDE12345", keyID: "KEY1234567", pem: Self.pem))
        let planted = data.path + "/planted.p8"
        try Self.pem.write(toFile: planted, atomically: false, encoding: .utf8)
        unlink(store.directory + "/ABCDE12345.p8")
        #expect(symlink(planted, store.directory + "/ABCDE12345.p8") == 0)
        #expect(throws: ConfigError.self) { try store.key(team: "ABCDE12345") }
    }

    @Test("a team id with path characters names no file", arguments: ["../../x", "ABCDE/1234", ".", ""])
    func pathCharacters(team: String) throws {
        let data = try Self.dataDirectory()
        defer { try? FileManager.default.removeItem(atPath: data.path) }
        let store = AppleKeyStore(data)
        #expect(try store.key(team: team) == nil)
        #expect(try store.remove(team: team) == false)
    }
}
