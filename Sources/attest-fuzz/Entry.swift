import AttestFuzz
import Glibc

#if FUZZING
// Built with `-sanitize=fuzzer -D FUZZING` (nginx/scripts/fuzz.sh): libFuzzer drives the target
// named by ATTEST_FUZZ_TARGET. SwiftPM links an executable's entry point under the name
// `<module>_main`, so that is where libFuzzer's driver is started.

nonisolated(unsafe) var selected: FuzzTarget?

@_silgen_name("LLVMFuzzerRunDriver")
func runDriver(_ argc: UnsafeMutablePointer<CInt>,
               _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
               _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt) -> CInt

@_cdecl("attest_fuzz_main")
func fuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    let name = getenv("ATTEST_FUZZ_TARGET").map { String(cString: $0) } ?? ""
    guard let target = FuzzTargets.make(name) else {
        print("set ATTEST_FUZZ_TARGET to one of: \(FuzzTargets.names.joined(separator: " "))")
        return 2
    }
    selected = target
    var count = argc
    var arguments = argv
    return runDriver(&count, &arguments) { data, size in
        let input = size == 0 ? [] : Array(UnsafeBufferPointer(start: data, count: size))
        selected?.run(input[...])
        return 0
    }
}
#else
// A plain build: list targets, write the seed corpus, or replay inputs without libFuzzer.
@main
struct AttestFuzzCommand {
    static func main() {
        exit(FuzzCommand.run(Array(CommandLine.arguments.dropFirst())))
    }
}
#endif
