import AttestConfig
import AttestStatus
import CLISupport
#if canImport(Glibc)
import Glibc
#endif

/// `attestctl status`: the running service's numbers from its metrics (AttestStatus).
let statusCommand = Command(
    name: "status",
    summary: "one screen of the running service: pools, requests/s, p99, errors, store, webhooks, active devices",
    usage: """
        usage: attestctl status [--data DIR] [--url URL] [--watch [SECONDS]] [--json]

        Scrapes the metrics of the running stack twice, an interval apart (1 s; with --watch,
        SECONDS, default 2, 1...3600), and shows per pool its workers, worker restarts, requests
        per second, p99 latency (from the histogram's buckets over the interval), 5xx and 4xx
        answers per second; each LMDB map's use; the webhook backlog and failed attempts; and
        each organization's monthly active devices against its limit.
        The URL is http://<server.metricsListen>/metrics of the data directory's configuration
        (default http://127.0.0.1:9469/metrics), or --url. 'attestctl serve' or the
        attestedge.target units (the monitor pool) must run.

        --watch redraws the screen in place every SECONDS (no alternate screen: tmux and ssh
        keep it); Ctrl-C quits with status 0. A scrape that fails is shown and retried.
        --json prints one object (with --watch, one a line per interval):
          url, seconds (the measured interval), hostTime (the host's clock, ISO 8601),
          pools [{pool, workers, workerRestarts, requestsPerSecond, p99Seconds,
                  p99AboveLargestBucket, serverErrorsPerSecond, clientErrorsPerSecond}],
          stores [{environment, usedBytes, mapSizeBytes, percent}],
          webhooks {backlog, attemptsPerSecond, failuresPerSecond, failedAttempts},
          organizations [{org, activeDevices, limit, percent}]
        A number not known is null (p99 without requests, a limit of an unlimited organization).

        example: attestctl status --watch 5
        """,
    run: { argv in
        let options = try StatusOptions(argv)
        let url = try options.url ?? defaultMetricsURL(DataDirectory(flag: options.data))
        let scraper = MetricsScraper(url: url)
        guard let watch = options.watchSeconds else {
            let earlier = try scraper.scrape()
            pause(seconds: StatusOptions.oneShotSeconds)
            let status = try scraper.status(since: earlier)
            Output.out(options.json ? status.json(url: url).prettyJSONText : status.text(url: url))
            return 0
        }
        signal(SIGINT) { _ in _exit(0) }
        let terminal = Output.isTerminal
        var earlier: MetricsScraper.Scrape? = nil
        while true {
            let text: String
            do {
                if earlier == nil {
                    earlier = try scraper.scrape()
                    pause(seconds: watch)
                }
                let status = try scraper.status(since: earlier!)
                earlier = scraper.last
                text = options.json ? status.json(url: url).jsonText
                    : status.text(url: url) + "\n\nevery \(watch) s · Ctrl-C quits"
            } catch {
                earlier = nil
                if options.json { Output.err("attestctl status: \(error)"); pause(seconds: watch); continue }
                text = "attestctl status: \(error)\n\nretrying every \(watch) s · Ctrl-C quits"
            }
            if options.json {
                Output.out(text)
            } else {
                Output.write(fd: 1, terminal ? StatusScreen.frame(text) : text + "\n\n")
            }
            pause(seconds: watch)
        }
    })

/// http://<server.metricsListen>/metrics of the data directory's configuration.
private func defaultMetricsURL(_ data: DataDirectory) throws -> String {
    let config = try data.loadConfiguration()
    return MetricsURL.of(try ListenAddress(parsing: config.metricsListen, key: "server.metricsListen"))
}

private func pause(seconds: Int) {
    var left = timespec(tv_sec: seconds, tv_nsec: 0), asked = left
    while nanosleep(&asked, &left) != 0 && errno == EINTR { asked = left }
}
