/// Apple Root CA - G3, embedded and pinned: the anchor of App Attest **receipts** (the CMS
/// signature in `attStmt.receipt` and in what Apple's attestation-data endpoint answers).
///
/// Not the App Attestation root that anchors an attestation's `x5c`: a verifier that uses
/// that one for receipts refuses every real receipt. G3 anchors other Apple services too, so
/// `ReceiptVerifier` also requires the markers of the receipt chain (`AppAttestReceipt.Marker`).
/// Published at apple.com/certificateauthority/AppleRootCA-G3.cer; the embedded copy is checked
/// against its SHA-256 fingerprint when loaded.
public enum AppleRootCAG3 {
    /// SHA-256 of the root's DER, as Apple publishes it.
    public static let sha256Fingerprint = "63343abfb89a6a03ebb57e9b3f5fa7be7c4f5c756f3017b3a8c488c3653e9179"

    public static let pem = """
        -----BEGIN CERTIFICATE-----
        MIICQzCCAcmgAwIBAgIILcX8iNLFS5UwCgYIKoZIzj0EAwMwZzEbMBkGA1UEAwwS
        QXBwbGUgUm9vdCBDQSAtIEczMSYwJAYDVQQLDB1BcHBsZSBDZXJ0aWZpY2F0aW9u
        IEF1dGhvcml0eTETMBEGA1UECgwKQXBwbGUgSW5jLjELMAkGA1UEBhMCVVMwHhcN
        MTQwNDMwMTgxOTA2WhcNMzkwNDMwMTgxOTA2WjBnMRswGQYDVQQDDBJBcHBsZSBS
        b290IENBIC0gRzMxJjAkBgNVBAsMHUFwcGxlIENlcnRpZmljYXRpb24gQXV0aG9y
        aXR5MRMwEQYDVQQKDApBcHBsZSBJbmMuMQswCQYDVQQGEwJVUzB2MBAGByqGSM49
        AgEGBSuBBAAiA2IABJjpLz1AcqTtkyJygRMc3RCV8cWjTnHcFBbZDuWmBSp3ZHtf
        TjjTuxxEtX/1H7YyYl3J6YRbTzBPEVoA/VhYDKX1DyxNB0cTddqXl5dvMVztK517
        IDvYuVTZXpmkOlEKMaNCMEAwHQYDVR0OBBYEFLuw3qFYM4iapIqZ3r6966/ayySr
        MA8GA1UdEwEB/wQFMAMBAf8wDgYDVR0PAQH/BAQDAgEGMAoGCCqGSM49BAMDA2gA
        MGUCMQCD6cHEFl4aXTQY2e3v9GwOAEZLuN+yRhHFD/3meoyhpmvOwgPUnPWTxnS4
        at+qIxUCMG1mihDK1A3UT82NQz60imOlM27jbdoXt2QfyFMm+YhidDkLF1vLUagM
        6BgD56KyKA==
        -----END CERTIFICATE-----
        """

    /// The root, after checking the embedded copy against the pinned fingerprint.
    public static func certificate() throws(AttestError) -> Certificate {
        let certs = try Certificate.certificates(pemEncoded: pem)
        guard certs.count == 1, Hex.encode(certs[0].sha256Fingerprint) == sha256Fingerprint else {
            throw AttestError(.receiptChain, "embedded Apple Root CA - G3 does not match its pinned fingerprint")
        }
        return certs[0]
    }
}
