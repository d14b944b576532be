import ArgumentParser

/// hubbub-load: the load-test harness. Every simulated client is a real WebSocket client.
@main
struct HubbubLoad: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "hubbub-load",
        abstract: "Load tests for Hubbub and its peers.",
        subcommands: [RunCommand.self, EchoCommand.self, IdleCommand.self, MeasureCommand.self, QueryCommand.self, HostileCommand.self])
}
