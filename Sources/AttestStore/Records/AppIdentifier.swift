/// The syntax of the two halves of an App ID, checked wherever one enters the system (the
/// device request headers, `attestctl app add`), so that `TEAMID.bundleId` splits only one way.
///
/// - Team ID: exactly 10 characters, `A`–`Z` and `0`–`9` (Apple's Developer Team IDs).
/// - Bundle ID: 1–155 characters of `A`–`Z`, `a`–`z`, `0`–`9`, `-` and `.` (Apple's
///   bundle identifier character set and App Store Connect's length limit).
public enum AppIdentifier {
    public static let teamIDLength = 10
    public static let bundleIDMaxLength = 155

    public static func isValidTeamID(_ text: String) -> Bool {
        text.utf8.count == teamIDLength
            && text.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x41...0x5A).contains($0) }
    }

    public static func isValidBundleID(_ text: String) -> Bool {
        let u = text.utf8
        return !u.isEmpty && u.count <= bundleIDMaxLength && u.allSatisfy {
            (0x30...0x39).contains($0) || (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0)
                || $0 == 0x2D || $0 == 0x2E
        }
    }
}
