import AttestCore
import AttestStore

/// What a delivery sends: the body and its signature headers (docs/contract.md §7).
///
/// ```
/// POST <url>
/// Content-Type: application/json
/// User-Agent: AttestEdge-Webhooks/1
/// X-Grantiva-Signature: sha256=<hex HMAC-SHA256(key: UTF-8 of the whole secret "whsec_…", raw body)>
/// webhook-id: <event id, the same on every attempt>
/// webhook-timestamp: <attempt time, Unix seconds>
/// webhook-signature: v1,<base64 HMAC-SHA256(key: base64-decoded secret after "whsec_",
///                                           "<webhook-id>.<webhook-timestamp>.<raw body>")>
///
/// {"id":"evt_…","event":"device.new","timestamp":"2026-06-01T12:00:00Z","data":{…}}
/// ```
/// The second scheme is Standard Webhooks' (standardwebhooks.com), which its libraries verify.
public enum WebhookSignature {
    public static let secretPrefix = "whsec_"

    /// A new endpoint secret: `whsec_` + base64 of 32 random bytes.
    public static func newSecret(random: any RandomSource) -> String { secretPrefix + Base64.encode(random.bytes(32)) }

    /// The JSON body of a delivery; `timestamp` is when the event happened.
    public static func body(_ d: DeliveryRecord) -> [UInt8] {
        let head: [(String, JSONValue)] = [("id", .string(d.eventID)), ("event", .string(d.event)),
                                           ("timestamp", .string(d.createdAt.iso8601))]
        let prefix = head.map { JSONValue.string($0.0).jsonText + ":" + $0.1.jsonText }.joined(separator: ",")
        return Array(("{" + prefix + ",\"data\":" + (d.dataJSON.isEmpty ? "{}" : d.dataJSON) + "}").utf8)
    }

    /// Every header of one attempt sent at `timestamp`.
    public static func headers(secret: String, eventID: String, timestamp: Int64, body: [UInt8]) -> [(String, String)] {
        let grantiva = HMACSHA256(key: Array(secret.utf8)).authenticate(body)
        let key = Base64.decode(String(secret.dropFirst(secret.hasPrefix(secretPrefix) ? secretPrefix.count : 0)))
            ?? Array(secret.utf8)
        let standard = HMACSHA256(key: key).authenticate(Array("\(eventID).\(timestamp).".utf8), body)
        return [("Content-Type", "application/json"), ("User-Agent", "AttestEdge-Webhooks/1"),
                ("X-Grantiva-Signature", "sha256=" + Hex.encode(grantiva)),
                ("webhook-id", eventID), ("webhook-timestamp", String(timestamp)),
                ("webhook-signature", "v1," + Base64.encode(standard))]
    }
}
