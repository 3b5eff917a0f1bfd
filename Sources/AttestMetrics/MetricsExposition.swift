/// One segment's counters as read at a scrape: a pool's (`pool` = its name, e.g. `refresh`) or
/// the webhook sender's (`isPool` false: it has no workers and answers no requests).
public struct MetricsSnapshot: Sendable {
    public let name: String
    public let isPool: Bool
    public let slots: [UInt64]

    public init(name: String, isPool: Bool, slots: [UInt64]) {
        self.name = name
        self.isPool = isPool
        self.slots = slots
    }
}

/// What is read from the store and the clock at a scrape rather than counted.
public struct ScrapeGauges: Sendable {
    /// Each LMDB environment's bytes in use and map size (empty on PostgreSQL, which has no map).
    public var storeMaps: [(environment: String, used: Int, size: Int)]
    /// Webhook events not yet fanned out plus deliveries waiting for an attempt (`nil`: the
    /// store did not answer).
    public var webhookBacklog: Int?
    /// Receipts due for redemption with Apple now and not yet sent, counted up to
    /// `receiptBacklogCap` (`nil`: the store did not answer).
    public var receiptBacklog: Int?
    /// Each organization's billable active devices this month and its limit.
    public var organizations: [(name: String, active: UInt32, limit: UInt32)]
    /// The host's wall clock (Unix seconds).
    public var time: Double
    /// Each pool and whether it takes connections on its socket now (the monitor pool always
    /// does: it answers the scrape). A pool whose master died keeps its last counters and
    /// `pool_workers` in its segment; this is what says it is down.
    public var poolsUp: [(pool: String, up: Bool)]
    /// Whether the store answered the scrape's read; when not, the gauges read from it (the
    /// backlog, the organizations' devices) have no sample.
    public var storeUp: Bool
    /// Whether nchan's status was read from the flag stream's publisher socket (`nil`: not
    /// asked, in process with no nginx: no `flag_stream_up` sample).
    public var flagStreamUp: Bool?
    /// What nchan said (`nil` when it was not read: the flag stream's gauges have no sample).
    public var flagStream: FlagStreamGauges?

    /// The most due receipts a scrape counts (a longer queue shows as this).
    public static let receiptBacklogCap = 10_000

    public init(storeMaps: [(environment: String, used: Int, size: Int)] = [], webhookBacklog: Int? = 0,
                receiptBacklog: Int? = 0,
                organizations: [(name: String, active: UInt32, limit: UInt32)] = [], time: Double = 0,
                poolsUp: [(pool: String, up: Bool)] = [], storeUp: Bool = true, flagStreamUp: Bool? = nil,
                flagStream: FlagStreamGauges? = nil) {
        self.storeMaps = storeMaps
        self.webhookBacklog = webhookBacklog
        self.receiptBacklog = receiptBacklog
        self.organizations = organizations
        self.time = time
        self.poolsUp = poolsUp
        self.storeUp = storeUp
        self.flagStreamUp = flagStreamUp
        self.flagStream = flagStream
    }
}

/// Prometheus's text exposition format 0.0.4 of the segments and the scrape's gauges: a pure
/// function (docs/metrics.md lists the families). Every family has its HELP and TYPE lines
/// even with no sample; a family with fixed label values (steps, outcomes, buckets, classes)
/// has a sample for each, zeros included; requests and durations have one per pool, endpoint
/// and status that ever answered.
public enum MetricsExposition {
    public static let contentType = "text/plain; version=0.0.4; charset=utf-8"

