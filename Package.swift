// swift-tools-version: 6.2
import PackageDescription

// Dependencies, each chosen for one job (they cost CI build minutes):
// - swift-log: the logging API every Swift server library speaks.
// - swift-metrics + swift-prometheus: metrics API and the Prometheus text exposition for /metrics.
// - swift-configuration: layered config (command line > HUBBUB_* environment > JSON file > defaults).
// - swift-argument-parser: subcommands and help for the load-test harness.
// - hdrhistogram-swift: latency percentiles in the load-test harness.
// - GRDB.swift: SQLite (WAL, migrations, savepoints) for the embedded durable store.
// - swift-service-lifecycle: ordered start and graceful stop of the server's services (ServiceGroup).
// - swift-protobuf: decodes GTFS-Realtime (the operators' protobuf alerts); its code is generated
//   once and committed (scripts/generate-protobuf.sh), so CI builds only the runtime library.
// - ZIPFoundation: reads GTFS feeds (zips), one entry at a time, streamed into the CSV reader.
// - postgres-nio: the store on PostgreSQL (`database.url`), for several nodes sharing one database.
// - async-http-client: polls operators' GTFS-Realtime URLs (conditional GETs, timeouts, redirects,
//   TLS); it brings swift-nio, which the PostgreSQL driver needs too.
// A feed's parse calls back into these targets' classes a million times; checking exclusive access
// to their properties at run time took an eighth of the parse. Their classes are used by one
// thread at a time (documented on each); debug builds still check at run time.
let uncheckedExclusivity: [SwiftSetting] = [.unsafeFlags(["-enforce-exclusivity=unchecked"], .when(configuration: .release))]

