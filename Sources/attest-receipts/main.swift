// attest-receipts: redeems App Attest receipts with Apple (ReceiptRedeemer), its own process,
// run by `attestctl serve` and by attestedge-receipts.service.
#if canImport(Glibc)
import Glibc
#endif

exit(Receipts.run(Array(CommandLine.arguments.dropFirst())))
