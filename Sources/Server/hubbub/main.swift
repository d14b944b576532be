import Dispatch
import Foundation
import HubbubServer
import Logging

// hubbub: the real-time server. Settings come from the command line, HUBBUB_* environment
// variables, a JSON file (--config FILE) and the defaults, in that order (see README).

let arguments = CommandLine.arguments
if arguments.contains("--help") || arguments.contains("-h") {
    print(HubbubConfiguration.helpText())
    exit(0)
}

var effectiveArguments = arguments.map { $0 == "--no-echo" ? "--echo=false" : $0 }
let configuration: HubbubConfiguration
do {
    configuration = try await HubbubConfiguration.load(arguments: effectiveArguments, environment: ProcessInfo.processInfo.environment)
} catch {
    FileHandle.standardError.write(Data("hubbub: \(error)\n".utf8))
    exit(2)
}

LoggingSystem.bootstrap { label in
    var handler = StreamLogHandler.standardError(label: label)
    handler.logLevel = Logger.Level(rawValue: configuration.logLevel) ?? .info
    return handler
}
let logger = Logger(label: "hubbub")

signal(SIGPIPE, SIG_IGN)

do {
    try FileManager.default.createDirectory(atPath: configuration.dataDir, withIntermediateDirectories: true)
} catch {
    logger.critical("cannot create the data directory", metadata: ["dataDir": "\(configuration.dataDir)", "error": "\(error)"])
    exit(1)
}

let server: HubbubServer
do {
    server = try HubbubServer(configuration: configuration, logger: logger, stopsOnSignals: true)
} catch {
    logger.critical("cannot start", metadata: ["error": "\(error)"])
    exit(1)
}

// Runs until SIGTERM or SIGINT, then stops gracefully: the transport drains (1001 `restart`),
// the domains' services stop, the store commits and closes.
do {
    try await server.run()
} catch {
    logger.critical("stopped on a failure", metadata: ["error": "\(error)"])
    exit(1)
}
exit(0)
