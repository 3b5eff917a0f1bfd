import AttestConfig
import AttestService
import AttestSupervisor
import CLISupport

/// `attestctl site`: the nginx files a host install includes from the system nginx.
let siteCommand = Command(
    name: "site",
    summary: "render site.conf and fastcgi_params for a system nginx (host installs)",
    usage: """
        usage: attestctl site --out DIR [--run-dir DIR] [--nginx-templates DIR] [--data DIR]
                              [--listen ADDR] [--metrics-listen ADDR] [--log-dir DIR]
                              [--tls-cert PEM --tls-key PEM] [--domain NAME --acme-webroot DIR [--http-listen ADDR]]

        Writes DIR/site.conf (the server block: include it from nginx's http block, e.g. a
        symlink in /etc/nginx/sites-enabled) and DIR/fastcgi_params, with the pools' sockets in
        --run-dir (default /run/attestedge, where the systemd units put them), the listen
        address and challenge limit from the configuration, and DATA/jwks.json served by nginx.
        nginx/deploy/install.sh runs this. --listen ADDR listens there instead of server.listen,
        --metrics-listen ADDR serves GET /metrics there instead of at server.metricsListen;
        --log-dir DIR also writes DIR/nginx.conf for an nginx of its own (logs in --log-dir, workers
        as the invoking user), as the benchmarks run it (nginx/bench/lib.sh).
        --tls-cert/--tls-key: the site serves HTTPS with them (also DIR/tls.conf, DIR/ffdhe2048.pem);
        --domain NAME: server_name NAME, and DIR/http-redirect.conf, a server on --http-listen
        (default *:80) redirecting to https://NAME except /.well-known/acme-challenge/, served from
        --acme-webroot (certbot --webroot's directory). install.sh --domain runs this.

        example: attestctl site --out /etc/nginx/attestedge --data /var/lib/attestedge
        """,
    run: { argv in
        let args = try Arguments(argv, valued: ["data", "out", "run-dir", "nginx-templates", "listen", "metrics-listen",
                                                  "log-dir", "tls-cert", "tls-key", "domain", "acme-webroot",
                                                  "http-listen"],
                                 switches: [])
        guard let out = args.value("out") else { throw UsageError("--out DIR is required") }
        let data = dataDirectory(args)
        var config = try data.loadConfiguration()
        // Both set, then checked together: `--listen` alone may meet the old metricsListen.
        do {
            if let listen = args.value("listen") {
                try config.set("server.listen", jsonValue: "\"\(listen)\"", validating: false)
            }
            if let listen = args.value("metrics-listen") {
                try config.set("server.metricsListen", jsonValue: "\"\(listen)\"", validating: false)
            }
            try config.validate()
        } catch { throw UsageError("\(error)") }
        let tls: TLSSite?
        switch (args.value("tls-cert"), args.value("tls-key")) {
        case (nil, nil): tls = nil
        case (let cert?, let key?): tls = try TLSSite.load(certificate: cert, key: key).site
        default: throw UsageError("--tls-cert PEM and --tls-key PEM go together")
        }
        let domain: DomainSite?
        switch (args.value("domain"), args.value("acme-webroot")) {
        case (nil, nil):
            guard args.value("http-listen") == nil else { throw UsageError("--http-listen needs --domain") }
            domain = nil
        case (let name?, let webroot?):
            var site = DomainSite(domain: name, acmeWebroot: FileIO.absolute(webroot))
            if let listen = args.value("http-listen") { site.httpListen = listen }
            domain = site
        default: throw UsageError("--domain NAME and --acme-webroot DIR go together")
        }
        let site = try NginxSite.locate(args.value("nginx-templates"))
        try FileIO.makeDirectories(out, mode: 0o755)
        try site.renderForHost(data: DataDirectory(FileIO.absolute(data.path)), configuration: config,
                               runDirectory: args.value("run-dir") ?? "/run/attestedge", into: FileIO.absolute(out),
                               logDirectory: args.value("log-dir").map(FileIO.absolute), tls: tls, domain: domain)
        Output.out(args.value("log-dir") == nil
                   ? "wrote \(out)/site.conf and \(out)/fastcgi_params (include site.conf from nginx's http block)"
                   : "wrote \(out)/nginx.conf, \(out)/site.conf and \(out)/fastcgi_params (nginx -c \(out)/nginx.conf)")
        return 0
    })
