import AttestStore
#if canImport(Glibc)
import Glibc
#endif

/// Publishes feature-flag changes to this host's flag stream (nginx's nchan, through its
/// publisher socket), right after the change committed.
///
/// Each change names an app and one environment (or every environment of the app). For each,
/// the environment's channel gets the **current defaults** read from the store (the stream
/// carries defaults only: rules and overrides are for `GET /api/v1/flags`), and the app's
/// `~empty` channel gets `{"flags":{}}` again. An environment the app no longer has gets
/// `{"flags":{}}` on its channel, so streams still on it see the flags go. Publishing is best
/// effort: nginx may be stopped or reloading (at the next connect the auth handler publishes
/// again to a channel that is empty or older than the app's `changedAt`), so failures come back
/// as warnings, never as errors.
public enum FlagStream {
    /// The payload of a channel with no flags (an unknown environment, `~empty`).
    public static let emptyAnswer = Array(#"{"flags":{}}"#.utf8)

    /// Publishes `changes` to the publisher socket in `socketDirectory` (`ctx.poolSockets`,
    /// `DATA/run` for `attestctl serve`, `/run/attestedge` for the units). Returns one warning
    /// per failure (a store read or a publish), for the caller to print or log.
    public static func publish(_ changes: [FeatureFlagChange], socketDirectory: String, store: Store) -> [String] {
        publish(changes, socketDirectory: socketDirectory) { appID in
            try store.read { txn in try defaults(appID: appID, in: txn) }
        }
    }

    /// The current defaults answer of each environment `appID` has, or `nil` when the app has
    /// no feature flags at all (nothing to publish but `~empty`).
    static func defaults(appID: String, in txn: Transaction) throws -> [String: [UInt8]]? {
        guard let app = try txn.app(id: appID), let org = try txn.org(named: app.org) else { return nil }
        let flags = try CompiledFeatureFlags.build(appID: appID, tier: org.tier, in: txn)
        return Dictionary(uniqueKeysWithValues: flags.environments.map { ($0, flags.defaultsAnswer(environment: $0)) })
    }

    /// Publishes `changes`, reading each app's per-environment defaults answers with
    /// `defaults` (once per app). `send` is the publish itself (a test passes a recorder).
    static func publish(_ changes: [FeatureFlagChange], socketDirectory: String,
                        defaults: (String) throws -> [String: [UInt8]]?,
                        send: (String, String, [UInt8]) throws(NchanPublisher.Failure) -> Void = NchanPublisher.publish)
        -> [String] {
        let socket = FlagChannel.publishSocket(socketDirectory: socketDirectory)
        var warnings: [String] = []
        var apps: [String] = []
        var named: [String: Set<String>] = [:]
        var everyEnvironment: Set<String> = []
        for change in changes {
            if named[change.appID] == nil { apps.append(change.appID); named[change.appID] = [] }
            if let environment = change.environment {
                named[change.appID, default: []].insert(environment)
            } else {
                everyEnvironment.insert(change.appID)
            }
        }
        for appID in apps {
            let answers: [String: [UInt8]]
            do {
                answers = try defaults(appID) ?? [:]
            } catch {
                warnings.append("flag stream: reading \(appID)'s flags: \(error)")
                continue
            }
            let targets = everyEnvironment.contains(appID)
                ? Set(answers.keys).union(named[appID] ?? []) : (named[appID] ?? [])
            var publishes = targets.sorted().map {
                (FlagChannel.id(appID: appID, environment: $0), answers[$0] ?? emptyAnswer)
            }
            publishes.append((FlagChannel.empty(appID: appID), emptyAnswer))
            for (channel, body) in publishes {
                do {
                    try send(socket, channel, body)
                } catch {
                    warnings.append("flag stream: \(error.description) (the stream catches up at its next connect)")
                }
            }
        }
        return warnings
    }

    /// Ends this host's open streams held by `holders` (`FlagChannel.holder`): a device that is
    /// now revoked, blocked or invalidated, an API key now revoked. Their clients reconnect and
    /// are authorised again (refused now). Best effort like `publish`: no publisher socket means
    /// no stream runs here; failures come back as warnings (such a stream still ends within
    /// `flags.streamMaxSeconds`).
    public static func close(holders: [String], socketDirectory: String) -> [String] {
        let socket = FlagChannel.publishSocket(socketDirectory: socketDirectory)
        guard !holders.isEmpty, access(socket, F_OK) == 0 else { return [] }
        return close(holders: holders, socket: socket)
    }

    /// `close` through `delete` (a test passes a recorder).
    static func close(holders: [String], socket: String,
                      delete: (String, String) throws(NchanPublisher.Failure) -> Void = NchanPublisher.delete)
        -> [String] {
        var warnings: [String] = []
        for holder in holders {
            do { try delete(socket, holder) } catch {
                warnings.append("flag stream: \(error.description) (that stream ends within flags.streamMaxSeconds)")
            }
        }
        return warnings
    }
}
