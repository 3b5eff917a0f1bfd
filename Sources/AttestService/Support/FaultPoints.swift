/// Places where a test can make a request fail on purpose, to check that what it wrote before
/// is rolled back (`nil` everywhere outside tests). A class: the context holds one, and a test
/// sets its points after building the context.
public final class FaultPoints {
    /// Called in validate's write transaction after the device, its receipt and its events
    /// are written, before the commit: throwing aborts them all.
    public var afterValidateWrites: (() throws -> Void)?
    /// Called inside the read transaction of `/healthz`'s store check (`HealthEndpoint`):
    /// throwing makes the store look unable to answer.
    public var healthStoreRead: (() throws -> Void)?
    /// Called by a group commit after its answers are built, before it waits for their
    /// durability (`GroupCommitter.commitGroup`): throwing fails the settle as a failed sync does.
    public var afterGroupAnswers: (() throws -> Void)?
    /// Called inside the read transaction of a `/metrics` scrape (`MetricsEndpoint.gauges`):
    /// throwing makes the store look unable to answer.
    public var scrapeStoreRead: (() throws -> Void)?

    public init() {}
}
