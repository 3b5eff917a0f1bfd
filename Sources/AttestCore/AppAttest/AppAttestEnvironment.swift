/// The App Attest environment a key was created in, read from the aaguid.
public enum AppAttestEnvironment: String, Sendable, Hashable, CaseIterable {
    case production
    case development

    /// `appattest` followed by seven zero bytes.
    public static let productionAAGUID: [UInt8] = Array("appattest".utf8) + [UInt8](repeating: 0, count: 7)
    /// `appattestdevelop`.
    public static let developmentAAGUID: [UInt8] = Array("appattestdevelop".utf8)

    public init?(aaguid: ArraySlice<UInt8>) {
        if aaguid.elementsEqual(Self.productionAAGUID) {
            self = .production
        } else if aaguid.elementsEqual(Self.developmentAAGUID) {
            self = .development
        } else {
            return nil
        }
    }

    public var aaguid: [UInt8] { self == .production ? Self.productionAAGUID : Self.developmentAAGUID }
}

/// Which environments an app accepts.
public enum EnvironmentPolicy: String, Sendable, Hashable, CaseIterable {
    case production
    case development
    case both

    public func allows(_ environment: AppAttestEnvironment) -> Bool {
        switch self {
        case .both: return true
        case .production: return environment == .production
        case .development: return environment == .development
        }
    }
}
