import AttestCore
import AttestStore
import CLISupport

/// Prints `Store.check()`: a line per database (entries, checked or counted only, problems)
/// and every problem; 0 when consistent, 1 when not.
func storeCheck(_ store: Store, json: Bool) throws -> Int32 {
    let report = try store.check()
    if json {
        Output.out(JSONValue.object([
            ("consistent", .bool(report.isConsistent)),
            ("databases", .object(report.databases.map { result in
                (result.database.rawValue, ["entries": .int(Int64(result.entries)),
                                            "recordsChecked": .bool(result.recordsChecked),
                                            "problemCount": .int(Int64(result.problemCount)),
                                            "problems": .array(result.problems.map { .string($0) })])
            })),
            ("crossProblems", .array(report.crossProblems.map { .string($0) })),
        ]).prettyJSONText)
    } else {
        Output.out(Output.table(["DATABASE", "ENTRIES", "RECORDS", "PROBLEMS"], report.databases.map {
            [$0.database.rawValue, String($0.entries), $0.recordsChecked ? "checked" : "counted only",
             String($0.problemCount)]
        }))
        for result in report.databases {
            for problem in result.problems { Output.out("\(result.database.rawValue): \(problem)") }
            if result.problemCount > result.problems.count {
                Output.out("\(result.database.rawValue): … \(result.problemCount - result.problems.count) more")
            }
        }
        for problem in report.crossProblems { Output.out("store: \(problem)") }
        Output.out(report.isConsistent ? "store check: consistent" : "store check: INCONSISTENT")
    }
    return report.isConsistent ? 0 : 1
}
