import AttestCore
import AttestTesting
import CLISupport
import HTTPClient
#if canImport(Glibc)
import Glibc
#endif

/// The options every command shares, and the device's conversation with the server.
struct DeviceOptions {
    let server: String
    let teamID: String
    let bundleID: String
    let statePath: String
    let args: Arguments
    let client: HTTPClient

    var appID: String { teamID + "." + bundleID }
    var json: Bool { args.flag("json") }

    init(_ args: Arguments) throws {
        self.args = args
        guard let server = args.value("server") else { throw UsageError("--server URL is required") }
        guard let team = args.value("team") else { throw UsageError("--team TEAMID is required") }
        guard let bundle = args.value("bundle") else { throw UsageError("--bundle BUNDLE_ID is required") }
        guard let state = args.value("state") else { throw UsageError("--state FILE is required") }
        self.server = server.hasSuffix("/") ? String(server.dropLast()) : server
        teamID = team
        bundleID = bundle
        statePath = state
        client = HTTPClient(timeoutMilliseconds: 15_000, caFile: args.value("ca-file"))
    }

    var appHeaders: [(String, String)] {
        [("X-Bundle-ID", bundleID), ("X-Team-ID", teamID), ("Content-Type", "application/json")]
    }

    var environment: AppAttestEnvironment {
        get throws {
            guard let env = AppAttestEnvironment(rawValue: args.value("environment") ?? "production") else {
                throw UsageError("--environment must be production or development")
            }
            return env
        }
    }

    /// The test CA that certifies this device's attestations.
    func testCA() throws -> TestPKI {
        guard let path = args.value("test-ca") else {
            throw UsageError("--test-ca PEM is required to attest "
                                 + "(attestctl init --test-ca writes DATA/test-ca/ca.pem)")
        }
        guard let text = readText(path) else { throw DeviceFailure("cannot read \(path)", status: 2) }
        do { return try TestPKI(pemEncoded: text) } catch {
            throw DeviceFailure("\(path) is not a test CA bundle: \(error.reason)", status: 2)
        }
    }

    /// What signs this device's receipts: `--test-receipts PEM`, else `receipts.pem` beside
    /// `--test-ca` when there is one (attestctl init --test-ca writes DATA/test-ca/receipts.pem);
    /// nil: the receipt is opaque bytes, which the server stores as invalid.
    func testReceipts() throws -> TestReceiptAuthority? {
        var path = args.value("test-receipts")
        if path == nil, let ca = args.value("test-ca") {
            let beside = (ca.lastIndex(of: "/").map { String(ca[...$0]) } ?? "") + "receipts.pem"
            if access(beside, F_OK) == 0 { path = beside }
        }
        guard let path else { return nil }
        guard let text = readText(path) else { throw DeviceFailure("cannot read \(path)", status: 2) }
        do { return try TestReceiptAuthority(pemEncoded: text) } catch {
            throw DeviceFailure("\(path) is not a test receipt authority: \(error.reason)", status: 2)
        }
    }

    /// A fresh challenge bound to the app.
    func challenge() throws -> String {
        let response = try client.send("GET", server + "/api/v1/attestation/challenge", headers: appHeaders)
        guard response.status == 200, let body = try? JSONParser.parse(response.body),
              let challenge = body["challenge"]?.stringValue else {
            throw DeviceFailure("GET /api/v1/attestation/challenge answered \(response.status): \(response.text)")
        }
        return challenge
    }

    func post(_ path: String, _ body: JSONValue,
              headers extra: [(String, String)] = []) throws -> (Int, JSONValue, String) {
        let response = try client.send("POST", server + path, headers: appHeaders + extra, body: body.jsonBytes)
        return (response.status, (try? JSONParser.parse(response.body)) ?? .null, response.text)
    }

    /// The saved device, or a clear error when there is none.
    func loadDevice() throws -> SoftwareDevice {
        guard let text = readText(statePath) else {
            throw DeviceFailure("no device state in \(statePath): run 'attest-device … enroll' first", status: 2)
        }
        do { return try SoftwareDevice(stateJSON: text) } catch {
            throw DeviceFailure("\(statePath): \(error.reason)", status: 2)
        }
    }

    func save(_ device: SoftwareDevice) throws {
        try writeText(statePath, device.stateJSON, mode: 0o600)
    }

    /// Prints the server's refusal and returns the failure to throw.
    func refused(_ what: String, _ status: Int, _ body: JSONValue, _ text: String) -> DeviceFailure {
        if json { Output.out(text) }
        let code = body["code"]?.stringValue ?? "?"
        let reason = body["reason"]?.stringValue ?? body["error"]?.stringValue ?? text
        return DeviceFailure("\(what) refused: HTTP \(status) \(code): \(reason)")
    }
}

func readText(_ path: String) -> String? {
    guard let f = fopen(path, "r") else { return nil }
    defer { fclose(f) }
    var out = [UInt8]()
    var buffer = [UInt8](repeating: 0, count: 65_536)
    while true {
        let n = fread(&buffer, 1, buffer.count, f)
        if n <= 0 { break }
        out += buffer[0..<n]
    }
    return String(decoding: out, as: UTF8.self)
}

func writeText(_ path: String, _ text: String, mode: mode_t) throws {
    let temp = path + ".tmp"
    let fd = open(temp, O_WRONLY | O_CREAT | O_TRUNC, mode)
    guard fd >= 0 else { throw DeviceFailure("cannot write \(temp): \(String(cString: strerror(errno)))", status: 2) }
    let bytes = Array(text.utf8)
    var offset = 0
    while offset < bytes.count {
        let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + offset, $0.count - offset) }
        guard n > 0 else { close(fd); throw DeviceFailure("cannot write \(temp)", status: 2) }
        offset += n
    }
    fchmod(fd, mode)
    close(fd)
    guard rename(temp, path) == 0 else {
        // ENOENT: another process renamed our temporary file first (two devices, one --state).
        let why = errno == ENOENT
            ? "another attest-device is writing the same --state file" : String(cString: strerror(errno))
        throw DeviceFailure("cannot replace \(path): \(why)", status: 2)
    }
}
