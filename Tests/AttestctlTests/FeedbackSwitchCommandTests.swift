import Foundation
import Testing

/// `attestctl org set NAME --feedback on|off`: the organization's switch for feature requests
/// and support tickets, shown by `org list --json`.
@Suite("FeedbackSwitchCommand") struct FeedbackSwitchCommandTests {
    static func feedback(_ cli: FlagsCommandTests.CLI, _ org: String) throws -> Bool? {
        let out = try cli.ok(["org", "list", "--json"])
        let orgs = try JSONSerialization.jsonObject(with: Data(out.utf8)) as? [[String: Any]]
        return orgs?.first { $0["name"] as? String == org }?["feedback"] as? Bool
    }

    @Test func theSwitchTurnsFeedbackOffAndOnAgain() throws {
        let cli = try FlagsCommandTests.CLI()
        #expect(try Self.feedback(cli, "acme") == true, "on by default")
        let off = try cli.ok(["org", "set", "acme", "--feedback", "off"])
        #expect(off.contains("feedback off"))
        #expect(try Self.feedback(cli, "acme") == false)
        #expect(try Self.feedback(cli, "tiny") == true, "only that organization")
        _ = try cli.ok(["org", "set", "acme", "--tier", "business"])
        #expect(try Self.feedback(cli, "acme") == false, "another change leaves the switch as it is")
        _ = try cli.ok(["org", "set", "acme", "--feedback", "on"])
        #expect(try Self.feedback(cli, "acme") == true)
        let (status, _, err) = try cli.run(["org", "set", "acme", "--feedback", "maybe"])
        #expect(status != 0 && err.contains("--feedback must be on or off"))
    }
}
