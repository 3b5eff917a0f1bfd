import AttestCore
import AttestTesting
import CLISupport
import HTTPClient
#if canImport(Glibc)
import Glibc
#endif

/// Command-line front end: common options, then one of the commands.
enum DeviceCLI {
    static let usage = """
        usage: attest-device --server URL --team TEAMID --bundle BUNDLE_ID --state FILE [options] COMMAND

        commands:
          enroll      new key; challenge → attestation → POST /validate; saves key, keyId, token
          refresh     challenge → assertion (counter + 1) → POST /refresh; saves the new token
          heartbeat   POST /api/v1/heartbeat with the saved token; or, as a simulator build,
                      --api-key aat_… --device-id ID (no state needed)
          show        print the saved state (keyId, deviceId, counter, token claims)
          body validate|refresh [--challenge C] [--counter N]
                      print one request body without sending it (for tests that tamper or race):
                      validate: a new, unsaved key; refresh: the saved device at --counter N
                      (not advanced) or at the next counter (advanced)
          batch validate|refresh --count N --out FILE [--devices M]
                      pre-generate request bodies (one JSON body per line) for a load tool:
                      validate: N fresh keys and attestations; refresh: M enrolled devices
                      (default N/10) with N assertions interleaved so no device has two in flight

        options:
          --test-ca PEM        the test CA bundle that certifies this device (attestctl init --test-ca
                               writes DATA/test-ca/ca.pem); required by enroll and batch validate
          --test-receipts PEM  the test receipt authority that signs the attestation's receipt (default:
                               receipts.pem beside --test-ca, when there is one; without: opaque bytes)
          --ca-file PEM        for an https --server: trust the CA certificates in PEM (a test CA's
                               server certificate, e.g. attestctl serve --tls-cert) instead of the system's
          --environment ENV    production (default) or development key
          --device-model M, --os-version V, --app-version V, --app-build B, --platform P
          --fingerprint F      deviceFingerprint sent with enroll
          --subject S          subjectId sent with enroll and refresh
          --json               print the server's JSON response (or the state) instead of a summary
        The state file holds an unencrypted private key: it is written with mode 0600.
        Exit status: 0 success, 1 the server refused, 2 bad usage or unusable input.
        """

    static func main(_ argv: [String]) -> Int32 {
        if argv.isEmpty || argv.contains("--help") || argv.contains("-h") || argv == ["help"] {
            Output.out(usage)
            return argv.isEmpty ? 2 : 0
        }
        do {
            let args = try Arguments(argv, valued: ["server", "team", "bundle", "state", "test-ca", "environment",
                                                    "device-model", "os-version", "app-version", "app-build",
                                                    "platform", "fingerprint", "subject", "count", "out", "devices",
                                                    "challenge", "counter", "api-key", "device-id", "ca-file",
                                                    "test-receipts"],
                                     switches: ["json"])
            let options = try DeviceOptions(args)
            switch try args.positional(0, "COMMAND (enroll, refresh, heartbeat, show, batch)") {
            case "enroll": return try Enroll.run(options)
            case "refresh": return try RefreshCommand.run(options)
            case "heartbeat": return try Heartbeat.run(options)
            case "show": return try Show.run(options)
            case "body":
                return try BodyCommand.run(options, kind: try args.positional(1, "body kind (validate or refresh)"),
                                           args: args)
            case "batch":
                return try Batch.run(options, kind: try args.positional(1, "batch kind (validate or refresh)"),
                                     args: args)
            case let other: throw UsageError("unknown command \(other)")
            }
        } catch let error as UsageError {
            Output.err("attest-device: \(error.message)\n\n\(usage)")
            return 2
        } catch let error as DeviceFailure {
            Output.err("attest-device: \(error.message)")
            return error.status
        } catch {
            Output.err("attest-device: \(error)")
            return 2
        }
    }
}

/// A failure with its exit status (1: the server refused; 2: unusable input or transport).
struct DeviceFailure: Error {
    let message: String
    let status: Int32
    init(_ message: String, status: Int32 = 1) {
        self.message = message
        self.status = status
    }
}
