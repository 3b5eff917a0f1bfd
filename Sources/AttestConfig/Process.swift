#if canImport(Glibc)
import Glibc
#endif

/// The value of an environment variable.
public func environment(_ name: String) -> String? {
    guard let value = getenv(name) else { return nil }
    return String(decoding: UnsafeRawBufferPointer(start: value, count: strlen(value)), as: UTF8.self)
}

public func processID() -> Int32 { getpid() }
