import COpenSSL

/// An X.509 certificate parsed by OpenSSL, with its DER kept alongside.
public final class Certificate: @unchecked Sendable {
    let x509: OpaquePointer
    public let derEncoded: [UInt8]

    /// Parses DER; the bytes must hold exactly one certificate.
    public init<C: Collection>(derEncoded der: C) throws(AttestError) where C.Element == UInt8 {
        let bytes = Array(der)
        let parsed: OpaquePointer? = bytes.withUnsafeBufferPointer { buf in
            var cursor = buf.baseAddress
            let cert = d2i_X509(nil, &cursor, buf.count)
            if cert != nil, cursor != buf.baseAddress.map({ $0 + buf.count }) {
                X509_free(cert)
                return nil
            }
            return cert
        }
        guard let parsed else { throw AttestError.openSSL(.certificateChain, "not a DER certificate") }
        x509 = parsed
        derEncoded = bytes
    }

    deinit { X509_free(x509) }

    /// Every `CERTIFICATE` block of a PEM text, in order; fails when there is none.
    public static func certificates(pemEncoded pem: String) throws(AttestError) -> [Certificate] {
        var found = [Certificate]()
        var body: [String]? = nil
        for line in pem.split(whereSeparator: \.isNewline) {
            let text = line.trimmingCharacters()
            if text == "-----BEGIN CERTIFICATE-----" {
                body = []
            } else if text == "-----END CERTIFICATE-----", let lines = body {
                guard let der = Base64.decode(lines.joined()) else {
                    throw AttestError(.certificateChain, "PEM certificate is not base64")
                }
                found.append(try Certificate(derEncoded: der))
                body = nil
            } else if body != nil {
                body!.append(text)
            }
        }
        guard !found.isEmpty else { throw AttestError(.certificateChain, "no PEM certificate found") }
        return found
    }

    public var pemEncoded: String { pemEncode(derEncoded, label: "CERTIFICATE") }

    /// SHA-256 of the DER encoding.
    public var sha256Fingerprint: [UInt8] { SHA256.hash(derEncoded) }

    public var notBefore: Timestamp { Self.timestamp(X509_get0_notBefore(x509)) }
    public var notAfter: Timestamp { Self.timestamp(X509_get0_notAfter(x509)) }

    /// The subject as OpenSSL's one-line form, for logs.
    public var subject: String {
        guard let name = X509_get_subject_name(x509), let line = X509_NAME_oneline(name, nil, 0) else { return "" }
        defer { attest_OPENSSL_free(line) }
        return String(cString: line)
    }

    /// The OCSP responder URLs of the Authority Information Access extension (none when the
    /// certificate has no responder, e.g. a test CA's), as nginx's `ssl_stapling` would ask.
    public var ocspResponderURLs: [String] {
        guard let urls = X509_get1_ocsp(x509) else { return [] }
        defer { X509_email_free(urls) }
        return (0..<max(0, OPENSSL_sk_num(urls))).compactMap { i in
            OPENSSL_sk_value(urls, i).map { String(cString: $0.assumingMemoryBound(to: CChar.self)) }
        }
    }

    /// The fields App Attest reads (public key, extensions), from the DER.
    public func fields() throws(AttestError) -> CertificateFields {
        try CertificateFields(derEncoded: derEncoded[...])
    }

    static func timestamp(_ time: UnsafePointer<ASN1_TIME>?) -> Timestamp {
        var tm = tm()
        guard let time, ASN1_TIME_to_tm(time, &tm) == 1 else { return Timestamp(seconds: 0) }
        return Timestamp(civil: .init(year: Int(tm.tm_year) + 1900, month: Int(tm.tm_mon) + 1, day: Int(tm.tm_mday),
                                      hour: Int(tm.tm_hour), minute: Int(tm.tm_min), second: Int(tm.tm_sec)))
    }
}

extension Substring {
    func trimmingCharacters() -> String {
        String(drop { $0 == " " || $0 == "\t" || $0 == "\r" }.reversed()
            .drop { $0 == " " || $0 == "\t" || $0 == "\r" }.reversed())
    }
}
