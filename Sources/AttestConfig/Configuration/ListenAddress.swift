#if canImport(Glibc)
import Glibc
#endif

/// `server.listen`: what nginx listens on. Root writes it into nginx's configuration (the
/// `listen …;` of site.conf and nginx.conf) while the service user may write `config.json`, so
/// the value is parsed against this grammar, and nothing else passes, both where the
/// configuration is set or loaded (`Configuration.validate`) and where the nginx files are
/// rendered (`attestctl serve`, `attestctl site`). The renderer writes `directive(…)`, never the
/// text it was given.
///
///     listen     = address ":" port *( SP parameter )      ; single spaces, nothing around
///     address    = ipv4 / "[" ipv6 "]" / hostname / "*"
///     ipv4       = dotted quad                             ; inet_pton(AF_INET)
///     ipv6       = textual IPv6, no zone                   ; inet_pton(AF_INET6)
///     hostname   = label *( "." label )                    ; at most 253 characters, last label not all digits
///     label      = 1*63( ALPHA / DIGIT / "-" )             ; no "-" first or last
///     port       = 1*5DIGIT                                ; 1...65535
///     parameter  = "reuseport"                             ; `Parameter`, each at most once
///                / "ssl" / "http2"                         ; only where TLS is on (`allowingTLS`)
///
/// So no `;`, `{`, `}`, quote, `$`, `#`, backslash, tab or newline can reach nginx from it.
/// `ssl` and `http2` are never taken from `server.listen`: the renderer adds them (`withTLS()`)
/// when `--tls-cert` turns TLS on, so config.json cannot ask for a TLS port without a certificate.
public struct ListenAddress: Sendable, Equatable, CustomStringConvertible {
    public enum Host: Sendable, Equatable {
        case ipv4(String)
        /// Without its brackets.
        case ipv6(String)
        case name(String)
        /// `*`: every address.
        case any

        /// Every address of its family: `*`, `0.0.0.0` or `[::]`.
        public var isWildcard: Bool {
            switch self {
            case .any: true
            case .ipv4, .ipv6: bytes.allSatisfy { $0 == 0 }
            case .name: false
            }
        }

        /// The host as a comparable value: an address's bytes (as `inet_pton` reads it), a name
        /// lower-cased with a leading marker byte (so it never equals an address), `*` empty.
        var bytes: [UInt8] {
            switch self {
            case .any: return []
            case .name(let name): return [0xFF] + Array(name.lowercased().utf8)
            case .ipv4(let text):
                var a = in_addr()
                guard inet_pton(AF_INET, text, &a) == 1 else { return [0xFE] + Array(text.utf8) }
                return withUnsafeBytes(of: &a) { Array($0) }
            case .ipv6(let text):
                var a = in6_addr()
                guard inet_pton(AF_INET6, text, &a) == 1 else { return [0xFE] + Array(text.utf8) }
                return withUnsafeBytes(of: &a) { Array($0) }
            }
        }
    }

    /// The `listen` parameters AttestEdge supports. Add one here and the grammar takes it.
    public enum Parameter: String, Sendable, CaseIterable {
        case reuseport
        /// TLS on the address (nginx ORs it over every server listening there).
        case ssl
        /// HTTP/2, negotiated by ALPN on a TLS address (nginx 1.22's form; 1.25 has `http2 on;`).
        case http2

        /// A socket option nginx takes once per address and port ("duplicate listen options"
        /// otherwise): only site.conf's server carries it, not nginx.conf's readiness server.
        public var isSocketOption: Bool {
            switch self {
            case .reuseport: true
            case .ssl, .http2: false
            }
        }

        /// Added by the renderer when TLS is on, never read from `server.listen`.
        public var isTLS: Bool { self == .ssl || self == .http2 }
    }

    public let host: Host
    public let port: Int
    public let parameters: [Parameter]

    /// The longest value accepted (a host name of 253 characters, a port and every parameter).
    static let maximumLength = 512

