// attest-monitor: GET /healthz (load balancers) and GET /metrics (Prometheus, on the metrics
// listener) as a pre-forked FastCGI pool.
import AttestService
#if canImport(Glibc)
import Glibc
#endif

exit(ServiceMain.run(.monitor, arguments: Array(CommandLine.arguments.dropFirst())))
