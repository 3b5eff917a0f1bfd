// attestctl: the AttestEdge admin CLI. Each subcommand lives in its own file as a `Command`.
import CLISupport

#if canImport(Glibc)
import Glibc
#endif

let commands: [Command] = [
    initCommand,
    orgCommand,
    appCommand,
    apiKeyCommand,
    usageCommand,
    configCommand,
    keysCommand,
    deviceCommand,
    storeCommand,
    serveCommand,
    verifyCommand,
    benchCommand,
]

exit(runCommand(Array(CommandLine.arguments.dropFirst()), commands: commands, program: "attestctl"))