    /// Parses `text`; throws a problem naming `key` (`server.listen`, `server.metricsListen`),
    /// what is wrong, and the value. `allowingTLS`: also `ssl` and `http2` (the renderer's own
    /// check of what it renders; never a configuration value).
    public init(parsing text: String, key: String = "server.listen",
                allowingTLS: Bool = false) throws(Configuration.Problem) {
        let allowed = Parameter.allCases.filter { allowingTLS || !$0.isTLS }
        func refuse(_ why: String) -> Configuration.Problem {
            Configuration.Problem(message: "\(key) \(why) (expected HOST:PORT, HOST an IPv4 address, [IPv6], "
                                           + "a host name or *, "
                                           + "then optionally: "
                                           + "\(allowed.map(\.rawValue).joined(separator: ", "))"
                                           + (allowingTLS ? "" : "; TLS is --tls-cert's, not a listen parameter")
                                           + "), got \(text.debugDescription)")
        }
        guard text.utf8.count <= Self.maximumLength else { throw refuse("is too long") }
        let words = text.split(separator: " ", omittingEmptySubsequences: false)
        let address = String(words[0])
        guard let colon = address.lastIndex(of: ":") else { throw refuse("has no port") }
        let hostText = String(address[..<colon]), portText = address[address.index(after: colon)...]
        guard !portText.isEmpty, portText.count <= 5, portText.allSatisfy({ ("0"..."9").contains($0) }),
              let port = Int(portText), (1...65535).contains(port) else {
                  throw refuse("must end its address with a port 1...65535")
              }
        guard let host = Self.host(hostText) else { throw refuse("has no valid host before the port") }
        var parameters = [Parameter]()
        for word in words.dropFirst() {
            guard let parameter = Parameter(rawValue: String(word)), allowed.contains(parameter) else {
                throw refuse(word.isEmpty ? "has an extra space" : "has a parameter AttestEdge does not support")
            }
            guard !parameters.contains(parameter) else { throw refuse("repeats \(parameter.rawValue)") }
            parameters.append(parameter)
        }
        self.host = host
        self.port = port
        self.parameters = parameters
    }

    init(host: Host, port: Int, parameters: [Parameter]) {
        self.host = host
        self.port = port
        self.parameters = parameters
    }

    /// This address with `ssl` and `http2` (once each), as the renderer writes it when TLS is on.
    public func withTLS() -> ListenAddress {
        ListenAddress(host: host, port: port,
                      parameters: parameters + [.ssl, .http2].filter { !parameters.contains($0) })
    }

    static func host(_ text: String) -> Host? {
        if text == "*" { return .any }
        if text.hasPrefix("[") && text.hasSuffix("]") && text.count > 2 {
            let inner = String(text.dropFirst().dropLast())
            var v6 = in6_addr()
            return inner.allSatisfy({ $0.isHexDigit || $0 == ":" || $0 == "." }) && inet_pton(AF_INET6, inner, &v6) == 1
                ? .ipv6(inner) : nil
        }
        var v4 = in_addr()
        if text.allSatisfy({ ("0"..."9").contains($0) || $0 == "." }) {
            return inet_pton(AF_INET, text, &v4) == 1 ? .ipv4(text) : nil
        }
        return isHostName(text) ? .name(text) : nil
    }

    /// A DNS host name: the grammar's `hostname` (also `server_name`'s, for a domain).
    public static func isHostName(_ text: String) -> Bool {
        guard !text.isEmpty, text.utf8.count <= 253 else { return false }
        let labels = text.split(separator: ".", omittingEmptySubsequences: false)
        guard labels.allSatisfy({ label in
            (1...63).contains(label.utf8.count) && label.first != "-" && label.last != "-"
                && label.unicodeScalars.allSatisfy {
                    $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || $0 == "-")
                }
        }) else { return false }
        return !labels.last!.allSatisfy { ("0"..."9").contains($0) }
    }

    /// Whether nginx would take `self` and `other` as one socket, or one of them would catch the
    /// other's connections: the same port, and the same host or either host a wildcard (`*`,
    /// `0.0.0.0`, `[::]`). Hosts are compared as addresses (`[::1]` is `[0:0:0:0:0:0:0:1]`), names
    /// without case; parameters do not matter (`reuseport` is the same socket). A name is never
    /// resolved, so `localhost` and `127.0.0.1` differ here.
    public func overlaps(_ other: ListenAddress) -> Bool {
        port == other.port && (host.isWildcard || other.host.isWildcard || host.bytes == other.host.bytes)
    }

    /// `HOST:PORT` as a URL's authority (IPv6 in brackets).
    public var authority: String {
        switch host {
        case .ipv4(let a), .name(let a): "\(a):\(port)"
        case .ipv6(let a): "[\(a)]:\(port)"
        case .any: "*:\(port)"
        }
    }

    /// The arguments of an nginx `listen` directive: the address, then the parameters; with
    /// `socketOptions` false, without those nginx takes only once per address.
    public func directive(socketOptions: Bool) -> String {
        ([authority] + parameters.filter { socketOptions || !$0.isSocketOption }.map(\.rawValue)).joined(separator: " ")
    }

    public var description: String { directive(socketOptions: true) }
}

extension ListenAddress {
    /// An http URL of `path` on this address as a client on this host reaches it: a wildcard
    /// (`*`, `0.0.0.0`, `[::]`) on loopback (127.0.0.1, [::1]).
    public func localURL(path: String) -> String {
        let host = switch host {
        case .any, .ipv4("0.0.0.0"): "127.0.0.1"
        case .ipv6(let address) where address.allSatisfy({ $0 == ":" || $0 == "0" }): "[::1]"
        case .ipv6(let address): "[\(address)]"
        case .ipv4(let address), .name(let address): address
        }
        return "http://\(host):\(port)\(path)"
    }
}
