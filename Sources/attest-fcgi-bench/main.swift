// attest-fcgi-bench: baseline responders for benchmarks and the FastCGI end-to-end tests.
//
//   attest-fcgi-bench --mode trivial|echo|p256-verify|p256-verify-sign|p384-verify|slow --socket PATH
//                     [--workers N] [--body-limit BYTES] [--socket-mode OCTAL] [--shutdown-grace SECONDS]
import FastCGI
import Glibc

let usage = "usage: attest-fcgi-bench --mode trivial|echo|p256-verify|p256-verify-sign|p384-verify|slow --socket PATH"
    + " [--workers N] [--body-limit BYTES] [--socket-mode OCTAL] [--shutdown-grace SECONDS]"

func fail(_ message: String) -> Never {
    var line = "attest-fcgi-bench: \(message)\n\(usage)\n"
    line.withUTF8 { _ = write(STDERR_FILENO, $0.baseAddress, $0.count) }
    exit(2)
}

let options: ServerOptions
let mode: BenchMode
do {
    let (parsed, rest) = try ServerOptions.parse(Array(CommandLine.arguments.dropFirst()))
    options = parsed
    let value: String
    if rest.count == 2, rest[0] == "--mode" {
        value = rest[1]
    } else if rest.count == 1, rest[0].hasPrefix("--mode=") {
        value = String(rest[0].dropFirst("--mode=".count))
    } else {
        fail(rest.isEmpty ? "--mode is required" : "unexpected arguments: \(rest.joined(separator: " "))")
    }
    guard let chosen = BenchMode(rawValue: value) else { fail("--mode: unknown mode \"\(value)\"") }
    mode = chosen
} catch {
    fail("\(error)")
}

exit(FastCGIServer.run(options, name: "attest-fcgi-bench") { try BenchResponder(mode: mode) })
