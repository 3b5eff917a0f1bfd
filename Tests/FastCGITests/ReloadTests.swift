@testable import FastCGI
import Glibc
import Testing

@Suite("Reload: handover and preflight") struct ReloadTests {
    @Test("the handover round-trips through its environment form")
    func handoverRoundTrip() {
        let h = Reload.Handover(fd: 7, workers: [101, 202])
        #expect(h.encoded == "fd=7 workers=101,202")
        #expect(Reload.Handover(encoded: h.encoded) == h)
        #expect(Reload.Handover(encoded: "fd=3 workers=") == Reload.Handover(fd: 3, workers: []))
        #expect(Reload.Handover(encoded: "workers=1") == nil, "no descriptor, no handover")
        #expect(Reload.Handover(encoded: "fd=-1") == nil)
    }

    @Test("two reload outcomes in the same second are told apart (attestctl reload waits for the line to change)")
    func statusLinesOfOneSecondDiffer() {
        var template = Array("/tmp/attest-reload-status-XXXXXX".utf8CString)
        let dir = template.withUnsafeMutableBufferPointer { String(cString: mkdtemp($0.baseAddress!)) }
        defer { unlink(dir + "/p.sock.reload"); rmdir(dir) }
        func line() -> String {
            guard let f = fopen(dir + "/p.sock.reload", "r") else { return "" }
            defer { fclose(f) }
            var buffer = [CChar](repeating: 0, count: 256)
            return fgets(&buffer, 256, f).map { _ in String(cString: buffer) } ?? ""
        }
        Reload.writeStatus(socketPath: dir + "/p.sock", ok: true, "same text")
        let first = line()
        Reload.writeStatus(socketPath: dir + "/p.sock", ok: true, "same text")
        let second = line()
        #expect(first.hasSuffix(" ok same text\n") && second.hasSuffix(" ok same text\n"))
        #expect(first != second)
    }

    @Test("--check is a switch that parse takes out of the arguments")
    func checkSwitch() throws {
        let (options, rest) = try ServerOptions.parse(["--socket", "/s", "--check", "--data", "/d"])
        #expect(options.checkOnly && rest == ["--data", "/d"])
        #expect(try ServerOptions.parse(["--socket", "/s"]).0.checkOnly == false)
    }

    @Test("a preflight passes for a command that exits 0 and names the status and stderr otherwise")
    func preflight() {
        #expect(Reload.Executable(path: "/bin/sh", arguments: ["-c", "exit 0"]).preflight(timeout: 10) == nil)
        let failure = Reload.Executable(path: "/bin/sh", arguments: ["-c", "echo broken >&2; exit 3"])
            .preflight(timeout: 10)
        #expect(failure?.contains("exited with status 3") == true && failure?.contains("broken") == true,
                "\(failure ?? "nil")")
        let missing = Reload.Executable(path: "/nonexistent/attest-refresh", arguments: []).preflight(timeout: 10)
        #expect(missing != nil)
        let slow = Reload.Executable(path: "/bin/sh", arguments: ["-c", "sleep 5"]).preflight(timeout: 0.3)
        #expect(slow?.contains("did not finish") == true)
    }
}
