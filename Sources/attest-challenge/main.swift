// attest-challenge: GET /api/v1/attestation/challenge as a pre-forked FastCGI pool.
import AttestService
#if canImport(Glibc)
import Glibc
#endif

exit(ServiceMain.run(.challenge, arguments: Array(CommandLine.arguments.dropFirst())))
