// attest-device: a software App Attest device for tests, demos and load generation.
import CLISupport
#if canImport(Glibc)
import Glibc
#endif

exit(DeviceCLI.main(Array(CommandLine.arguments.dropFirst())))
