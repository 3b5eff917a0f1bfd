/// The attestation object `attestKey` returns.
///
/// ```
/// attestationObject = {
///     "fmt": "apple-appattest",
///     "attStmt": { "x5c": [ credCert: bstr, intermediate: bstr, * bstr ], "receipt": bstr },
///     "authData": bstr            ; see AuthenticatorData
/// }
/// ```
public struct AttestationObject: Sendable {
    public static let format = "apple-appattest"

    public let fmt: String
    /// DER certificates, credential certificate first.
    public let x5c: [ArraySlice<UInt8>]
    public let receipt: ArraySlice<UInt8>
    public let authData: ArraySlice<UInt8>

    /// Decodes the CBOR (failing with `.cborMalformed` or `.cborLimitExceeded`) and checks the
    /// shape (failing with `.format`).
    public init(cborEncoded bytes: ArraySlice<UInt8>) throws(AttestError) {
        try self.init(cbor: CBORReader.decode(bytes))
    }

    /// Checks the shape of an already decoded value (failing with `.format`).
    public init(cbor root: CBORValue) throws(AttestError) {
        guard root.mapEntries != nil else { throw AttestError(.format, "attestation object is not a map") }
        guard let fmt = root[text: "fmt"]?.textValue else { throw AttestError(.format, "fmt is missing") }
        guard fmt == Self.format else { throw AttestError(.format, "fmt is \"\(fmt)\", not \"\(Self.format)\"") }
        guard let stmt = root[text: "attStmt"], stmt.mapEntries != nil else {
            throw AttestError(.format, "attStmt is missing")
        }
        guard let chain = stmt[text: "x5c"]?.arrayValue, chain.count >= 2 else {
            throw AttestError(.format, "x5c must hold the credential and intermediate certificates")
        }
        var certs = [ArraySlice<UInt8>]()
        for item in chain {
            guard let der = item.bytesValue else { throw AttestError(.format, "x5c entry is not a byte string") }
            certs.append(der)
        }
        guard let receipt = stmt[text: "receipt"]?.bytesValue else { throw AttestError(.format, "receipt is missing") }
        guard let authData = root[text: "authData"]?.bytesValue else {
            throw AttestError(.format, "authData is missing")
        }
        self.fmt = fmt
        self.x5c = certs
        self.receipt = receipt
        self.authData = authData
    }
}
