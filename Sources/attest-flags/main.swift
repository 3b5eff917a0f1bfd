// attest-flags: feature flags (GET /api/v1/flags), the flag stream's auth subrequest, What's New
// and the feature-flag org API, as a pre-forked FastCGI pool. nginx's nchan serves the stream.
import AttestService
#if canImport(Glibc)
import Glibc
#endif

exit(ServiceMain.run(.flags, arguments: Array(CommandLine.arguments.dropFirst())))
