import AttestCore
import AttestStore

/// An admin's action on a device (`POST /api/v1/org/devices/:keyId/actions`), as `attestctl
/// device flag --jailbroken|--block|--clear` and `attestctl device revoke` do it, audited
/// (`device.<action>`) in the action's own transaction.
enum OrgDeviceAction: String {
    case flag, block, clear, revoke

    func apply(keyID: [UInt8], reason: String, caller: OrgCaller, _ ctx: ServiceContext) throws {
        let now = ctx.clock.now()
        let org = caller.org.name
        let target = OrgDeviceWire.keyID(keyID)
        /// Inside the write: the device is still the organization's, and the audit entry.
        func audit(_ txn: Transaction) throws {
            guard try OrgDevicesEndpoint.device(keyID, org: org, in: txn) != nil else {
                throw OrgDevicesEndpoint.notFound(target)
            }
            try OrgAudit.record(caller, action: "device.\(rawValue)", target: target, detail: reason, at: now, in: txn)
        }
        let holder: LineageKey?
        switch self {
        case .flag, .block, .clear:
            let change = try DeviceFlags.apply(self == .flag ? .jailbroken : self == .block ? .block : .clear,
                                               keyID: keyID, reason: reason, store: ctx.store, random: ctx.random,
                                               now: now, queueEvents: ctx.configuration.webhookQueueEvents,
                                               within: audit)
            holder = change.flags.contains(.blocked) ? LineageKey.of(change.device) : nil
        case .revoke:
            holder = try ctx.store.write([.durable]) { txn in
                try audit(txn)
                guard var d = try txn.device(keyID: keyID) else { throw OrgDevicesEndpoint.notFound(target) }
                d.status = .revoked
                try txn.put(d)
                try txn.put(RevocationRecord(at: now, by: caller.actor.describedBy, reason: reason), keyID: keyID)
                return LineageKey.of(d)
            }
        }
        // After the commit, as refresh does for a device it invalidates: the stream's client
        // reconnects and is refused.
        if let holder, let sockets = ctx.poolSockets {
            for warning in FlagStream.close(holders: [FlagChannel.holder(lineage: holder)], socketDirectory: sockets) {
                ctx.log("org devices API: \(warning)")
            }
        }
    }
}
