// attest-mad: POST /api/v1/heartbeat and GET /api/v1/org/usage (monthly-active-device
// accounting) as a pre-forked FastCGI pool.
import AttestService
#if canImport(Glibc)
import Glibc
#endif

exit(ServiceMain.run(.mad, arguments: Array(CommandLine.arguments.dropFirst())))
