import AttestFuzz
import Testing

/// Every input kept in `Tests/FuzzCorpus/<target>/` (the seeds and every crash the fuzzers
/// found) runs through its target on each `swift test`: a regression traps here as it did
/// under libFuzzer, and under the sanitizers in `nginx/scripts/sanitize.sh`.
@Suite struct CorpusReplayTests {
    static let corpus = String(#filePath.prefix { _ in true }.split(separator: "/").dropLast(2).joined(separator: "/"))

    @Test(arguments: FuzzTargets.names)
    func replaysCorpus(_ name: String) throws {
        let target = try #require(FuzzTargets.make(name), "target \(name) exists")
        let files = FuzzFiles.inputs(at: "/" + Self.corpus + "/FuzzCorpus/" + name)
        #expect(files.count >= 2, "the corpus of \(name) holds its seeds")
        for file in files {
            let input = try #require(FuzzFiles.read(file), "read \(file)")
            target.run(input[...])
        }
    }

    @Test func everyTargetHasACorpusDirectory() {
        for name in FuzzTargets.names {
            #expect(FuzzFiles.inputs(at: "/" + Self.corpus + "/FuzzCorpus/" + name)
                        != ["/" + Self.corpus + "/FuzzCorpus/" + name],
                    "Tests/FuzzCorpus/\(name) is a directory")
        }
    }
}
