import AttestCore
import AttestStore

/// A change to an app's feature flags that the flag stream must carry: the defaults of
/// `environment` (or of every environment of the app when `nil`) changed.
///
/// `FlagAdmin` returns these from every write; whoever committed the write hands them to
/// the stream publisher, which sends each affected environment's current defaults.
public struct FeatureFlagChange: Hashable, Sendable {
    /// `TEAMID.bundle`.
    public let appID: String
    /// One environment, or `nil` for every environment of the app.
    public let environment: String?

    public init(appID: String, environment: String?) {
        self.appID = appID
        self.environment = environment
    }
}

/// Names of the nchan channels the flag stream uses, and where nginx's publisher listens.
///
/// Wire format: a channel id is `TEAMID.bundle/environment`, or `TEAMID.bundle/~empty` for an
/// environment the app does not have (it always holds `{"flags":{}}`). Channels live in nchan
/// group `attestedge`. The pool chooses the channel and returns it to nginx in the auth
/// answer's `X-AttestEdge-Channel` header; nothing the client sends names a channel.
///
/// Each stream also holds a **holder** channel of its own credential, named in the auth
/// answer's `X-AttestEdge-Holder`: `~lineage/<hex of LineageKey.digest>` for a device token
/// (every key of the device's fingerprint shares it, so a block, which applies to the whole
/// lineage, reaches keys older than the lineage's kept history), `~key/<hex of the API key's
/// id>` for an API key. Nothing is ever published there; deleting it (`DELETE
/// /pub/<holder>`, `FlagStream.close`) makes nchan end every stream holding it at once, and
/// the client's reconnect is authorised again. That is how a device revoked, blocked or
/// invalidated, or an API key revoked, loses an open stream (on the host that made the change;
/// other hosts' streams end within `flags.streamMaxSeconds`).
public enum FlagChannel {
    /// The file name of nginx's publisher socket, beside the pools' sockets (`attestctl serve`:
    /// DATA/run; the systemd units: /run/attestedge).
    public static let publishSocketName = "flags-publish.sock"

    /// The channel carrying `environment`'s defaults for `appID`.
    public static func id(appID: String, environment: String) -> String { appID + "/" + environment }

    /// The channel of every environment `appID` does not have.
    public static func empty(appID: String) -> String { appID + "/~empty" }

    /// The holder channel of the streams of every key of the lineage `lineage`.
    public static func holder(lineage: LineageKey) -> String { "~lineage/" + Hex.encode(lineage.digest) }

    /// The holder channel of the streams opened with the API key whose id is `apiKeyID`.
    public static func holder(apiKeyID: String) -> String { "~key/" + Hex.encode(Array(apiKeyID.utf8)) }

    /// The publisher socket in the directory holding the pools' sockets.
    public static func publishSocket(socketDirectory: String) -> String {
        socketDirectory + "/" + publishSocketName
    }
}
