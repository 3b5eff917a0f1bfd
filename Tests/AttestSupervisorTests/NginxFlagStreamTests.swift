import AttestConfig
import CLISupport
@testable import AttestSupervisor
import Foundation
import SupervisorTestSupport
import Testing

/// The flag stream's part of the nginx templates (design §3.6): the stream authorised by
/// auth_request (never nchan_authorize_request, which aborts nginx workers when the pool is
/// down), the publisher on a unix socket only, the placeholders checked, never escaped.
@Suite("nginx: the flag stream") struct NginxFlagStreamTests {
    static let site = NginxTemplateTests.site
    static let nginxConf = (try? String(contentsOfFile: NginxTemplateTests.templates + "/nginx.conf",
                                        encoding: .utf8)) ?? ""

    @Test("the stream is authorised by auth_request and subscribes to the channel the pool names")
    func streamLocation() throws {
        let start = try #require(Self.site.range(of: "location = /api/v1/flags/stream {"))
        let block = Self.site[start.upperBound...].prefix { $0 != "}" }
        #expect(block.contains("auth_request /.attestedge/flags-auth;"))
        #expect(block.contains("auth_request_set $attestedge_flags_channel $upstream_http_x_attestedge_channel;"))
        #expect(block.contains("auth_request_set $attestedge_flags_holder $upstream_http_x_attestedge_holder;"))
        #expect(block.contains("nchan_channel_id $attestedge_flags_channel $attestedge_flags_holder;"))
        #expect(!Self.site.contains("\n        nchan_authorize_request"), "nchan's own auth crashes workers")
        #expect(Self.site.contains("error_page 401 /.attestedge/error/401;"))
    }

    @Test("the publisher listens on a unix socket in the run directory only, for our channel grammar")
    func publisherServer() throws {
        let start = try #require(Self.site.range(of: "listen unix:@RUN_DIR@/flags-publish.sock;"))
        let server = Self.site[start.lowerBound...]
        #expect(server.contains("allow unix:;"))
        #expect(server.contains("deny all;"))
        let regex = #"location ~ "^/pub/([A-Z0-9]{10}\.[A-Za-z0-9.-]+/([a-z0-9][a-z0-9_-]{0,31}|~empty)|~(lineage|key)/[0-9a-f]{2,64})$""#
        #expect(server.contains(regex))
        let listens = Self.site.components(separatedBy: "\n").filter { $0.contains("listen ") && !$0.contains("#") }
        #expect(listens.count == 3, "the site, the metrics server and the publisher: \(listens)")
    }

    @Test("nginx.conf loads Debian's nchan by the path serve checks")
    func moduleIsLoadedByAbsolutePath() {
        #expect(Self.nginxConf.contains("load_module \(NginxSite.nchanModule);"))
        #expect(Self.nginxConf.contains("variables_hash_max_size 2048;"))
    }

    @Test("hostile flag-stream values are refused, never rendered")
    func placeholdersAreChecked() throws {
        try NginxSite.check("@FLAGS_STREAM_MEMORY@", "32M")
        try NginxSite.check("@FLAGS_KEEPALIVE@", "20")
        for bad in ["32", "M", "32M; load_module /tmp/evil.so", "32m", "-1M", "32M\n", ""] {
            #expect(throws: SupervisorError.self, "\(bad.debugDescription)") {
                try NginxSite.check("@FLAGS_STREAM_MEMORY@", bad)
            }
        }
        try NginxSite.check("@FLAGS_STREAM_MAX@", "300")
        for bad in ["20;", "20 ", "", "2s", "20\nnchan_publisher http;"] {
            #expect(throws: SupervisorError.self, "\(bad.debugDescription)") {
                try NginxSite.check("@FLAGS_KEEPALIVE@", bad)
            }
            #expect(throws: SupervisorError.self, "\(bad.debugDescription)") {
                try NginxSite.check("@FLAGS_STREAM_MAX@", bad)
            }
        }
    }

    /// Review of issue 41: a data directory made by an older attestctl has a 0755 DATA/run, in
    /// which nginx's 0666 publisher socket lets every local account publish to the streams.
    @Test("serve closes an existing DATA/run to other accounts before nginx binds the publisher socket")
    func serveClosesTheRunDirectory() throws {
        let dir = TemporaryDirectory()
        let data = DataDirectory(dir.path + "/data")
        #expect(mkdir(data.path, 0o755) == 0 && mkdir(data.runDirectory, 0o755) == 0)
        #expect(chmod(data.runDirectory, 0o777) == 0)
        let serve = Serve(try Arguments(["--data", data.path], valued: ["data"]))
        try serve.closeRunDirectory()
        var info = stat()
        #expect(stat(data.runDirectory, &info) == 0)
        #expect(info.st_mode & 0o777 == 0o750, "DATA/run is \(String(info.st_mode & 0o777, radix: 8))")
        #expect(chmod(data.runDirectory, 0o700) == 0)
        try serve.closeRunDirectory()
        #expect(stat(data.runDirectory, &info) == 0 && info.st_mode & 0o777 == 0o700, "a narrower mode is kept")
        #expect(rmdir(data.runDirectory) == 0)
        try serve.closeRunDirectory()
        #expect(stat(data.runDirectory, &info) == 0 && info.st_mode & 0o777 == 0o750, "made when missing")
    }
}