    public static func render(_ segments: [MetricsSnapshot], _ gauges: ScrapeGauges) -> String {
        let L = MetricsLayout.self
        let pools = segments.filter(\.isPool)
        var out = ""
        family(&out, "requests_total", "counter", "Requests answered, by pool, endpoint and HTTP status.")
        for pool in pools {
            for (e, endpoint) in L.endpoints.enumerated() {
                for status in L.statuses {
                    let n = pool.slots[L.requestSlot(endpoint: e, status: status)!]
                    if n > 0 {
                        sample(&out, "requests_total", [("pool", pool.name), ("endpoint", endpoint),
                                                        ("status", String(status))], String(n))
                    }
                }
            }
        }
        family(&out, "request_duration_seconds", "histogram",
               "Time from a request's arrival in the pool to its answer leaving, by pool and endpoint.")
        for pool in pools {
            for (e, endpoint) in L.endpoints.enumerated() {
                let base = L.durations + e * L.durationStride
                guard pool.slots[base + L.durationStride - 1] > 0 else { continue }
                histogram(&out, "request_duration_seconds", [("pool", pool.name), ("endpoint", endpoint)],
                          pool.slots, base: base, labels: L.durationLabels, sumScale: 1_000_000)
            }
        }
        let sums = (0..<L.slotCount).map { slot in segments.reduce(0) { $0 &+ $1.slots[slot] } }
        fixed(&out, "verification_failures_total", "Attestations refused by verification, by the step that failed.",
              "step", L.verificationSteps, sums, L.verificationFailures)
        fixed(&out, "refresh_outcomes_total", "Refreshes by outcome.", "outcome", L.refreshOutcomes, sums,
              L.refreshOutcomeSlots)
        fixed(&out, "rate_limited_total", "Requests refused by a rate limit, by bucket kind.", "bucket",
              L.rateBuckets, sums, L.rateLimited)
        family(&out, "group_commit_size", "histogram", "Final writes committed together per group commit.")
        histogram(&out, "group_commit_size", [], sums, base: L.groupCommitSizes, labels: L.groupSizeLabels,
                  sumScale: 1)
        family(&out, "sync_duration_seconds", "histogram",
               "Time an answer waited for its commit to reach the disk, when it had to.")
        histogram(&out, "sync_duration_seconds", [], sums, base: L.syncDurations, labels: L.syncLabels,
                  sumScale: 1_000_000)
        family(&out, "pool_up", "gauge", "Whether each pool takes connections on its socket (1) or not (0) now.")
        for pool in gauges.poolsUp { sample(&out, "pool_up", [("pool", pool.pool)], pool.up ? "1" : "0") }
        family(&out, "pool_workers", "gauge", "Worker processes each pool runs.")
        for pool in pools { sample(&out, "pool_workers", [("pool", pool.name)], String(pool.slots[L.poolWorkers])) }
        family(&out, "pool_worker_restarts_total", "counter", "Workers that exited on their own and were replaced.")
        for pool in pools {
            sample(&out, "pool_worker_restarts_total", [("pool", pool.name)], String(pool.slots[L.poolRestarts]))
        }
        family(&out, "pool_reloads_total", "counter", "Reloads (SIGHUP) a pool completed.")
        for pool in pools {
            sample(&out, "pool_reloads_total", [("pool", pool.name)], String(pool.slots[L.poolReloads]))
        }
        family(&out, "store_up", "gauge", "Whether the store answered the scrape's read (1) or not (0).")
        sample(&out, "store_up", [], gauges.storeUp ? "1" : "0")
        family(&out, "store_map_used_bytes", "gauge", "Bytes in use in each LMDB environment's map.")
        for map in gauges.storeMaps {
            sample(&out, "store_map_used_bytes", [("environment", map.environment)], String(map.used))
        }
        family(&out, "store_map_size_bytes", "gauge", "Each LMDB environment's map size (store.*MapSizeMiB).")
        for map in gauges.storeMaps {
            sample(&out, "store_map_size_bytes", [("environment", map.environment)], String(map.size))
        }
        family(&out, "webhook_backlog", "gauge", "Webhook events and deliveries waiting to be sent.")
        if let backlog = gauges.webhookBacklog { sample(&out, "webhook_backlog", [], String(backlog)) }
        fixed(&out, "webhook_attempts_total", "Webhook delivery attempts, by the endpoint's answer class.", "class",
              L.webhookClasses, sums, L.webhookAttempts)
        fixed(&out, "receipt_verifications_total", "Attestation receipts checked at validate, by result.", "result",
              L.receiptResults, sums, L.receiptVerifications)
        family(&out, "receipt_backlog", "gauge", "Receipts due for redemption with Apple and not yet sent.")
        if let backlog = gauges.receiptBacklog { sample(&out, "receipt_backlog", [], String(backlog)) }
        fixed(&out, "receipt_redemptions_total", "Receipt redemptions with Apple, by Apple's answer.", "status",
              L.receiptStatuses, sums, L.receiptRedemptions)
        fixed(&out, "flag_stream_auth_total", "The flag stream's auth subrequests, by outcome.", "outcome",
              L.flagStreamAuthOutcomes, sums, L.flagStreamAuths)
        fixed(&out, "flag_publishes_total", "Publishes to the flag stream by the pools, by outcome.", "outcome",
              L.flagPublishOutcomes, sums, L.flagPublishes)
        flagStream(&out, gauges)
        family(&out, "monthly_active_devices", "gauge", "Billable devices active this month, by organization.")
        for org in gauges.organizations {
            sample(&out, "monthly_active_devices", [("org", org.name)], String(org.active))
        }
        family(&out, "monthly_active_devices_limit", "gauge", "Each organization's monthly active device limit.")
        for org in gauges.organizations {
            sample(&out, "monthly_active_devices_limit", [("org", org.name)], String(org.limit))
        }
        family(&out, "time_seconds", "gauge", "The host's clock at the scrape (Unix seconds).")
        sample(&out, "time_seconds", [], seconds(gauges.time))
        return out
    }

