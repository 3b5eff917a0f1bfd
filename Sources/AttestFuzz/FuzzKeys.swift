import AttestCore
import AttestTesting

/// Fixed keys and a fixed test PKI, so that the corpus kept in the repository (attestations
/// certified by this PKI, assertions and tokens signed by these keys) stays valid from run to
/// run. Test material only: nothing trusts it outside the fuzz targets.
enum FuzzKeys {
    /// Inside the PKI's validity; the time attestations are verified at.
    static let verifyAt = Timestamp(iso8601: "2026-12-01T12:00:00Z")!
    /// The clientDataHash the attestation and assertion settings use.
    static let clientDataHash = SHA256.hash("fuzz-challenge".utf8)
    static let pki = setUp("test PKI") { try TestPKI(pemEncoded: pkiPEM) }
    static let device = setUp("device key") { try SigningKey(pemEncoded: devicePEM) }
    static let tokenKey = setUp("token key") { try SigningKey(pemEncoded: tokenPEM) }

    static let pkiPEM = """
        # AttestEdge Test CA: root certificate
        -----BEGIN CERTIFICATE-----
        MIICSzCCAdGgAwIBAgIQYpQZ1VbCwJ/MuIDoXW49bjAKBggqhkjOPQQDAzBnMTMw
        MQYDVQQDDCpBdHRlc3RFZGdlIFRlc3QgQ0EgQXBwIEF0dGVzdGF0aW9uIFJvb3Qg
        Q0ExGzAZBgNVBAoMEkF0dGVzdEVkZ2UgVGVzdCBDQTETMBEGA1UECAwKQ2FsaWZv
        cm5pYTAeFw0yNjExMzAxMTQyMjJaFw0zNjExMjgxMTQyMjJaMGcxMzAxBgNVBAMM
        KkF0dGVzdEVkZ2UgVGVzdCBDQSBBcHAgQXR0ZXN0YXRpb24gUm9vdCBDQTEbMBkG
        A1UECgwSQXR0ZXN0RWRnZSBUZXN0IENBMRMwEQYDVQQIDApDYWxpZm9ybmlhMHYw
        EAYHKoZIzj0CAQYFK4EEACIDYgAEyNr/yrGeP0OD0BDwrievum5k7tDZVc40Rfxk
        iXBStmWSTB/Lpz1jPZ/coEEry171oDSw5DLe8ueQlLyi0OpH6/lei0g2ZtLP/5Pl
        9xy+ukGJ4u9XVwFKrM+oZH6/JlVno0IwQDAPBgNVHRMBAf8EBTADAQH/MB0GA1Ud
        DgQWBBTCFdULq4IB5BgJC5a0MqXldGtMOjAOBgNVHQ8BAf8EBAMCAQYwCgYIKoZI
        zj0EAwMDaAAwZQIxANc9axQLqxov62GkglzsOaAEBYmNnwVXMHHjTWgEWBHteice
        IUMV8v5X76gY9UFnYgIwd5+bNtFCx7J0fvY4OEVck9CMI2fxmXmCwGmmvpX6EK1s
        qLtdT9D8qOVoO0A3S4Oe
        -----END CERTIFICATE-----
        # intermediate certificate
        -----BEGIN CERTIFICATE-----
        MIICbTCCAfOgAwIBAgIRAL2j+SL4fTKP5kr+Z4GeRLAwCgYIKoZIzj0EAwMwZzEz
        MDEGA1UEAwwqQXR0ZXN0RWRnZSBUZXN0IENBIEFwcCBBdHRlc3RhdGlvbiBSb290
        IENBMRswGQYDVQQKDBJBdHRlc3RFZGdlIFRlc3QgQ0ExEzARBgNVBAgMCkNhbGlm
        b3JuaWEwHhcNMjYxMTMwMTE0MjIyWhcNMzYxMTI4MTE0MjIyWjBkMTAwLgYDVQQD
        DCdBdHRlc3RFZGdlIFRlc3QgQ0EgQXBwIEF0dGVzdGF0aW9uIENBIDExGzAZBgNV
        BAoMEkF0dGVzdEVkZ2UgVGVzdCBDQTETMBEGA1UECAwKQ2FsaWZvcm5pYTB2MBAG
        ByqGSM49AgEGBSuBBAAiA2IABG4w9yqx6XY6eScxj4dXu1UGJeniB9IY2kR9qtPY
        p3miPSEl6rnU0S5FmE5fHOY+h/+T73Zoq0LtYFFRoYANnN+4Pifvd4SSblCRejOu
        2eUz0FSqQ5HGUcm3roOrd0FGZKNmMGQwEgYDVR0TAQH/BAgwBgEB/wIBADAfBgNV
        HSMEGDAWgBTCFdULq4IB5BgJC5a0MqXldGtMOjAdBgNVHQ4EFgQUcbhGNCXOR0Oc
        0t3BZdNsFRyIQIwwDgYDVR0PAQH/BAQDAgEGMAoGCCqGSM49BAMDA2gAMGUCMDg/
        lnelhE5vLysEi+zxAjlT1ESNyXVThQsDhQxp+j6X0Pq7TfZl/ZXQf636olEn6QIx
        AKEa5CJy5k0ovdnpqF+dLre9zoL7vVTSm1E0Y33KvKNNm8ZwArRU6NgyQRT9gaG1
        OA==
        -----END CERTIFICATE-----
        # intermediate key
        -----BEGIN PRIVATE KEY-----
        MIG2AgEAMBAGByqGSM49AgEGBSuBBAAiBIGeMIGbAgEBBDAw2qgaNhEdYnV9YI2w
        f30P1fjyhBnopfk3BRx07US9q/zzEx0X8rG0WcCWPCQwzzGhZANiAARuMPcqsel2
        OnknMY+HV7tVBiXp4gfSGNpEfarT2Kd5oj0hJeq51NEuRZhOXxzmPof/k+92aKtC
        7WBRUaGADZzfuD4n73eEkm5QkXozrtnlM9BUqkORxlHJt66Dq3dBRmQ=
        -----END PRIVATE KEY-----
        # root key
        -----BEGIN PRIVATE KEY-----
        MIG2AgEAMBAGByqGSM49AgEGBSuBBAAiBIGeMIGbAgEBBDDOJJJIrfbhlfC/9+PZ
        7mm22oNHDiXO0Cgz0xlO1MQhb1L9BMMY7BDPolyZ8NpHrhahZANiAATI2v/KsZ4/
        Q4PQEPCuJ6+6bmTu0NlVzjRF/GSJcFK2ZZJMH8unPWM9n9ygQSvLXvWgNLDkMt7y
        55CUvKLQ6kfr+V6LSDZm0s//k+X3HL66QYni71dXAUqsz6hkfr8mVWc=
        -----END PRIVATE KEY-----
        """
    static let devicePEM = """
        -----BEGIN PRIVATE KEY-----
        MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgxupRvzgV0ibhpVKJ
        S41yobuE51+8MWL/AppmjcyXagyhRANCAATq4fdKTOKjZNCOdIUGGQ8WZXVVgiuB
        yhH+gf1+EvzDOhLbl7SFyHVpQ9+1N7/3Fh6cUq47ELsF+KvvBzE8i9iE
        -----END PRIVATE KEY-----
        """
    static let tokenPEM = """
        -----BEGIN PRIVATE KEY-----
        MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgOUZ6UD9mgq42PUo9
        n/Avq8bzqvF2fPfxUoswypBQ+d2hRANCAAS1G2ZMW9TO582uKneLHXa0/t1FwSvP
        hbCxD+Fks3ODYxqqoY5quI+hNWwGKmysFFknMEP/Epf2+ZdRv9Vn7N8c
        -----END PRIVATE KEY-----
        """
}
