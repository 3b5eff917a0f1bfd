// attest-webhooks: the webhook management API (/api/v1/org/webhooks) as a pre-forked FastCGI
// pool, or with `deliver` the delivery worker (outbox → HTTPS), its own process.
import AttestService
#if canImport(Glibc)
import Glibc
#endif

let argv = Array(CommandLine.arguments.dropFirst())
if argv.first == "deliver" {
    exit(Deliver.run(Array(argv.dropFirst())))
}
exit(ServiceMain.run(.webhooks, arguments: argv))
