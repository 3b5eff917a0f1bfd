import AttestConfig
import AttestCore
import AttestOperations
import AttestService
import AttestStore
import AttestSupervisor
import CLISupport

/// `attestctl serve`: the whole stack on this machine, in the foreground.
let serveCommand = Command(
    name: "serve",
    summary: "run the whole stack in the foreground: nginx, one pool per endpoint, the webhook sender",
    usage: """
        usage: attestctl serve [--data DIR] [--listen HOST:PORT] [--metrics-listen HOST:PORT] [--workers N]
                               [--trust-root PEM]...
                               [--test-ca] [--allow-private-webhooks] [--nginx-templates DIR] [--user NAME]
                               [--tls-cert PEM --tls-key PEM]

        Initialises DIR if needed (with a demo organization and app, printed), renders the nginx
        configuration into DIR/nginx, starts one pre-forked pool per endpoint, the webhook
        delivery worker (attest-webhooks deliver) and nginx, waits until each answers and prints
        the base URL. Ctrl-C, SIGTERM or SIGHUP (the terminal closing) stops everything it started.
        A pool that crashes later is restarted with backoff; if nginx dies, everything stops.
        Logs in DIR/log are rotated past server.logMaxMiB (one previous file, NAME.1, is kept).

        As root, nginx (master and workers) and the pools run as server.user (default attestedge,
        created if missing) and DIR is handed to that user; nginx keeps one capability, to bind a
        port below 1024, and only when the port needs it. server.user is read from config.json,
        which that user can write: once DIR belongs to a user, a server.user naming another
        account (root included) is refused unless --user names it on the command line.

        --listen      address nginx listens on (default server.listen, 127.0.0.1:8080)
        --metrics-listen
                      address of the Prometheus scrape server, GET /metrics only
                      (default server.metricsListen, 127.0.0.1:9469)
        --user        as root: the account to run as, overriding server.user (root's own choice)
        --tls-cert, --tls-key
                      serve HTTPS (TLS 1.2/1.3, Mozilla's intermediate profile, HTTP/2, HSTS) on the
                      listen address with this PEM certificate chain and key, e.g. from a test CA for
                      an iOS simulator (which must trust that CA). As root they are copied into
                      DIR/nginx (key 0600) for nginx, which runs as the service user
        --workers     worker processes per pool (default server.workers)
        --trust-root  also trust this CA (PEM) for attestations: test devices only, logged loudly
        --test-ca     create a test CA in DIR/test-ca if missing and trust it (trust.testRoots), so
                      'attest-device --test-ca DIR/test-ca/ca.pem' can enroll (never in production)
        --allow-private-webhooks
                      lift the webhook SSRF guard for this run (webhooks.allowPrivateDestinations):
                      http:// and loopback/private receivers are allowed (tests, never in production)

        example: attestctl serve --data ./var --listen 127.0.0.1:8080 --test-ca
                 attestctl serve --data ./var --listen 127.0.0.1:8443 --tls-cert cert.pem --tls-key key.pem
        """,
    run: { argv in
        let args = try Arguments(argv, valued: ["data", "listen", "metrics-listen", "workers", "trust-root",
                                                  "nginx-templates", "user", "tls-cert", "tls-key"],
                                 switches: ["test-ca", "allow-private-webhooks"])
        try prepareToServe(dataDirectory(args), testCA: args.flag("test-ca"))
        return try Serve(args).run()
    })

/// What serve does before the supervisor (`Serve`) starts: initialise the data directory when
/// it is new (with a demo organization and app) and make its test CA when asked.
func prepareToServe(_ data: DataDirectory, testCA: Bool) throws {
    if !data.isInitialised {
        // A data directory another account owns is that account's to initialise: as root,
        // the keys, the secret and the store's files would be created through whatever links
        // it planted (it need only delete secrets/challenge.key to get here).
        try asDataOwner(data) {
            _ = try initialiseDataDirectory(data)
            try createDemoTenant(data)
        }
    }
    // As the data directory's owner: root must not create files through links planted in test-ca/.
    if testCA { try asDataOwner(data) { _ = try ensureTestCA(data) } }
}

func createDemoTenant(_ data: DataDirectory) throws {
    let (_, store) = try openStore(data)
    let time = now()
    try store.write([.durable]) { txn in
        try txn.put(OrgRecord(name: "demo", tier: .pro, ratePerMinute: 0, createdAt: time,
                              subjectSecret: SignedSubject.newSecret(random: SystemRandom())))
        try txn.put(AppRecord(teamID: "DEMOTEAM01", bundleID: "com.example.demo", org: "demo", policy: .both,
                              createdAt: time))
    }
    Output.out("created demo organization \"demo\" (pro) and app DEMOTEAM01.com.example.demo (environments: both)")
}
