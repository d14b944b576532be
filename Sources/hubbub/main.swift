import Dispatch
import Foundation
import HubbubServer
import Logging

// hubbub: the real-time server. Settings come from the command line, HUBBUB_* environment
// variables, a JSON file (--config FILE) and the defaults, in that order (see README).

let arguments = CommandLine.arguments
if arguments.contains("--help") || arguments.contains("-h") {
    print("""
    usage: hubbub [--port N] [--tls-port N --tls-cert PEM --tls-key PEM] [--data-dir DIR] [--config FILE] [--bench]
                  [--any-config-key VALUE ...]

      --port N          plain ws:// and http:// port (default 8080; 0 picks a free one)
      --tls-port N      wss:// port (default off); needs --tls-cert and --tls-key (PEM files)
      --data-dir DIR    where durable data lives (default ./data)
      --config FILE     JSON settings (config/hubbub.json lists every key with its default)
      --bench           also serve /broadcast for benchmarks
      --no-echo         do not serve /echo (same as --echo false)

    Every key of config/hubbub.json is also an option (limits.maxMessageBytes → --limits-max-message-bytes)
    and an environment variable (HUBBUB_LIMITS_MAX_MESSAGE_BYTES). Command line beats environment beats file.
    """)
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
