/// A site with a domain (install.sh --domain): `server_name DOMAIN` on the main server, and a
/// plain-HTTP server (http-redirect.conf) on `httpListen` that redirects everything to
/// https://DOMAIN (with the main server's port when it is not 443) except Let's Encrypt's
/// HTTP-01 challenges, served from `acmeWebroot`/.well-known/acme-challenge/.
package struct DomainSite: Sendable, Equatable {
    package var domain: String
    /// The plain-HTTP server's address (`ListenAddress` grammar, no TLS): `*:80` on a host.
    package var httpListen: String
    /// certbot --webroot's directory (root's; never inside the data directory).
    package var acmeWebroot: String

    package init(domain: String, httpListen: String = "*:80", acmeWebroot: String) {
        self.domain = domain
        self.httpListen = httpListen
        self.acmeWebroot = acmeWebroot
    }
}
