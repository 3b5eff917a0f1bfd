#if ATTEST_ABLATE
#if canImport(Glibc)
import Glibc
#endif

/// MEASUREMENT ONLY, compiled only into the ablation build (`swift build -Xswiftc
/// -DATTEST_ABLATE`, which `nginx/bench/ablate.sh` makes in a scratch directory of its own;
/// no other build defines it): the parts of a refresh to switch off (or double), read from the
/// environment variable `ATTEST_ABLATE` ("no-token,no-write"), so one binary serves every
/// variant. Parts: `no-token`, `no-write`, `no-admit`, `no-verify`, `twice-verify`.
public enum Ablation {
    public static let parts: Set<String> = {
        guard let value = getenv("ATTEST_ABLATE") else { return [] }
        return Set(String(cString: value).split(separator: ",").map(String.init))
    }()

    public static func has(_ part: String) -> Bool { parts.contains(part) }
}
#endif
