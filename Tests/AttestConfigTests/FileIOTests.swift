import AttestConfig
import Foundation
import Testing

/// Root writes files into a data directory the service user can write (issue 37).
@Suite struct FileIOTests {
    @Test("writeAtomically does not write through a link planted at its temporary file's name")
    func plantedTemporaryLinkIsNotFollowed() throws {
        let dir = NSTemporaryDirectory() + "fileio-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let victim = dir + "/victim"
        try "root's own file\n".write(toFile: victim, atomically: false, encoding: .utf8)
        chmod(victim, 0o600)
        // The name writeAtomically uses: PATH.tmp.PID (a PID the attacker can guess or cover).
        symlink(victim, dir + "/config.json.tmp.\(getpid())")
        try FileIO.writeAtomically(dir + "/config.json", text: "{}\n", mode: 0o644)
        #expect(try String(contentsOfFile: victim, encoding: .utf8) == "root's own file\n",
                "the link's target was written")
        var st = stat()
        #expect(stat(victim, &st) == 0 && st.st_mode & 0o777 == 0o600, "the link's target was chmodded")
        #expect(try String(contentsOfFile: dir + "/config.json", encoding: .utf8) == "{}\n")
        var link = stat()
        #expect(lstat(dir + "/config.json", &link) == 0 && link.st_mode & S_IFMT == S_IFREG,
                "config.json is a file of its own")
    }
}
