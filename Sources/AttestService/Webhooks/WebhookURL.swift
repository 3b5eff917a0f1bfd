/// A webhook endpoint URL, checked when an endpoint is created or changed (docs/contract.md §7, the SSRF
/// guard): `https://host[:port][/path][?query]`, at most 2048 bytes, no user info, no fragment;
/// the host is a name, an IPv4 literal or a bracketed IPv6 literal, and a literal must be a
/// public unicast address (`IPAddress.restriction`). With `webhooks.allowPrivateDestinations`
/// plain `http://` and any address are allowed.
///
/// A name is not resolved here: the management API's pool runs without network access
/// (`PrivateNetwork=yes`, `RestrictAddressFamilies=AF_UNIX` in its unit), and what a name
/// resolves to now says nothing of what it resolves to at delivery (DNS rebinding). The sender
/// judges every address each connection actually goes to (`CurlTransport`), so a name that
/// resolves to a refused address is refused there, and the attempt's error in the delivery log
/// says so.
public struct WebhookURL: Sendable, Equatable {
    public let scheme: String
    public let host: String
    public let port: Int?

    public static let maximumBytes = 2048

    /// Parses and checks `text`; the error names the `url` field and says what is wrong.
    public init(_ text: String, allowPrivate: Bool) throws(ServiceError) {
        func bad(_ why: String) -> ServiceError { ServiceError(.badRequest, "The field url \(why).") }
        guard !text.isEmpty, text.utf8.count <= Self.maximumBytes else {
            throw bad("must be 1 to \(Self.maximumBytes) bytes")
        }
        guard text.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value < 0x7F }) else {
            throw bad("must be printable ASCII without spaces")
        }
        let bytes = Array(text.utf8)
        guard let colon = bytes.firstIndex(of: UInt8(ascii: ":")),
              bytes[colon...].starts(with: Array("://".utf8)) else {
            throw bad("must be an absolute https:// URL")
        }
        scheme = String(decoding: bytes[..<colon], as: UTF8.self).lowercased()
        guard scheme == "https" || (scheme == "http" && allowPrivate) else {
            throw bad(scheme == "http" ? "must use https (plain http is allowed only with "
                                         + "webhooks.allowPrivateDestinations)"
                                       : "must use https")
        }
        let rest = Substring(String(decoding: bytes[(colon + 3)...], as: UTF8.self))
        guard !rest.contains("#") else { throw bad("must not have a fragment") }
        let authority = rest.prefix { $0 != "/" && $0 != "?" }
        guard !authority.contains("@") else { throw bad("must not carry a user name or password") }
        var hostPart = Substring(authority)
        var portText: Substring?
        if hostPart.hasPrefix("[") {
            guard let close = hostPart.firstIndex(of: "]") else { throw bad("has an unterminated IPv6 literal") }
            let after = hostPart[hostPart.index(after: close)...]
            if after.hasPrefix(":") {
                portText = after.dropFirst()
            } else if !after.isEmpty {
                throw bad("has a malformed host")
            }
            hostPart = hostPart[hostPart.index(after: hostPart.startIndex)..<close]
            guard IPAddress(String(hostPart)) != nil else { throw bad("has a malformed IPv6 literal") }
        } else if let colon = hostPart.lastIndex(of: ":") {
            portText = hostPart[hostPart.index(after: colon)...]
            hostPart = hostPart[..<colon]
        }
        if let portText {
            guard let p = Int(portText), (1...65535).contains(p) else { throw bad("has an invalid port") }
            port = p
        } else {
            port = nil
        }
        host = hostPart.lowercased()
        guard !host.isEmpty, host.count <= 253 else { throw bad("has no host") }
        // A host whose last label is a number is an IPv4 address to resolvers and curl, in any
        // of inet_aton's forms ("127.1", "2130706433", "0x7f.1"), never a name.
        let last = host.split(separator: ".").last ?? ""
        let numeric = !last.isEmpty && (last.allSatisfy { $0.isASCII && $0.isNumber } || last.hasPrefix("0x"))
        let literal = IPAddress(host) ?? (numeric ? IPAddress(anyIPv4Form: host) : nil)
        guard literal != nil
                || (!numeric && host.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "-" || $0 == "." })) else {
            throw bad("has a malformed host")
        }
        if allowPrivate { return }
        if let literal, let why = literal.restriction {
            throw bad("must not point to a \(why) address (\(host))")
        }
    }
}
