/// The named databases and the environment each lives in.
///
/// `durable` is synced per `StoreOptions.sync`; `ephemeral` never syncs (safe against
/// process crashes; after a power loss delete `ephemeral/`: it
/// only holds used challenges and rate windows, which expire within minutes — a challenge
/// used just before the loss could then be presented once more until its expiry).
public enum Database: String, CaseIterable, Sendable {
    // durable
    case meta, orgs, apps, devices, deviceIDs = "device_ids", receipts, fingerprints
    case usageMonths = "usage_months", usageDevices = "usage_devices", usageDays = "usage_days"
    case apiKeys = "api_keys", outbox
    case subjects, subjectDevices = "subject_devices", flagLog = "flag_log"
    case webhooks, deliveries, deliveryDue = "delivery_due", webhookCounts = "webhook_counts"
    case receiptDue = "receipt_due", appleTeams = "apple_teams"
    case featureFlagApps = "feature_flag_apps", featureFlags = "feature_flags"
    case featureFlagOverrides = "feature_flag_overrides", releaseNotes = "release_notes", notesSeen = "notes_seen"
    case deviceVersions = "device_versions"
    case featureRequests = "feature_requests", featureVotes = "feature_votes", featureComments = "feature_comments"
    case tickets, ticketMessages = "ticket_messages", ticketsByAuthor = "tickets_by_author"
    case feedbackUsage = "feedback_usage"
    case consoleLogins = "console_logins", consoleSessions = "console_sessions", auditLog = "audit_log"
    case activityDays = "activity_days", revocations, auditCounts = "audit_counts"
    // ephemeral
    case challenges, rates

    public enum Environment: String, Sendable, CaseIterable { case durable, ephemeral }

    public var environment: Environment {
        switch self {
        case .challenges, .rates: return .ephemeral
        default: return .durable
        }
    }
}
