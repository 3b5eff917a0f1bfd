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
///
/// So no `;`, `{`, `}`, quote, `$`, `#`, backslash, tab or newline can reach nginx from it.
public struct ListenAddress: Sendable, Equatable, CustomStringConvertible {
    public enum Host: Sendable, Equatable {
        case ipv4(String)
        /// Without its brackets.
        case ipv6(String)
        case name(String)
        /// `*`: every address.
        case any
    }

    /// The `listen` parameters AttestEdge supports. Add one here (TLS will add `ssl` and
    /// `http2`, options of every server on the address) and the grammar takes it.
    public enum Parameter: String, Sendable, CaseIterable {
        case reuseport

        /// A socket option nginx takes once per address and port ("duplicate listen options"
        /// otherwise): only site.conf's server carries it, not nginx.conf's readiness server.
        public var isSocketOption: Bool {
            switch self {
            case .reuseport: true
            }
        }
    }

    public let host: Host
    public let port: Int
    public let parameters: [Parameter]

    /// The longest value accepted (a host name of 253 characters, a port and every parameter).
    static let maximumLength = 512

    /// Parses `text`; throws a problem naming `key` (`server.listen`, `server.metricsListen`),
    /// what is wrong, and the value.
    public init(parsing text: String, key: String = "server.listen") throws(Configuration.Problem) {
        func refuse(_ why: String) -> Configuration.Problem {
            Configuration.Problem(message: "\(key) \(why) (expected HOST:PORT, HOST an IPv4 address, [IPv6], "
                                           + "a host name or *, "
                                           + "then optionally: "
                                           + "\(Parameter.allCases.map(\.rawValue).joined(separator: ", "))), "
                                           + "got \(text.debugDescription)")
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
            guard let parameter = Parameter(rawValue: String(word)) else {
                throw refuse(word.isEmpty ? "has an extra space" : "has a parameter AttestEdge does not support")
            }
            guard !parameters.contains(parameter) else { throw refuse("repeats \(parameter.rawValue)") }
            parameters.append(parameter)
        }
        self.host = host
        self.port = port
        self.parameters = parameters
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

    static func isHostName(_ text: String) -> Bool {
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