    /// nchan's gauges of the flag stream: `flag_stream_up`, and what was read when it is 1.
    private static func flagStream(_ out: inout String, _ gauges: ScrapeGauges) {
        let stream = gauges.flagStream
        family(&out, "flag_stream_up", "gauge",
               "Whether nchan's status was read from the flag stream's publisher socket (1) or not (0).")
        if let up = gauges.flagStreamUp { sample(&out, "flag_stream_up", [], up ? "1" : "0") }
        let values: [(String, String, String, UInt64?)] = [
            ("flag_stream_subscribers", "gauge", "Flag streams connected now (nchan's subscribers).",
             stream?.subscribers),
            ("flag_stream_channels", "gauge", "Channels nchan holds now.", stream?.channels),
            ("flag_stream_messages", "gauge", "Messages nchan stores now.", stream?.storedMessages),
            ("flag_stream_published_messages_total", "counter",
             "Messages nchan took from publishers since nginx started.", stream?.publishedMessages),
            ("flag_stream_shared_memory_used_bytes", "gauge", "nchan's shared memory in use.",
             stream?.sharedMemoryUsedBytes),
            ("flag_stream_shared_memory_limit_bytes", "gauge", "nchan's shared memory size (flags.streamMemoryMiB).",
             stream?.sharedMemoryLimitBytes),
        ]
        for (name, type, help, value) in values {
            family(&out, name, type, help)
            if let value { sample(&out, name, [], String(value)) }
        }
    }

    private static func family(_ out: inout String, _ name: String, _ type: String, _ help: String) {
        out += "# HELP attestedge_\(name) \(help)\n# TYPE attestedge_\(name) \(type)\n"
    }

    private static func sample(_ out: inout String, _ name: String, _ labels: [(String, String)], _ value: String) {
        out += "attestedge_" + name
        if !labels.isEmpty {
            out += "{" + labels.map { "\($0.0)=\"\(escape($0.1))\"" }.joined(separator: ",") + "}"
        }
        out += " " + value + "\n"
    }

    /// A counter family with one sample per fixed label value, summed over every segment.
    private static func fixed(_ out: inout String, _ name: String, _ help: String, _ label: String,
                              _ values: [String], _ sums: [UInt64], _ base: Int) {
        family(&out, name, "counter", help)
        for (i, value) in values.enumerated() { sample(&out, name, [(label, value)], String(sums[base + i])) }
    }

    /// A histogram stored as per-bucket counts (the finite ones, +Inf), sum and count from
    /// `base`; rendered cumulative, the sum divided by `sumScale`.
    private static func histogram(_ out: inout String, _ name: String, _ labels: [(String, String)],
                                  _ slots: [UInt64], base: Int, labels bounds: [String], sumScale: UInt64) {
        var cumulative: UInt64 = 0
        for (i, bound) in (bounds + ["+Inf"]).enumerated() {
            cumulative &+= slots[base + i]
            sample(&out, name + "_bucket", labels + [("le", bound)], String(cumulative))
        }
        let sum = slots[base + bounds.count + 1]
        sample(&out, name + "_sum", labels, sumScale == 1 ? String(sum) : seconds(Double(sum) / Double(sumScale)))
        // The count is the +Inf bucket's: one value for both even if a scrape falls between
        // a worker's adds to the bucket and to the count.
        sample(&out, name + "_count", labels, String(cumulative))
    }

    /// A number of seconds as Prometheus reads it (Go's ParseFloat accepts Swift's shortest form).
    static func seconds(_ value: Double) -> String {
        value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : String(value)
    }

    /// A label value escaped as the text format requires: backslash, double quote, newline.
    static func escape(_ value: String) -> String {
        var out = ""
        for c in value.unicodeScalars {
            switch c {
            case "\\": out += "\\\\"
            case "\"": out += "\\\""
            case "\n": out += "\\n"
            default: out.unicodeScalars.append(c)
            }
        }
        return out
    }
}
