import AttestConfig
import AttestCore
import AttestOperations
import AttestStore
#if canImport(Glibc)
import Glibc
#endif

extension Doctor {
    /// Redeeming receipts: a team a 401 stopped (its receipts wait), a DeviceCheck key file
    /// readable by others.
    func receipts(_ config: Configuration) -> [Finding] {
        var findings = [Finding]()
        let keys = AppleKeyStore(data)
        for team in keys.teams() {
            let path = keys.directory + "/\(team).p8"
            if let mode = Self.mode(path), mode & 0o077 != 0 {
                findings.append(Finding(problem: "DeviceCheck key \(path) has mode \(String(mode, radix: 8))",
                                        fix: "chmod 600 \(path)"))
            }
        }
        let teams = (try? asDataOwner(data) {
            try Store(directory: data.storeDirectory, options: config.storeOptions).read { try $0.appleTeams() }
        }) ?? []
        for team in teams {
            guard let stopped = team.stoppedAt else { continue }
            findings.append(Finding(
                problem: "Apple refused team \(team.teamID)'s DeviceCheck token at \(stopped.iso8601) "
                    + "(\(team.stopReason)): attest-receipts redeems none of its receipts",
                fix: "check the key id and that the key has DeviceCheck enabled in Apple's developer account, then "
                    + "'attestctl apple key add --team \(team.teamID) --key-id K --p8 FILE' (it lifts the stop); "
                    + "'attestctl receipts try --team \(team.teamID)' checks it"))
        }
        return findings
    }
}
