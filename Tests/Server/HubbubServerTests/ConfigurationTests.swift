import Foundation
import Accounts
import HubbubServer
import Realtime
import XCTest

final class ConfigurationTests: XCTestCase {
    private var repoRoot: String {
        // Tests/Server/HubbubServerTests/ConfigurationTests.swift → the repository.
        URL(fileURLWithPath: #filePath).appendingPathComponent("../../../..").standardized.path
    }

    func testShippedConfigFileEqualsTheBuiltInDefaults() async throws {
        let loaded = try await HubbubConfiguration.load(arguments: ["hubbub", "--config", repoRoot + "/config/hubbub.json"],
                                                        environment: [:])
        XCTAssertEqual(loaded, HubbubConfiguration())
        // Every domain's settings are in the file too, with their defaults.
        let file = try JSONParser.parse(Array(try Data(contentsOf: URL(fileURLWithPath: repoRoot + "/config/hubbub.json"))))
        for setting in HubbubServer.standardDomains.flatMap({ $0.settings }) {
            var value: JSON? = file
            for part in setting.key.split(separator: ".") { value = value?[String(part)] }
            XCTAssertNotNil(value, "config/hubbub.json lacks \(setting.key)")
            let message = "config/hubbub.json: \(setting.key)"
            switch setting.defaultSetting {
            case .string(let s): XCTAssertEqual(value, .string(s), message)
            case .int(let i): XCTAssertEqual(value, .int(i), message)
            case .bool(let b): XCTAssertEqual(value, .bool(b), message)
            case .double(let d):
                // JSON has one kind of number: 2.0 may be read back as 2.
                switch value {
                case .double(let x)?: XCTAssertEqual(x, d, message)
                case .int(let x)?: XCTAssertEqual(Double(x), d, message)
                default: XCTFail("\(message) is not a number")
                }
            }
        }
    }

    /// `--help` lists every domain setting with its default and meaning, and never a secret's value.
    func testHelpListsTheSettingsAndPrintsNoSecret() async throws {
        let help = HubbubConfiguration.helpText()
        XCTAssertTrue(help.contains("--auth-free-failures (default 5)"), help)
        XCTAssertTrue(help.contains("--auth-token-secret (secret, never printed)"), help)
        XCTAssertTrue(help.contains("--api-key"))
        let configured = try await HubbubConfiguration.load(arguments: ["hubbub", "--api-key", "k-123456", "--auth-token-secret", "s-654321"],
                                                            environment: [:])
        let summary = "\(configured.summary())"
        XCTAssertFalse(summary.contains("k-123456") || summary.contains("s-654321"), summary)
        XCTAssertEqual(configured.summary()["auth.tokenSecret"], "set (redacted)")
        XCTAssertEqual(configured.summary()["api.key"], "set (redacted)")
    }

    /// Every key, the core's and each domain's, is in `--help` with its default and one line of help.
    func testHelpListsEveryKeyWithItsDefaultAndMeaning() {
        let help = HubbubConfiguration.helpText()
        let settings = HubbubConfiguration.coreSettings.map(\.setting) + HubbubServer.standardDomains.flatMap { $0.settings }
        XCTAssertEqual(Set(settings.map(\.key)).count, settings.count, "no key is declared twice")
        for setting in settings {
            XCTAssertFalse(setting.help.isEmpty, "\(setting.key) has no help")
            let line = "--\(HubbubConfiguration.cliName(setting.key)) ("
            guard let at = help.range(of: line) else { XCTFail("--help lacks \(setting.key)"); continue }
            let rest = help[at.upperBound...].prefix { $0 != ")" }
            if !setting.isSecret, case .int(let d) = setting.defaultSetting { XCTAssertEqual(rest, "default \(d)", setting.key) }
            XCTAssertTrue(help[at.upperBound...].contains(setting.help), "\(setting.key)'s help is printed")
        }
        for group in ["\nserver:\n", "\nlimits:\n", "\ntimeouts:\n", "\nvenues:\n", "\nauth:\n"] {
            XCTAssertEqual(help.components(separatedBy: group).count, 2, "one group \(group)")
        }
    }

    /// Each integer key of the core refuses a value just past either end of its range, naming the key,
    /// and takes its ends.
    func testEveryCoreKeyChecksItsRange() async throws {
        for core in HubbubConfiguration.coreSettings {
            guard case .int(let d) = core.setting.defaultSetting else { continue }
            let key = core.setting.key, flag = "--" + HubbubConfiguration.cliName(key)
            for bad in [Int.min, Int.max] where core.setting.check(.int(bad)) != nil {
                do {
                    _ = try await HubbubConfiguration.load(arguments: ["hubbub", flag, "\(bad)"], environment: [:])
                    XCTFail("\(key) took \(bad)")
                } catch let e as ConfigurationError {
                    XCTAssertEqual(e.key, key)
                }
            }
            XCTAssertNil(core.setting.check(.int(d)), "\(key)'s default is in its range")
        }
        let twice = try await HubbubConfiguration.load(arguments: ["hubbub", "--limits-max-headers", "4", "--timeouts-tick-ms", "10000"],
                                                       environment: [:])
        XCTAssertEqual(twice.limits.maxHeaders, 4)
        XCTAssertEqual(twice.timeouts.tickMs, 10_000)
    }

    func testCommandLineBeatsEnvironmentBeatsFile() async throws {
        let file = NSTemporaryDirectory() + "hubbub-config-\(UUID().uuidString).json"
        try #"{"port": 1111, "tls": {"port": 2222, "cert": "c.pem", "key": "k.pem"}, "limits": {"maxHeaders": 10}}"#
            .write(toFile: file, atomically: true, encoding: .utf8)
        let c = try await HubbubConfiguration.load(
            arguments: ["hubbub", "--config", file, "--port", "3333", "--data-dir", "/tmp/x"],
            environment: ["HUBBUB_PORT": "4444", "HUBBUB_TLS_PORT": "5555", "HUBBUB_LIMITS_MAX_MESSAGE_BYTES": "4096"])
        XCTAssertEqual(c.port, 3333)                // command line
        XCTAssertEqual(c.tls.port, 5555)            // environment over file
        XCTAssertEqual(c.tls.cert, "c.pem")         // file
        XCTAssertEqual(c.limits.maxHeaders, 10)     // file
        XCTAssertEqual(c.limits.maxMessageBytes, 4096)
        XCTAssertEqual(c.dataDir, "/tmp/x")
    }

    func testBadValuesAreRefusedNamingTheKey() async throws {
        do {
            _ = try await HubbubConfiguration.load(arguments: ["hubbub", "--port", "eighty"], environment: [:])
            XCTFail("a non-integer port must be refused")
        } catch let e as ConfigurationError {
            XCTAssertEqual(e.key, "port")
        }
        do {
            _ = try await HubbubConfiguration.load(arguments: ["hubbub"], environment: ["HUBBUB_DEFLATE_SERVER_MAX_WINDOW_BITS": "8"])
            XCTFail("8 window bits must be refused")
        } catch let e as ConfigurationError {
            XCTAssertEqual(e.key, "deflate.serverMaxWindowBits")
        }
        do {
            _ = try await HubbubConfiguration.load(arguments: ["hubbub", "--limits-max-headrs", "10"], environment: [:])
            XCTFail("a misspelt option must be refused")
        } catch let e as ConfigurationError {
            XCTAssertEqual(e.key, "limits-max-headrs")
        }
        let spelled = try await HubbubConfiguration.load(arguments: ["hubbub", "--auth-kdf-iterations", "5", "--limits-max-connections-per-ip=7",
                                                                     "--rate-limits-write-per-second", "2.5"], environment: [:])
        XCTAssertEqual(spelled.domainSettings[AccountsDomain.kdfIterations], 5)
        XCTAssertEqual(spelled.limits.maxConnectionsPerIp, 7)
        XCTAssertEqual(spelled.rateLimits.writePerSecond, 2.5)
        do {
            _ = try await HubbubConfiguration.load(arguments: ["hubbub", "--tls-port", "8443"], environment: [:])
            XCTFail("a TLS port without certificate must be refused")
        } catch let e as ConfigurationError {
            XCTAssertEqual(e.key, "tls.port")
        }
    }
    /// A misspelt setting stops the start, named with the nearest known one, wherever it was written.
    func testUnknownKeysVariablesAndOptionsAreRefusedWithTheNearestKnownOne() async throws {
        func refusal(_ arguments: [String], _ environment: [String: String] = [:]) async -> ConfigurationError? {
            do {
                _ = try await HubbubConfiguration.load(arguments: ["hubbub"] + arguments, environment: environment)
                return nil
            } catch let e as ConfigurationError { return e } catch { return nil }
        }
        let file = NSTemporaryDirectory() + "hubbub-config-\(UUID().uuidString).json"
        try #"{"limits": {"maxConnectionsPerIpp": 5}}"#.write(toFile: file, atomically: true, encoding: .utf8)
        let inFile = await refusal(["--config", file])
        XCTAssertEqual(inFile?.key, "limits.maxConnectionsPerIpp")
        XCTAssertTrue(inFile?.problem.contains("did you mean limits.maxConnectionsPerIp?") ?? false, "\(String(describing: inFile))")

        try #"{"database": {"urll": "postgres://x"}, "auth": {"kdfIterations": 5}}"#.write(toFile: file, atomically: true, encoding: .utf8)
        let nested = await refusal(["--config", file])
        XCTAssertEqual(nested?.key, "database.urll", "a key under a known one is checked too")
        XCTAssertTrue(nested?.problem.contains("did you mean database.url?") ?? false, "\(String(describing: nested))")

        let variable = await refusal([], ["HUBBUB_LIMITS_MAX_CONECTIONS_PER_IP": "5", "PATH": "/bin", "HUBBUBX": "1"])
        XCTAssertEqual(variable?.key, "HUBBUB_LIMITS_MAX_CONECTIONS_PER_IP")
        XCTAssertTrue(variable?.problem.contains("did you mean HUBBUB_LIMITS_MAX_CONNECTIONS_PER_IP?") ?? false, "\(String(describing: variable))")

        let option = await refusal(["--limits-max-conections-per-ip", "5"])
        XCTAssertTrue(option?.problem.contains("did you mean --limits-max-connections-per-ip?") ?? false, "\(String(describing: option))")

        // Every setting's own spelling is taken: the shipped file, and each key as a variable.
        let known = try await HubbubConfiguration.load(arguments: ["hubbub", "--config", repoRoot + "/config/hubbub.json"],
                                                       environment: ["HUBBUB_API_KEY": "k", "HUBBUB_AUTH_KDF_MAX_QUEUED": "3",
                                                                     "HUBBUB_LIMITS_MAX_JSON_VALUES": "7", "HUBBUB_CONFIG": repoRoot + "/config/hubbub.json"])
        XCTAssertEqual(known.limits.maxJsonValues, 7)
        XCTAssertEqual(known.domainSettings[AccountsDomain.kdfMaxQueued], 3)
    }
}
