#if canImport(Glibc)
import Glibc
#endif

/// An IPv4 (4 bytes) or IPv6 (16 bytes) address, and whether a webhook may go to it.
public struct IPAddress: Hashable, Sendable, CustomStringConvertible {
    public let bytes: [UInt8]

    public init?(bytes: [UInt8]) {
        guard bytes.count == 4 || bytes.count == 16 else { return nil }
        self.bytes = bytes
    }

    /// Parses dotted IPv4 or textual IPv6 (no brackets, no zone).
    public init?(_ text: String) {
        var v4 = in_addr()
        var v6 = in6_addr()
        if inet_pton(AF_INET, text, &v4) == 1 {
            bytes = withUnsafeBytes(of: &v4) { Array($0) }
        } else if inet_pton(AF_INET6, text, &v6) == 1 {
            bytes = withUnsafeBytes(of: &v6) { Array($0) }
        } else {
            return nil
        }
    }

    /// Parses an IPv4 address in any of the forms `inet_aton` takes, which resolvers and curl
    /// take too: "127.1", "2130706433", "0x7f.0.0.1", "0177.0.0.1" are all 127.0.0.1.
    public init?(anyIPv4Form text: String) {
        var v4 = in_addr()
        guard inet_aton(text, &v4) != 0 else { return nil }
        bytes = withUnsafeBytes(of: &v4) { Array($0) }
    }

    public var description: String {
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        var copy = bytes
        _ = inet_ntop(bytes.count == 4 ? AF_INET : AF_INET6, &copy, &buffer, socklen_t(buffer.count))
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The key a per-client rate limit counts `text` (a peer address as nginx passes it)
    /// under: an IPv4 address as it is; an IPv6 address by its /64, the block one subscriber
    /// or host is usually given, so a client cannot get a fresh bucket from each of its 2⁶⁴
    /// addresses; an IPv4-mapped IPv6 address as the IPv4 address it carries. Text that is not
    /// an address is its own key.
    public static func rateLimitKey(_ text: String) -> String {
        guard let address = IPAddress(text), address.bytes.count == 16 else { return text }
        let b = address.bytes
        if b[0..<10].allSatisfy({ $0 == 0 }) && b[10] == 0xFF && b[11] == 0xFF {
            return IPAddress(bytes: Array(b[12...]))!.description
        }
        return IPAddress(bytes: Array(b[..<8]) + [UInt8](repeating: 0, count: 8))!.description + "/64"
    }

    /// Why a webhook must not go to this address (loopback, private, link-local, multicast,
    /// or another special-use range), or `nil` when it is a public unicast address.
    /// An IPv6 address that carries an IPv4 address a packet to it reaches is judged by that
    /// address too (`embeddedIPv4`): IPv4-mapped, SIIT, NAT64's well-known prefix, 6to4 and
    /// Teredo (its server and its client), so `[2002:7f00:1::1]` is 127.0.0.1's loopback.
    public var restriction: String? {
        if bytes.count == 4 { return Self.restriction(v4: bytes) }
        let b = bytes
        for (form, v4) in embeddedIPv4 {
            if let why = Self.restriction(v4: v4) { return "\(why) (\(form) of \(IPAddress(bytes: v4)!))" }
        }
        if !embeddedIPv4.isEmpty { return nil }
        if b[0..<15].allSatisfy({ $0 == 0 }) { return b[15] == 1 ? "loopback" : "unspecified" }
        if b[0..<12].allSatisfy({ $0 == 0 }) { return "reserved (IPv4-compatible)" }
        if b[0..<6] == [0x00, 0x64, 0xFF, 0x9B, 0x00, 0x01] { return "private (local-use NAT64)" }
        if b[0..<8] == [0x01, 0x00, 0, 0, 0, 0, 0, 0] { return "reserved (discard-only)" }
        if b[0..<6] == [0x20, 0x01, 0x00, 0x02, 0x00, 0x00] { return "special-use (benchmarking)" }
        if b[0..<3] == [0x20, 0x01, 0x00] && (b[3] & 0xF0 == 0x10 || b[3] & 0xF0 == 0x20) {
            return "special-use (ORCHID)"
        }
        if b[0] == 0xFF { return "multicast" }
        if b[0] & 0xFE == 0xFC { return "private (unique local)" }
        if b[0] == 0xFE && b[1] & 0xC0 == 0x80 { return "link-local" }
        if b[0] == 0xFE && b[1] & 0xC0 == 0xC0 { return "private (site-local)" }
        if b[0] == 0x20 && b[1] == 0x01 && b[2] == 0x0D && b[3] == 0xB8 { return "documentation" }
        if b[0] == 0x3F && b[1] == 0xFF && b[2] & 0xF0 == 0 { return "documentation" }
        return nil
    }

    /// The IPv4 addresses an IPv6 address of a transition form carries, with the form's name:
    /// ```
    /// ::ffff:a.b.c.d        IPv4-mapped (::ffff:0:0/96)     bytes 12–15
    /// ::ffff:0:a.b.c.d      SIIT (::ffff:0:0:0/96)          bytes 12–15
    /// 64:ff9b::a.b.c.d      NAT64, well-known (64:ff9b::/96) bytes 12–15
    /// 2002:AABB:CCDD::/48   6to4 (2002::/16)                bytes 2–5
    /// 2001:0:SSSS:SSSS:flags:port:CCCC:CCCC   Teredo (2001::/32): the server, bytes 4–7, and the
    ///                       client, bytes 12–15 with every bit flipped
    /// ```
    /// Empty for every other address (a NAT64 network-specific prefix cannot be recognised).
    public var embeddedIPv4: [(form: String, address: [UInt8])] {
        guard bytes.count == 16 else { return [] }
        let b = bytes
        if b[0..<10].allSatisfy({ $0 == 0 }) && b[10] == 0xFF && b[11] == 0xFF {
            return [("IPv4-mapped", Array(b[12...]))]
        }
        if b[0..<8].allSatisfy({ $0 == 0 }) && b[8] == 0xFF && b[9] == 0xFF && b[10] == 0 && b[11] == 0 {
            return [("SIIT", Array(b[12...]))]
        }
        if b[0..<12] == [0x00, 0x64, 0xFF, 0x9B, 0, 0, 0, 0, 0, 0, 0, 0] { return [("NAT64", Array(b[12...]))] }
        if b[0] == 0x20 && b[1] == 0x02 { return [("6to4", Array(b[2..<6]))] }
        if b[0..<4] == [0x20, 0x01, 0x00, 0x00] {
            return [("Teredo server", Array(b[4..<8])), ("Teredo client", b[12...].map { ~$0 })]
        }
        return []
    }

    static func restriction(v4 b: [UInt8]) -> String? {
        switch (b[0], b[1]) {
        case (0, _): return "unspecified"
        case (10, _): return "private"
        case (100, 64...127): return "private (shared address space)"
        case (127, _): return "loopback"
        case (169, 254): return "link-local"
        case (172, 16...31): return "private"
        case (192, 168): return "private"
        case (192, 0) where b[2] == 0: return "special-use"
        case (192, 0) where b[2] == 2, (198, 51) where b[2] == 100, (203, 0) where b[2] == 113: return "documentation"
        case (192, 88) where b[2] == 99: return "reserved (6to4 relay anycast)"
        case (198, 18...19): return "special-use"
        case (224...239, _): return "multicast"
        case (240...255, _): return "reserved"
        default: return nil
        }
    }
}
