// attest-feedback: feature requests (/api/v1/feedback/features…) and support tickets
// (/api/v1/support/tickets…), as a pre-forked FastCGI pool.
import AttestService
#if canImport(Glibc)
import Glibc
#endif

exit(ServiceMain.run(.feedback, arguments: Array(CommandLine.arguments.dropFirst())))
