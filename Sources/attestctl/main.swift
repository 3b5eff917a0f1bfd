// attestctl: the AttestEdge admin CLI. Each subcommand lives in its own file as a `Command`.
import CLISupport

#if canImport(Glibc)
import Glibc
#endif

let commands: [Command] = [
    initCommand,
    orgCommand,
    appCommand,
    claimsCommand,
    subjectCommand,
    apiKeyCommand,
    webhooksCommand,
    usageCommand,
    configCommand,
    keysCommand,
    deviceCommand,
    storeCommand,
    serveCommand,
    reloadCommand,
    backupCommand,
    restoreCommand,
    doctorCommand,
    siteCommand,
    verifyCommand,
    benchCommand,
]

let arguments = Array(CommandLine.arguments.dropFirst())
forgetRootsPostgresDefaults(arguments)
actAsDataOwner(arguments)
exit(runCommand(arguments, commands: commands, program: "attestctl"))
