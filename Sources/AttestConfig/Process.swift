#if canImport(Glibc)
import Glibc
#endif

/// The value of an environment variable.
public func environment(_ name: String) -> String? {
    guard let value = getenv(name) else { return nil }
    return String(decoding: UnsafeRawBufferPointer(start: value, count: strlen(value)), as: UTF8.self)
}

public func processID() -> Int32 { getpid() }

/// This process's environment, as `NAME=value` entries in their order.
package func environmentEntries() -> [String] {
    var found = [String]()
    var entry = environ
    while let pointer = entry.pointee {
        found.append(String(cString: pointer))
        entry += 1
    }
    return found
}
