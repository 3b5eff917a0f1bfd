/// Places where a test can make a request fail on purpose, to check that what it wrote before
/// is rolled back (`nil` everywhere outside tests).
public struct FaultPoints {
    /// Called in validate's write transaction after the device, its receipt and its events
    /// are written, before the commit: throwing aborts them all.
    public var afterValidateWrites: (() throws -> Void)?

    public init() {}
}
