/// `attestctl bench`: verification throughput next to raw OpenSSL rates (not yet built).
let benchCommand = Command(
    name: "bench",
    summary: "measure verification rates against raw OpenSSL ECDSA",
    usage: "usage: attestctl bench verify",
    run: { _ in 1 })
