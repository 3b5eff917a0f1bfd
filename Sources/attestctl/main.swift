// attestctl: the AttestEdge admin CLI. Each subcommand lives in its own file as a `Command`.
import AttestOperations
import CLISupport

#if canImport(Glibc)
import Glibc
#endif

let commands: [Command] = [
    initCommand,
    orgCommand,
    appCommand,
    claimsCommand,
    flagsCommand,
    feedbackCommand,
    ticketsCommand,
    notesCommand,
    subjectCommand,
    apiKeyCommand,
    consoleCommand,
    auditCommand,
    webhooksCommand,
    usageCommand,
    statusCommand,
    configCommand,
    keysCommand,
    appleCommand,
    receiptsCommand,
    deviceCommand,
    storeCommand,
    serveCommand,
    reloadCommand,
    backupCommand,
    restoreCommand,
    doctorCommand,
    siteCommand,
    verifyCommand,
]

/// Commands that write into the data directory: run by root on a directory another user owns,
/// they act as that user (`actAsDataOwner`).
let dataWritingCommands: Set<String> = ["init", "org", "app", "config", "keys", "device", "store", "webhooks",
                                        "restore", "apikey", "subject", "claims", "usage", "apple",
                                        "flags", "notes", "console", "feedback", "tickets"]

let arguments = Array(CommandLine.arguments.dropFirst())
forgetRootsPostgresDefaults(dataPath(arguments))
AppleKeyFile.readBeforeSwitching(arguments)
// The audit log names who ran a change: read before taking on the data owner's uid.
_ = invokingUser
if let command = arguments.first, dataWritingCommands.contains(command) {
    actAsDataOwner(dataPath(arguments), program: "attestctl")
}
exit(runCommand(arguments, commands: commands, program: "attestctl"))
