import AttestCore
import FoundationEssentials

extension SoftwareDevice {
    /// The state file's JSON object (version 1):
    /// ```
    /// { "version": 1, "key": "<PKCS #8 PEM>", "keyId": "<base64>", "counter": <uint32>,
    ///   "fields": { "<name>": "<string>", … } }
    /// ```
    /// The key is unencrypted: keep the file mode 0600.
    struct State: Codable {
        var version: Int
        var key: String
        var keyId: String
        var counter: UInt32
        var fields: [String: String]
    }

    /// The device as state-file JSON text (sorted keys, so equal states give equal text).
    public var stateJSON: String {
        let state = State(version: 1, key: key.pemEncoded, keyId: Base64.encode(keyID), counter: counter,
                          fields: fields)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        guard let data = try? encoder.encode(state) else { return "" }
        return String(decoding: data, as: UTF8.self) + "\n"
    }

    /// A device from `stateJSON` text. Throws `.jsonMalformed` for text that is not such an
    /// object, `.keyInvalid` when the key does not load or keyId is not the key's.
    public init(stateJSON text: String) throws(AttestError) {
        let state: State
        do { state = try JSONDecoder().decode(State.self, from: Data(text.utf8)) } catch {
            throw AttestError(.jsonMalformed, "device state is not a version-1 state object: \(error)")
        }
        guard state.version == 1 else {
            throw AttestError(.jsonMalformed, "device state version \(state.version) is not 1")
        }
        try self.init(key: SigningKey(pemEncoded: state.key), counter: state.counter, fields: state.fields)
        guard Base64.decode(state.keyId) == keyID else {
            throw AttestError(.keyInvalid, "device state keyId is not SHA-256 of its key's point")
        }
    }
}
