// strata: the command-line tool. One file per command; this one is the root.

import ArgumentParser

@main
struct StrataCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "strata",
        abstract: "Inspect and maintain Strata stores.",
        discussion: "Exit codes: 0 ok, 1 the store is damaged or the command failed, 2 bad usage.",
        subcommands: [DemoCommand.self])
}
