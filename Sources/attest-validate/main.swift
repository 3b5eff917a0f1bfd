// attest-validate: POST /api/v1/attestation/validate as a pre-forked FastCGI pool.
import AttestService
#if canImport(Glibc)
import Glibc
#endif

exit(ServiceMain.run(.validate, arguments: Array(CommandLine.arguments.dropFirst())))