let package = Package(
    name: "hubbub",
    products: [
        .executable(name: "hubbub", targets: ["hubbub"]),
        .executable(name: "hubbub-load", targets: ["hubbub-load"]),
        .library(name: "HubbubClient", targets: ["HubbubClient"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        .package(url: "https://github.com/apple/swift-configuration", from: "1.4.0",
                 traits: ["JSON", "CommandLineArguments"]),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-system", from: "1.5.0"),
        .package(url: "https://github.com/HdrHistogram/hdrhistogram-swift", from: "0.2.0"),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-protobuf", from: "1.39.0"),
        .package(url: "https://github.com/weichsel/ZIPFoundation", from: "0.9.20"),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
    ],
    targets: [
        // C shims: nothing but these targets sees C headers.
        .systemLibrary(name: "COpenSSL", path: "Sources/Platform/COpenSSL", pkgConfig: "openssl",
                       providers: [.apt(["libssl-dev"])]),
        // (Not "CZlib": ZIPFoundation, for GTFS zips, declares a module of that name.)
        .systemLibrary(name: "CHubbubZlib", path: "Sources/Platform/CHubbubZlib", pkgConfig: "zlib",
                       providers: [.apt(["zlib1g-dev"])]),
        // libxml2's push parser, for feeds streamed as they arrive (no DOM, no DTD, no entities).
        .systemLibrary(name: "CLibXML2", path: "Sources/Platform/CLibXML2", pkgConfig: "libxml-2.0",
                       providers: [.apt(["libxml2-dev"])]),
        .target(name: "StreamingXML", dependencies: ["CLibXML2"], path: "Sources/Protocol/StreamingXML", swiftSettings: uncheckedExclusivity),
        // Tonight's events (seeds 000, 004, 002), pure: feed records and their checks.
        .target(name: "Tonight", path: "Sources/Domains/Tonight/Rules", swiftSettings: uncheckedExclusivity),
        .target(name: "CLinux", path: "Sources/Platform/CLinux"),
        // Public transport's standard feeds (GTFS), pure: a streaming CSV reader and the records.
        .target(name: "Transit", path: "Sources/Domains/Transit/Rules", swiftSettings: uncheckedExclusivity),
        // GTFS-Realtime alerts decoded (swift-protobuf, generated code committed) into Transit's alerts.
        .target(name: "TransitFeeds", dependencies: ["Transit", .product(name: "SwiftProtobuf", package: "swift-protobuf")],
                path: "Sources/Domains/Transit/Feeds", exclude: ["Proto"]),

        // The web client (pages, hubbub.js) as files the server sends: types, ETags, gzip, CSP.
        .target(name: "WebClient", dependencies: ["CHubbubZlib", "HubbubCrypto"], path: "Sources/Server/WebClient", resources: [.copy("Public")]),

        // Hashes, HMAC, KDF and randomness from OpenSSL's libcrypto.
        .target(name: "HubbubCrypto", dependencies: ["COpenSSL"], path: "Sources/Platform/HubbubCrypto"),

        // Pure, I/O-free WebSocket protocol: HTTP upgrade, frames, UTF-8, close, permessage-deflate.
        .target(name: "WebSocket", dependencies: ["CHubbubZlib", "HubbubCrypto"], path: "Sources/Protocol/WebSocket"),

        // The only code that touches file descriptors: sockets, epoll loops, timers, TLS, queues.
        .target(name: "Transport", dependencies: [
            "CLinux", "COpenSSL", "WebSocket", "HubbubCrypto",
            .product(name: "Logging", package: "swift-log"),
            .product(name: "Metrics", package: "swift-metrics"),
        ], path: "Sources/Core/Transport"),

        // The durable store: SQLite in WAL mode (embedded) or PostgreSQL (several nodes), migrations, group commit.
        .target(name: "Storage", dependencies: [
            .product(name: "GRDB", package: "GRDB.swift"),
            // SQLite's C API, for binding a feed's rows without GRDB's per-value boxing (an ingest's hot loop).
            .product(name: "GRDBSQLite", package: "GRDB.swift"),
            .product(name: "PostgresNIO", package: "postgres-nio"),
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "Logging", package: "swift-log"),
            .product(name: "Metrics", package: "swift-metrics"),
        ], path: "Sources/Core/Storage"),

        // Rooms with sequence numbers, epochs and recovery history; the JSON envelope of protocol.md.
        .target(name: "Realtime", dependencies: ["WebSocket"], path: "Sources/Protocol/Realtime"),

        // Rooms made durable: each push written in the transaction of the change it reports (the
        // room log, on either engine), and delivered to this node's subscribers in seq order from
        // the commit, other nodes' notifications or catch-up reads.
        .target(name: "RoomLog", dependencies: [
            "Realtime", "Storage", "WebSocket", "HubbubCrypto",
            .product(name: "Logging", package: "swift-log"),
            .product(name: "Metrics", package: "swift-metrics"),
        ], path: "Sources/Core/RoomLog"),

        // Several nodes on one PostgreSQL: notifications of other nodes' commits into the room feed,
        // leases on rooms, forwarding ops to a room's owner.
        .target(name: "Cluster", dependencies: [
            "RoomLog", "Storage", "Realtime", "WebSocket", "DomainSeam", "HubbubClient", "HubbubCrypto", "Transport",
            .product(name: "Logging", package: "swift-log"),
            .product(name: "Metrics", package: "swift-metrics"),
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
        ], path: "Sources/Core/Cluster"),

        // The seam every domain plugs into: ops, room directories, settings, migrations, services.
        .target(name: "DomainSeam", dependencies: [
            "Realtime", "Storage", "WebSocket", "RoomLog",
            .product(name: "Logging", package: "swift-log"),
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
        ], path: "Sources/Core/DomainSeam"),

        // Accounts: sign-up, log-in, signed tokens, profiles, deletion.
        .target(name: "Accounts", dependencies: [
            "Realtime", "Storage", "HubbubCrypto", "DomainSeam",
        ], path: "Sources/Domains/Accounts/Service"),

        // The social jukebox's rules, pure: ordering, votes, requests, limits, fair mode.
        .target(name: "Venues", path: "Sources/Domains/Venues/Rules"),
        // Route corridors' rules, pure: geometry on the sphere, canonical ids, the spatial index.
        .target(name: "Routes", dependencies: ["HubbubCrypto"], path: "Sources/Domains/Routes/Rules"),
        // Venues live: one actor per venue, its room, its durable state.
        .target(name: "VenueService", dependencies: [
            "Venues", "Realtime", "Storage", "WebSocket", "DomainSeam", "HubbubCrypto", "RoomLog",
            .product(name: "Logging", package: "swift-log"),
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
        ], path: "Sources/Domains/Venues/Service"),

        // Route corridors live: the intel stream (items, likes, expiry), durable.
        .target(name: "RouteService", dependencies: [
            "Routes", "Realtime", "Storage", "DomainSeam", "RoomLog", "WebSocket", "HubbubCrypto",
            .product(name: "Logging", package: "swift-log"),
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
        ], path: "Sources/Domains/Routes/Service"),

        // Public transport live: GTFS feeds (zips) stored and swapped whole, GTFS-Realtime alerts
        // (posted or polled) turned into provider intel items on the routes domain's stream.
        .target(name: "TransitService", dependencies: [
            "Transit", "TransitFeeds", "Routes", "RouteService", "Realtime", "Storage", "DomainSeam", "CHubbubZlib",
            .product(name: "ZIPFoundation", package: "ZIPFoundation"),
            .product(name: "AsyncHTTPClient", package: "async-http-client"),
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "NIOHTTP1", package: "swift-nio"),
            .product(name: "Logging", package: "swift-log"),
            .product(name: "Metrics", package: "swift-metrics"),
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
        ], path: "Sources/Domains/Transit/Service"),

        // Tonight's events live: the feeds' durable catalog, an actor per event-goer with their
        // durable user: room, event: rooms, the clock of suggestions and reminders.
        .target(name: "TonightService", dependencies: [
            "Tonight", "StreamingXML", "Realtime", "Storage", "DomainSeam", "RoomLog", "WebSocket", "HubbubCrypto",
            .product(name: "Logging", package: "swift-log"),
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
        ], path: "Sources/Domains/Tonight/Service"),

        // A WebSocket client (ws/wss, masking, compression) over the same transport.
        .target(name: "HubbubClient", dependencies: ["Transport", "WebSocket", "Realtime"], path: "Sources/Clients/HubbubClient"),

        // Wiring: configuration, endpoints, metrics exposition.
        .target(name: "HubbubServer", dependencies: [
            "Transport", "WebSocket", "Realtime", "Storage", "RoomLog", "Cluster", "Accounts", "HubbubCrypto", "VenueService", "RouteService", "TransitService", "TonightService", "DomainSeam", "WebClient",
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            .product(name: "UnixSignals", package: "swift-service-lifecycle"),
            .product(name: "Logging", package: "swift-log"),
            .product(name: "Metrics", package: "swift-metrics"),
            .product(name: "Prometheus", package: "swift-prometheus"),
            .product(name: "Configuration", package: "swift-configuration"),
            .product(name: "SystemPackage", package: "swift-system"),
        ], path: "Sources/Server/HubbubServer"),
        .executableTarget(name: "hubbub", dependencies: [
            "HubbubServer",
            .product(name: "Logging", package: "swift-log"),
        ], path: "Sources/Server/hubbub"),

        // The load-test harness's logic: scenarios, rate schedules, push validation, reports (and
        // /proc sampling); no sockets, so all of it is unit-tested.
        .target(name: "LoadHarness", dependencies: [
            "Realtime", "Routes", "Venues",
            .product(name: "Histogram", package: "hdrhistogram-swift"),
        ], path: "loadtest/Sources/LoadHarness"),
        .executableTarget(name: "hubbub-load", dependencies: [
            "LoadHarness", "HubbubClient", "Transport", "WebSocket", "CLinux", "Realtime", "Accounts", "Routes", "StreamingXML", "Tonight", "TonightService", "Venues",
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
            .product(name: "Histogram", package: "hdrhistogram-swift"),
        ], path: "loadtest/Sources/hubbub-load"),

        // Helpers shared by the test targets: an in-process server, a raw socket for bad input,
        // `eventually`, a temporary store, one in-process domain harness.
        .target(name: "HubbubTestSupport", dependencies: [
            "HubbubServer", "HubbubClient", "Transport", "WebSocket", "Realtime", "DomainSeam", "Accounts", "Venues", "Storage", "RoomLog",
            .product(name: "GRDB", package: "GRDB.swift"),
            .product(name: "Logging", package: "swift-log"),
            .product(name: "ZIPFoundation", package: "ZIPFoundation"),
        ], path: "Tests/Support/TestSupport"),
        .testTarget(name: "WebSocketTests", dependencies: ["WebSocket"], path: "Tests/Protocol/WebSocketTests"),
        .testTarget(name: "StreamingXMLTests", dependencies: ["StreamingXML"], path: "Tests/Protocol/StreamingXMLTests"),
        .testTarget(name: "WebClientTests", dependencies: ["WebClient"], path: "Tests/Server/WebClientTests"),
        .testTarget(name: "TransitTests", dependencies: ["Transit", "TransitFeeds", "SeededRandom"], path: "Tests/Domains/Transit/RulesTests"),
        .testTarget(name: "TransitServiceTests", dependencies: [
            "TransitService", "TransitFeeds", "RouteService", "DomainSeam", "RoomLog", "Realtime", "Storage", "WebSocket", "HubbubTestSupport",
            .product(name: "GRDB", package: "GRDB.swift"),
            .product(name: "Logging", package: "swift-log"),
            .product(name: "SwiftProtobuf", package: "swift-protobuf"),
            .product(name: "ZIPFoundation", package: "ZIPFoundation"),
        ], path: "Tests/Domains/Transit/ServiceTests"),
        .testTarget(name: "TonightTests", dependencies: ["Tonight", "TonightService", "StreamingXML", "SeededRandom"], path: "Tests/Domains/Tonight/RulesTests"),
        // A seeded random generator for the pure test targets (which must not depend on the server).
        .target(name: "SeededRandom", path: "Tests/Support/SeededRandom"),
        .testTarget(name: "VenuesTests", dependencies: ["Venues", "SeededRandom"], path: "Tests/Domains/Venues/RulesTests"),
        .testTarget(name: "RoutesTests", dependencies: ["Routes", "SeededRandom"], path: "Tests/Domains/Routes/RulesTests"),
        .testTarget(name: "RouteServiceTests", dependencies: ["RouteService", "Routes", "Storage", "Realtime", "RoomLog", "HubbubTestSupport",
                                                              .product(name: "GRDB", package: "GRDB.swift")], path: "Tests/Domains/Routes/ServiceTests"),
        .testTarget(name: "VenueServiceTests", dependencies: ["VenueService", "Venues", "DomainSeam", "Realtime", "Storage", "WebSocket", "RoomLog",
                                                             "HubbubTestSupport"], path: "Tests/Domains/Venues/ServiceTests"),
        .testTarget(name: "LoadHarnessTests", dependencies: ["LoadHarness", "Realtime", "Routes"], path: "Tests/LoadHarnessTests"),
        .testTarget(name: "RealtimeTests", dependencies: ["Realtime", "WebSocket"], path: "Tests/Protocol/RealtimeTests"),
        .testTarget(name: "RoomLogTests", dependencies: ["RoomLog", "Realtime", "Storage", "WebSocket", "HubbubTestSupport"], path: "Tests/Core/RoomLogTests"),
        .testTarget(name: "AccountsTests", dependencies: ["Accounts", "Storage", "HubbubTestSupport", .product(name: "GRDB", package: "GRDB.swift")], path: "Tests/Domains/Accounts/ServiceTests"),
        .testTarget(name: "StorageTests", dependencies: ["Storage", "HubbubTestSupport", "SeededRandom", .product(name: "GRDB", package: "GRDB.swift")], path: "Tests/Core/StorageTests"),
        .testTarget(name: "TransportTests", dependencies: ["Transport", "HubbubClient", "WebSocket", "HubbubTestSupport"], path: "Tests/Core/TransportTests"),
        // Three nodes on one PostgreSQL (scripts/test-postgres.sh runs them; the SQLite pass skips them).
        .testTarget(name: "ClusterTests", dependencies: ["HubbubServer", "HubbubTestSupport", "Realtime", "Accounts", "RouteService", "Routes", "TonightService", "DomainSeam",
                                                         "TransitFeeds", .product(name: "SwiftProtobuf", package: "swift-protobuf")], path: "Tests/Core/ClusterTests"),
        .testTarget(name: "HubbubServerTests", dependencies: ["HubbubServer", "HubbubClient", "Transport", "WebSocket", "Realtime",
                                                              "HubbubTestSupport", "DomainSeam", "Accounts", "VenueService", "RouteService", "TonightService", "Storage", "RoomLog",
                                                              "TransitFeeds", .product(name: "SwiftProtobuf", package: "swift-protobuf"),
                                                              .product(name: "GRDB", package: "GRDB.swift"),
                                                              .product(name: "Logging", package: "swift-log"),
                                                              .product(name: "ServiceLifecycle", package: "swift-service-lifecycle")], path: "Tests/Server/HubbubServerTests"),
    ]
)
