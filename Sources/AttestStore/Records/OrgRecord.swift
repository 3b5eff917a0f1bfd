import AttestCore

/// A plan tier: sets default limits and which features apply (risk scores from `pro` up).
public enum Tier: String, Sendable, CaseIterable, Codable {
    case free, pro, business, enterprise

    var code: UInt8 { UInt8(Tier.allCases.firstIndex(of: self)!) }
    init(code: UInt8) throws {
        guard Int(code) < Tier.allCases.count else { throw StoreError(.corrupt, "tier \(code)") }
        self = Tier.allCases[Int(code)]
    }

    /// Default monthly-active-device limit (0 = unlimited).
    public var defaultMADLimit: UInt32 {
        switch self {
        case .free: return 100
        case .pro: return 10_000
        case .business: return 100_000
        case .enterprise: return 0
        }
    }

    /// Default shared validate+refresh bucket, requests per minute (0 = unlimited).
    public var defaultRatePerMinute: UInt32 {
        switch self {
        case .free: return 600
        case .pro: return 6_000
        case .business: return 60_000
        case .enterprise: return 0
        }
    }

    /// Most custom claims an app of this tier may define (docs/contract.md §6).
    public var customClaimLimit: Int {
        switch self {
        case .free: return 1
        case .pro: return 5
        case .business: return 10
        case .enterprise: return 20
        }
    }
}

/// How an organization's devices may link themselves to a subject (`subjectId` at validate
/// and refresh). Organizations created since link policies exist start `signed`; records
/// written before them (layout v1) read as `asserted`, the behaviour they were created with.
public enum SubjectLinkPolicy: String, Sendable, CaseIterable {
    /// Only a value the organization's backend signed (`v1.SUBJECT.EXPIRY.MAC`) links.
    case signed
    /// Devices never link themselves: only `attestctl subject link|unlink` does.
    case `operator`
    /// Any device links to any subject id it sends (the hosted service's behaviour).
    case asserted

    var code: UInt8 {
        switch self {
        case .asserted: return 0
        case .signed: return 1
        case .operator: return 2
        }
    }

    init(code: UInt8) throws {
        guard let found = Self.allCases.first(where: { $0.code == code }) else {
            throw StoreError(.corrupt, "subject link policy \(code)")
        }
        self = found
    }
}

/// An organization: owns apps; carries the plan's limits and its subject link policy.
///
/// Key: the name's UTF-8. Layout v3 (v1 ended at createdAt and reads as `asserted`, no secret;
/// v2 ended at subjectSecret and reads with feedback on):
/// ```
/// u8 3 | name string | tier u8 | madLimit u32 | graceDays u16 | upgradeURL string
///      | ratePerMinute u32 | createdAt i64
///      | subjectLinks u8 (0 asserted, 1 signed, 2 operator) | subjectSecret string ("" = none yet)
///      | feedbackEnabled u8 (0 off, 1 on)
/// ```
public struct OrgRecord: StoreRecord, Hashable {
    public static let currentVersion: UInt8 = 3
    public static let recordName = "organization"

    public var name: String
    public var tier: Tier
    /// Monthly-active-device limit; 0 = unlimited.
    public var madLimit: UInt32
    public var graceDays: UInt16
    public var upgradeURL: String
    /// Shared validate+refresh requests per minute; 0 = unlimited.
    public var ratePerMinute: UInt32
    public var createdAt: Timestamp
    /// Which `subjectId` values a device may link itself with.
    public var subjectLinks: SubjectLinkPolicy
    /// The key of signed subject values (`asl_` + 43 base64url characters, used as its UTF-8
    /// bytes); "" until one is made (`attestctl org secret`). Never logged.
    public var subjectSecret: String
    /// Whether its apps' devices may use feature requests and support tickets
    /// (`attestctl org set NAME --feedback on|off`); on unless turned off.
    public var feedbackEnabled: Bool

    public init(name: String, tier: Tier = .free, madLimit: UInt32? = nil, graceDays: UInt16 = 7,
                upgradeURL: String = "", ratePerMinute: UInt32? = nil, createdAt: Timestamp,
                subjectLinks: SubjectLinkPolicy = .signed, subjectSecret: String = "", feedbackEnabled: Bool = true) {
        self.name = name
        self.tier = tier
        self.madLimit = madLimit ?? tier.defaultMADLimit
        self.graceDays = graceDays
        self.upgradeURL = upgradeURL
        self.ratePerMinute = ratePerMinute ?? tier.defaultRatePerMinute
        self.createdAt = createdAt
        self.subjectLinks = subjectLinks
        self.subjectSecret = subjectSecret
        self.feedbackEnabled = feedbackEnabled
    }

    public func encode(into w: inout BinaryWriter) {
        w.string(name)
        w.u8(tier.code)
        w.u32(madLimit)
        w.u16(graceDays)
        w.string(upgradeURL)
        w.u32(ratePerMinute)
        w.i64(createdAt.seconds)
        w.u8(subjectLinks.code)
        w.string(subjectSecret)
        w.u8(feedbackEnabled ? 1 : 0)
    }

    public init(from r: inout BinaryReader) throws {
        name = try r.string()
        tier = try Tier(code: r.u8())
        madLimit = try r.u32()
        graceDays = try r.u16()
        upgradeURL = try r.string()
        ratePerMinute = try r.u32()
        createdAt = Timestamp(seconds: try r.i64())
        if r.version >= 2 {
            subjectLinks = try SubjectLinkPolicy(code: r.u8())
            subjectSecret = try r.string()
        } else {
            subjectLinks = .asserted
            subjectSecret = ""
        }
        if r.version >= 3 {
            let enabled = try r.u8()
            guard enabled <= 1 else { throw StoreError(.corrupt, "organization feedback switch \(enabled)") }
            feedbackEnabled = enabled == 1
        } else {
            feedbackEnabled = true
        }
    }
}
