import AttestConfig
#if canImport(Glibc)
import Glibc
#endif

/// The environment of a process serve starts as another user (`ChildProcess.Credentials`):
/// root's own (PGPASSWORD, cloud tokens, SSH_AUTH_SOCK, …) would otherwise be readable by
/// that user in /proc/PID/environ of every pool, the deliverer and nginx.
///
/// Kept, by name: `PATH`, the locale (`LANG`, `LANGUAGE`, `LC_*`), `TZ`, `TMPDIR`, and what
/// runs the same programs under a test or debugging harness: `LD_PRELOAD`, `LD_LIBRARY_PATH`,
/// `FAKETIME*` (libfaketime, the clock suite), `MALLOC_*`, the sanitizers' `*SAN_OPTIONS`,
/// `SWIFT_BACKTRACE`. `HOME` is the user's own (its passwd entry), or `/`. Nothing else: no
/// child reads any other variable (`ATTEST_FCGI_HANDOVER` a pool sets for itself), and
/// `ATTEST_TEST_POSTGRES_URL` may carry a password.
enum ServiceEnvironment {
    static let names: Set<String> = ["PATH", "LANG", "LANGUAGE", "TZ", "TMPDIR", "LD_PRELOAD", "LD_LIBRARY_PATH",
                                     "SWIFT_BACKTRACE", "ASAN_OPTIONS", "LSAN_OPTIONS", "TSAN_OPTIONS", "UBSAN_OPTIONS"]
    static let prefixes = ["LC_", "FAKETIME", "MALLOC_"]

    /// `NAME=value` entries of `current` that are kept, in their order, then `HOME=home`.
    static func filtered(_ current: [String], home: String) -> [String] {
        current.filter { entry in
            guard let equals = entry.firstIndex(of: "=") else { return false }
            let name = String(entry[..<equals])
            return names.contains(name) || prefixes.contains { name.hasPrefix($0) }
        } + ["HOME=" + (home.isEmpty ? "/" : home)]
    }

    /// This process's environment, as `NAME=value` entries.
    static func current() -> [String] { environmentEntries() }
}
