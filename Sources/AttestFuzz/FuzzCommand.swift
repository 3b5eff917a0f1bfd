import AttestCore
import Glibc

/// `attest-fuzz` without libFuzzer:
///
/// ```
/// attest-fuzz list                      the targets and what each feeds its input to
/// attest-fuzz seed DIR                  writes the synthetic seeds to DIR/<target>/seed-<sha256 prefix>
/// attest-fuzz replay TARGET PATH...     runs the target on each file (directories: each file in them)
/// ```
/// `replay` is how crash inputs kept in the corpus are checked by plain builds and tests: a
/// regression traps exactly as it did under libFuzzer.
public enum FuzzCommand {
    public static func run(_ arguments: [String]) -> Int32 {
        switch arguments.first {
        case "list":
            for name in FuzzTargets.names { print("\(name)\t\(FuzzTargets.make(name)!.summary)") }
            return 0
        case "seed" where arguments.count == 2:
            do {
                for (target, inputs) in try SeedCorpus.make().sorted(by: { $0.key < $1.key }) {
                    let dir = arguments[1] + "/" + target
                    mkdir(dir, 0o755)
                    for input in inputs {
                        try FuzzFiles.write(dir + "/seed-" + Hex.encode(SHA256.hash(input).prefix(8)), input)
                    }
                    print("\(target): \(inputs.count) seeds")
                }
                return 0
            } catch {
                warn("attest-fuzz seed: \(error)")
                return 1
            }
        case "replay" where arguments.count >= 3:
            guard let target = FuzzTargets.make(arguments[1]) else {
                warn("attest-fuzz: unknown target \(arguments[1]) (targets: "
                     + "\(FuzzTargets.names.joined(separator: " ")))")
                return 2
            }
            var count = 0
            for path in arguments.dropFirst(2) {
                for file in FuzzFiles.inputs(at: path) {
                    guard let input = FuzzFiles.read(file) else {
                        warn("attest-fuzz: cannot read \(file)")
                        return 1
                    }
                    target.run(input[...])
                    count += 1
                }
            }
            print("\(target.name): \(count) inputs replayed, no crash")
            return 0
        default:
            warn("usage: attest-fuzz list | seed DIR | replay TARGET PATH...")
            return 2
        }
    }
}

/// Writes a line to standard error.
func warn(_ text: String) {
    var line = text
    line += "\n"
    line.withUTF8 { _ = write(2, $0.baseAddress, $0.count) }
}

/// Small file helpers over Glibc (the fuzz code stays free of Foundation like the rest).
public enum FuzzFiles {
    /// `path` itself when it is a file; the regular files directly inside it, sorted, when it
    /// is a directory.
    public static func inputs(at path: String) -> [String] {
        guard let dir = opendir(path) else { return [path] }
        defer { closedir(dir) }
        var files = [String]()
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) {
                String(cString: $0.bindMemory(to: CChar.self).baseAddress!)
            }
            if name.hasPrefix(".") { continue }
            var info = stat()
            let full = path + "/" + name
            if stat(full, &info) == 0, info.st_mode & S_IFMT == S_IFREG { files.append(full) }
        }
        return files.sorted()
    }

    public static func read(_ path: String) -> [UInt8]? {
        guard let file = fopen(path, "rb") else { return nil }
        defer { fclose(file) }
        var out = [UInt8]()
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            let n = fread(&chunk, 1, chunk.count, file)
            out += chunk[..<n]
            if n < chunk.count { return ferror(file) == 0 ? out : nil }
        }
    }

    /// Deletes `path` and everything under it (no symbolic links are followed).
    public static func removeTree(_ path: String) {
        var info = stat()
        guard lstat(path, &info) == 0 else { return }
        if info.st_mode & S_IFMT == S_IFDIR, let dir = opendir(path) {
            var names = [String]()
            while let entry = readdir(dir) {
                let name = withUnsafeBytes(of: entry.pointee.d_name) {
                    String(cString: $0.bindMemory(to: CChar.self).baseAddress!)
                }
                if name != "." && name != ".." { names.append(name) }
            }
            closedir(dir)
            for name in names { removeTree(path + "/" + name) }
            rmdir(path)
        } else {
            unlink(path)
        }
    }

    struct WriteError: Error, CustomStringConvertible {
        let path: String
        var description: String { "cannot write \(path)" }
    }

    static func write(_ path: String, _ bytes: [UInt8]) throws {
        guard let file = fopen(path, "wb") else { throw WriteError(path: path) }
        defer { fclose(file) }
        guard fwrite(bytes, 1, bytes.count, file) == bytes.count else { throw WriteError(path: path) }
    }
}
