// attest-org: the organization API the operator console uses (/api/v1/org/devices…,
// /api/v1/org/apps…, /api/v1/org/api-keys…), as a pre-forked FastCGI pool.
import AttestService
#if canImport(Glibc)
import Glibc
#endif

exit(ServiceMain.run(.org, arguments: Array(CommandLine.arguments.dropFirst())))
