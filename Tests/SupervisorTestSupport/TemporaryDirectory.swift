import Foundation

/// Test support shared by the supervisor's and attestctl's tests (a library target under Tests/,
/// not a product).
///
/// A fresh directory under /tmp (mode 0755), removed when the value is released.
public final class TemporaryDirectory {
    public let path: String

    public init() {
        var template = Array("/tmp/attestctl-test-XXXXXX".utf8CString)
        path = template.withUnsafeMutableBufferPointer { String(cString: mkdtemp($0.baseAddress!)) }
        chmod(path, 0o755)
    }

    public func write(_ name: String, _ text: String, mode: mode_t = 0o644) -> String {
        let file = path + "/" + name
        _ = FileManager.default.createFile(atPath: file, contents: Data(text.utf8),
                                           attributes: [.posixPermissions: mode])
        return file
    }

    public func size(_ name: String) -> Int? {
        (try? FileManager.default.attributesOfItem(atPath: path + "/" + name))?[.size] as? Int
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }
}
