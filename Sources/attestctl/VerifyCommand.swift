/// `attestctl verify`: offline verification of an attestation or assertion (not yet built).
let verifyCommand = Command(
    name: "verify",
    summary: "verify an attestation or assertion offline from a JSON file",
    usage: "usage: attestctl verify attestation|assertion --input FILE [--json]",
    run: { _ in 1 })
