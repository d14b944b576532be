import Foundation

/// Databases for the suite run against PostgreSQL (`HB_TEST_POSTGRES=postgres://user@host:port`,
/// set by scripts/test-postgres.sh): one per server data directory, made with `psql`.
public enum TestPostgres {
    /// The URL of the database for `dataDir`, created if it does not exist yet.
    public static func database(for dataDir: String, in cluster: String) throws -> String {
        let name = "t_" + String(dataDir.lowercased().unicodeScalars.filter { $0.properties.isAlphabetic || $0.properties.numericType != nil }
            .map(Character.init).suffix(40))
        guard let url = URLComponents(string: cluster), let host = url.host else { throw TestError("HB_TEST_POSTGRES: \(cluster)") }
        let psql = Process()
        psql.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        psql.arguments = ["psql", "-h", host, "-p", "\(url.port ?? 5432)", "-U", url.user ?? "postgres", "-d", "postgres", "-q",
                          "-c", "CREATE DATABASE \(name)"]
        psql.standardOutput = FileHandle.nullDevice
        psql.standardError = FileHandle.nullDevice // "already exists" on a restart
        try psql.run()
        psql.waitUntilExit()
        return cluster + "/" + name
    }
}

extension TestPostgres {
    /// The first column of `sql`'s rows, run with psql against database `url`.
    public static func query(_ url: String, _ sql: String) throws -> [String] {
        guard let parts = URLComponents(string: url), let host = parts.host else { throw TestError("not a database URL: \(url)") }
        let psql = Process()
        psql.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        psql.arguments = ["psql", "-h", host, "-p", "\(parts.port ?? 5432)", "-U", parts.user ?? "postgres",
                          "-d", String(parts.path.dropFirst()), "-At", "-c", sql]
        let out = Pipe()
        psql.standardOutput = out
        try psql.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        psql.waitUntilExit()
        guard psql.terminationStatus == 0 else { throw TestError("psql failed on \(sql)") }
        return String(decoding: data, as: UTF8.self).split(separator: "\n").map(String.init)
    }
}
