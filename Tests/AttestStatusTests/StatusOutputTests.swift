@testable import AttestStatus
import AttestCore
import CLISupport
import Foundation
import Testing

/// What `attestctl status` prints: `--json`'s shape and numbers, the screen's tables, the
/// `--watch` frame.
@Suite struct StatusOutputTests {
    static let url = "http://127.0.0.1:9469/metrics"

    @Test func jsonHasTheDocumentedMembersInOrder() throws {
        let json = try Scrapes.status().json(url: Self.url)
        #expect(json.objectValue?.map(\.0) == ["url", "seconds", "hostTime", "pools", "stores", "webhooks",
                                               "organizations"])
        #expect(json["url"] == .string(Self.url) && json["seconds"] == 2)
        #expect(json["hostTime"] == "2026-11-30T00:53:22Z", "1796000002 in UTC")
        let pools = try #require(json["pools"]?.arrayValue)
        #expect(pools.map { $0["pool"]?.stringValue } == ["challenge", "mad", "monitor", "refresh", "webhooks"])
        #expect(pools[0].objectValue?.map(\.0) == ["pool", "workers", "workerRestarts", "requestsPerSecond",
                                                   "p99Seconds", "p99AboveLargestBucket", "serverErrorsPerSecond",
                                                   "clientErrorsPerSecond"])
        let refresh = pools[3]
        #expect(refresh["workers"] == 4 && refresh["workerRestarts"] == 3 && refresh["requestsPerSecond"] == 101)
        #expect(refresh["serverErrorsPerSecond"] == 1 && refresh["clientErrorsPerSecond"] == 2)
        #expect(refresh["p99Seconds"]?.doubleValue.map { abs($0 - 0.75) < 1e-12 } == true)
        #expect(refresh["p99AboveLargestBucket"] == false)
        #expect(pools[1]["p99Seconds"] == .double(2.5) && pools[1]["p99AboveLargestBucket"] == true,
                "mad: beyond 2.5 s")
        #expect(pools[2]["p99Seconds"] == .null && pools[2]["requestsPerSecond"] == .double(0.5),
                "monitor: no observations")
    }

    @Test func jsonStoresWebhooksAndOrganizations() throws {
        let json = try Scrapes.status().json(url: Self.url)
        #expect(json["stores"] == [
            ["environment": "durable", "usedBytes": 104_857_600, "mapSizeBytes": 1_073_741_824,
             "percent": .double(9.765625)],
            ["environment": "ephemeral", "usedBytes": 16_777_216, "mapSizeBytes": 67_108_864, "percent": 25],
        ])
        #expect(json["webhooks"] == ["backlog": 7, "attemptsPerSecond": 8, "failuresPerSecond": 3,
                                     "failedAttempts": 21])
        #expect(json["organizations"] == [
            ["org": #"a "quoted" org"#, "activeDevices": 3, "limit": 4, "percent": 75],
            ["org": "acme", "activeDevices": 250, "limit": 1000, "percent": 25],
            ["org": "beta", "activeDevices": 7, "limit": nil, "percent": nil],
        ])
    }

    @Test func docsCliNamesEveryJSONMember() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let cli = try String(contentsOf: root.appendingPathComponent("docs/cli.md"), encoding: .utf8)
        let row = try #require(cli.split(separator: "\n").first { $0.hasPrefix("| `attestctl status") })
        let json = try Scrapes.status().json(url: Self.url)
        var members = try #require(json.objectValue).map(\.0)
        for list in ["pools", "stores", "organizations"] {
            members += try #require(json[list]?.arrayValue?.first?.objectValue).map(\.0)
        }
        members += try #require(json["webhooks"]?.objectValue).map(\.0)
        #expect(members.count == 27, "7 at the top, 8 a pool, 4 a store, 4 an organization, 4 webhooks")
        for member in members { #expect(row.contains("`\(member)`"), "docs/cli.md's status row names \(member)") }
    }

    @Test func jsonTextParsesBackToTheSameValue() throws {
        let json = try Scrapes.status().json(url: Self.url)
        #expect(try JSONParser.parse(json.prettyJSONText) == json)
        #expect(try JSONParser.parse(json.jsonText) == json)
        #expect(!json.jsonText.contains("\n"), "--watch --json: one object a line")
    }

    @Test func theScreenHasEachTableWithItsNumbers() throws {
        let text = try Scrapes.status().text(url: Self.url)
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        #expect(lines[0] == "AttestEdge · \(Self.url) · host clock 2026-11-30T00:53:22Z · rates over 2.0 s")
        #expect(lines.contains("POOL       WORKERS  RESTARTS  REQ/S  P99       5XX/S  4XX/S"))
        #expect(lines.contains("challenge  2        0         15.0   1.0 ms    0.0    0.0"), "0.99 ms rounds to 1.0 ms")
        #expect(lines.contains("mad        2        0         51.0   > 2.50 s  0.0    0.0"))
        #expect(lines.contains("monitor    1        0         0.5    -         0.0    0.0"))
        #expect(lines.contains("refresh    4        3         101.0  750.0 ms  1.0    2.0"))
        #expect(lines.contains("durable    100.0 MiB  1.0 GiB   9.8%"))
        #expect(lines.contains("ephemeral  16.0 MiB   64.0 MiB  25.0%"))
        #expect(lines.contains("WEBHOOKS  backlog 7 · 8.0 attempts/s · 3.0 failures/s · "
                               + "21 failed attempts since the sender started"))
        #expect(lines.contains(#"a "quoted" org  3               4          75.0%"#))
        #expect(lines.contains("beta            7               unlimited  -"))
        #expect(lines.contains("webhooks   1        0         0.0    -         0.0    0.0"))
    }

    @Test func aControlCharacterInALabelNeverReachesTheTerminal() throws {
        // ESC ] … BEL sets the terminal's title, ESC [2J clears it, 0x9B is C1's CSI; \\n is the format's newline.
        let hostile = Scrapes.later.replacingAll(#"org="beta""#, with: "org=\"\u{1B}]0;owned\u{7}\u{1B}[2J\\nx\u{9B}\"")
        let later = try ScrapedMetrics(prometheusText: hostile)
        #expect(later.samples("attestedge_monthly_active_devices")
                    .contains { $0.labels["org"]?.contains("\u{1B}") == true })
        let text = try ServiceStatus(earlier: later, later: later, seconds: 1).text(url: Self.url)
        #expect(!text.unicodeScalars.contains { $0.value < 0x20 && $0 != "\n" || (0x7F...0x9F).contains($0.value) })
        #expect(text.contains("?]0;owned??[2J?x?"))
    }

    @Test func numbersAreRoundedHalfAwayFromZero() {
        #expect(TextNumber.fixed(0.05, 1) == "0.1" && TextNumber.fixed(-0.05, 1) == "-0.1")
        #expect(TextNumber.fixed(0.04, 1) == "0.0" && TextNumber.fixed(-0.04, 1) == "0.0")
        #expect(TextNumber.fixed(12.345, 0) == "12" && TextNumber.fixed(1.005, 3) == "1.005")
        #expect(TextNumber.fixed(.nan, 1) == "-" && TextNumber.fixed(.infinity, 1) == "-")
        #expect(TextNumber.count(21) == "21" && TextNumber.count(2.25) == "2.3")
        #expect(TextNumber.bytes(1_073_741_824) == "1.0 GiB" && TextNumber.bytes(1_048_576 * 1023) == "1023.0 MiB")
        #expect(TextNumber.duration(.init(value: 0.0175, isLowerBound: false)) == "17.5 ms")
        #expect(TextNumber.duration(.init(value: 1.25, isLowerBound: false)) == "1.25 s")
    }

    @Test func aWatchFrameRedrawsInPlaceWithoutTheAlternateScreen() {
        let frame = StatusScreen.frame("one\ntwo")
        #expect(frame == "\u{1B}[Hone\u{1B}[K\ntwo\u{1B}[K\n\u{1B}[J")
        #expect(!frame.contains("\u{1B}[?1049h") && !frame.contains("\u{1B}[2J"),
                "no alternate screen, no full clear (no flicker)")
    }
}

/// Whoever answers at the metrics URL chooses the text a failure quotes (review of #39).
@Suite struct StatusFailureTextTests {
    @Test("a syntax error quoting an escape sequence sends no control character to the terminal")
    func syntaxErrorEchoesNoControlCharacters() {
        var parser = PrometheusTextParser("attestedge_time_seconds \u{1b}]0;owned\u{07}\n")
        do {
            _ = try parser.parse()
            Issue.record("accepted")
        } catch {
            #expect(error.code == .syntax)
            #expect(!error.message.unicodeScalars.contains { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) },
                    "\(error.message.debugDescription)")
            #expect(error.message.contains("?]0;owned?"))
        }
    }
}
