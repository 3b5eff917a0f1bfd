/// What the service counts, each as a few relaxed atomic adds to its slots (`MetricsLayout`).
extension MetricsSegment {
    /// One answered request: its status's counter and its duration's histogram.
    public func recordRequest(endpoint: Int, status: Int, microseconds: UInt64) {
        let L = MetricsLayout.self
        guard L.endpoints.indices.contains(endpoint),
              let slot = L.requestSlot(endpoint: endpoint, status: status) else { return }
        add(slot)
        observe(base: L.durations + endpoint * L.durationStride, microseconds, L.durationBoundsMicroseconds)
    }

    /// A validate refused at `step` (an `AttestError.Code` value; `other` when not listed).
    public func recordVerificationFailure(step: String) {
        add(MetricsLayout.verificationFailures + Self.index(step, in: MetricsLayout.verificationSteps))
    }

    /// A refresh's outcome (`MetricsLayout.refreshOutcomes`); an unknown one is not counted.
    public func recordRefreshOutcome(_ outcome: String) {
        guard let i = MetricsLayout.refreshOutcomes.firstIndex(of: outcome) else { return }
        add(MetricsLayout.refreshOutcomeSlots + i)
    }

    /// A 429 from the bucket named `bucket` (its kind is the name up to the first `:`).
    public func recordRateLimited(bucket: String) {
        let kind = String(bucket.prefix { $0 != ":" })
        add(MetricsLayout.rateLimited + Self.index(kind, in: MetricsLayout.rateBuckets))
    }

    /// One group commit of `writes` final writes.
    public func recordGroupCommit(writes: Int) {
        observe(base: MetricsLayout.groupCommitSizes, UInt64(max(0, writes)), MetricsLayout.groupSizeBounds)
    }

    /// One wait for durability that had to sync (or wait for another process's sync).
    public func recordSync(microseconds: UInt64) {
        observe(base: MetricsLayout.syncDurations, microseconds, MetricsLayout.syncBoundsMicroseconds)
    }

    /// One check of an attestation's receipt at validate (`MetricsLayout.receiptResults`); an
    /// unknown result is not counted.
    public func recordReceiptVerification(_ result: String) {
        guard let i = MetricsLayout.receiptResults.firstIndex(of: result) else { return }
        add(MetricsLayout.receiptVerifications + i)
    }

    /// One webhook delivery attempt: its HTTP status (0: none, an error).
    public func recordWebhookAttempt(status: Int) {
        let index = (200...599).contains(status) ? status / 100 - 2 : 4
        add(MetricsLayout.webhookAttempts + index)
    }

    /// One redemption with Apple (attest-receipts): the answer's code as text, or `error`.
    public func recordReceiptRedemption(status: String) {
        add(MetricsLayout.receiptRedemptions + Self.index(status, in: MetricsLayout.receiptStatuses))
    }

    /// One answer of the flag stream's auth subrequest, by its HTTP status
    /// (`MetricsLayout.flagStreamAuthOutcomes`).
    public func recordFlagStreamAuth(status: Int) {
        let outcome: Int
        switch status {
        case 200..<300: outcome = 0
        case 401: outcome = 1
        case 403: outcome = 2
        case 400..<500: outcome = 3
        default: outcome = 4
        }
        add(MetricsLayout.flagStreamAuths + outcome)
    }

    /// One publish to the flag stream: nginx answered 2xx (`ok`) or not (`failed`).
    public func recordFlagPublish(ok: Bool) {
        add(MetricsLayout.flagPublishes + (ok ? 0 : 1))
    }

    /// A histogram at `base`: its bucket, its sum and its count.
    private func observe(base: Int, _ value: UInt64, _ bounds: [UInt64]) {
        add(base + MetricsLayout.bucket(value, bounds))
        add(base + bounds.count + 1, value)
        add(base + bounds.count + 2)
    }

    /// `value`'s index in `values`, whose last entry (`other`) takes anything not listed.
    private static func index(_ value: String, in values: [String]) -> Int {
        values.firstIndex(of: value) ?? values.count - 1
    }
}
