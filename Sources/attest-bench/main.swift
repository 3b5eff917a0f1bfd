// attest-bench: the in-process benchmarks (`Bench`). It links the test PKI (software devices,
// `AttestTesting`), which the admin CLI does not need; nothing installs it.
import AttestOperations
import CLISupport

#if canImport(Glibc)
import Glibc
#endif

let arguments = Array(CommandLine.arguments.dropFirst())
// `usage` and `store load` write into a data directory: as root on one another user owns, act
// as that user, as attestctl's data-writing commands do.
forgetRootsPostgresDefaults(dataPath(arguments))
actAsDataOwner(dataPath(arguments), program: "attest-bench")
exit(Bench.main(arguments))
