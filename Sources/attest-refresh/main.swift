// attest-refresh: POST /api/v1/attestation/refresh as a pre-forked FastCGI pool.
import AttestService
#if canImport(Glibc)
import Glibc
#endif

exit(ServiceMain.run(.refresh, arguments: Array(CommandLine.arguments.dropFirst())))
