import AttestConfig
import AttestCore

/// HTTPS for the rendered site: the certificate chain and key nginx serves (`ssl_certificate`,
/// `ssl_certificate_key` in tls.conf) and whether to staple OCSP. `attestctl serve --tls-cert
/// --tls-key` and `attestctl site --tls-cert --tls-key` (install.sh) make one; with it the main
/// server listens with `ssl http2` and sends HSTS.
///
/// Command-line options only, never config.json keys: config.json is the service user's to
/// write, and these are files root reads (a system nginx's master runs as root, and so does
/// this loader under install.sh).
package struct TLSSite: Sendable, Equatable {
    /// The PEM certificate chain, the server's certificate first (a "fullchain.pem").
    package var certificate: String
    /// The PEM private key.
    package var key: String
    /// `ssl_stapling on`: the server's certificate names an OCSP responder. A certificate
    /// without one (a test CA's) gets no stapling lines, so nginx has nothing to warn about.
    package var stapling: Bool

    package init(certificate: String, key: String, stapling: Bool) {
        self.certificate = certificate
        self.key = key
        self.stapling = stapling
    }

    /// What `load` read: the site, and the two files' texts (serve, as root, hands copies of
    /// them to the service user's nginx; it never reads the copies back).
    package struct Loaded: Sendable {
        package let site: TLSSite
        package let certificatePEM: String
        package let keyPEM: String
    }

    /// Reads `certificate` and `key` as the caller, refusing what nginx could not serve: no
    /// PEM certificate, no PEM private key. Decides stapling from the first certificate's
    /// Authority Information Access (OpenSSL's `X509_get1_ocsp`, what nginx itself asks).
    package static func load(certificate: String, key: String) throws -> Loaded {
        let certificate = FileIO.absolute(certificate), key = FileIO.absolute(key)
        guard let chainText = try? FileIO.readText(certificate) else {
            throw SupervisorError(.nginxSite, "cannot read the TLS certificate \(certificate)")
        }
        let chain: [Certificate]
        do { chain = try Certificate.certificates(pemEncoded: chainText) } catch {
            throw SupervisorError(.nginxSite, "\(certificate) is not a PEM certificate chain: \(error.reason)")
        }
        guard let keyText = try? FileIO.readText(key) else {
            throw SupervisorError(.nginxSite, "cannot read the TLS key \(key)")
        }
        guard keyText.contains("-----BEGIN "), keyText.contains("PRIVATE KEY-----") else {
            throw SupervisorError(.nginxSite, "\(key) is not a PEM private key")
        }
        let site = TLSSite(certificate: certificate, key: key, stapling: !chain[0].ocspResponderURLs.isEmpty)
        return Loaded(site: site, certificatePEM: chainText, keyPEM: keyText)
    }
}
