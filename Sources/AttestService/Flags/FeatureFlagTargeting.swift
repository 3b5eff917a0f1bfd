import FastCGI

/// The SDK's targeting headers (SDK 2.1+: `X-App-Version`, `X-OS-Version`, `X-Device-Model`,
/// `X-Country`, `X-User-ID`, `X-Device-ID`, `X-Locale`, `X-Custom-<key>`), read from the FastCGI
/// params only when a condition asks for one. **Client-claimed**: these feed the client-claimed
/// attributes (`app_version`, `custom.plan`, …) and the `sdk:` overrides, never a server
/// attribute.
///
/// A param name has lost the header's case and its `-` (`X-Custom-my-key` and
/// `X-Custom-my_key` both arrive as `HTTP_X_CUSTOM_MY_KEY`), so `custom.<key>` matches
/// case-insensitively with `-` and `_` the same. A value is trimmed; an empty one, or one over
/// `maximumValueBytes`, counts as not sent.
public struct FeatureFlagTargeting: Sendable {
    public static let maximumValueBytes = 256
    let params: Params

    public init(params: Params) { self.params = params }

    /// From header lines (`attestctl flags test --header 'X-Custom-plan: pro'`).
    public init(headers: [(name: String, value: String)]) {
        var params = [String: String]()
        for (name, value) in headers { params[Self.paramName(name)] = value }
        self.params = Params(params)
    }

    /// No headers at all.
    public static let none = FeatureFlagTargeting(params: Params([:]))

    /// The value of a targeting header, or nil.
    public func value(_ header: FeatureFlagHeader) -> String? { lookup(Self.paramName(header.header)) }

    /// The value of `X-Custom-<key>`, or nil.
    public func custom(_ key: String) -> String? { lookup(Self.paramName("X-Custom-" + key)) }

    /// `X-Device-ID`: the subject of `sdk:` overrides and an API-key caller's rollout identity.
    public var sdkDeviceID: String? { value(.deviceID) }

    /// The value of the header whose FastCGI name is `param` (made by `paramName`), or nil.
    func value(param: String) -> String? { lookup(param) }

    /// nginx's FastCGI name of a request header: `HTTP_`, then the name with ASCII letters in
    /// upper case and `-` as `_` (byte by byte: a flags read with header rules asks for many).
    static func paramName(_ header: String) -> String {
        var bytes = Array("HTTP_".utf8)
        bytes.reserveCapacity(5 + header.utf8.count)
        for c in header.utf8 {
            bytes.append(c == UInt8(ascii: "-") ? UInt8(ascii: "_") : (0x61...0x7A).contains(c) ? c - 0x20 : c)
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    private func lookup(_ name: String) -> String? {
        guard let raw = params[name] else { return nil }
        let value = raw.trimmingSpaces
        guard !value.isEmpty, value.utf8.count <= Self.maximumValueBytes else { return nil }
        return value
    }
}

private extension String {
    var trimmingSpaces: String {
        let scalars = unicodeScalars
        guard let start = scalars.firstIndex(where: { $0 != " " && $0 != "\t" }),
              let end = scalars.lastIndex(where: { $0 != " " && $0 != "\t" }) else { return "" }
        return String(scalars[start...end])
    }
}
