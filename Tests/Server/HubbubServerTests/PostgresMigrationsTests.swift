import DomainSeam
import Foundation
import HubbubServer
import Storage
import XCTest

/// Every domain's migrations, as written for SQLite, translate into PostgreSQL's dialect with
/// nothing of SQLite's left (placeholders, schema types, row ids, the bare word `user`).
final class PostgresMigrationsTests: XCTestCase {
    /// Records each statement a migration runs, translated.
    final class Recorder: SQLDatabase {
        var translated: [String] = []
        var failures: [String] = []
        var dialect: SQLDialect { .postgres }
        func execute(sql: String, arguments: SQLArguments) throws {
            do {
                translated.append(try PostgresDialect.translate(sql) { _ in ["id"] })
            } catch {
                failures.append("\(error): \(sql)")
            }
        }
        func fetchAll(sql: String, arguments: SQLArguments) throws -> [SQLRow] { try execute(sql: sql, arguments: arguments); return [] }
        func forEachRow(sql: String, arguments: SQLArguments, _ body: (SQLRow) throws -> Void) throws { try execute(sql: sql, arguments: arguments) }
        func fetchOne(sql: String, arguments: SQLArguments) throws -> SQLRow? { try execute(sql: sql, arguments: arguments); return nil }
        func cachedStatement(sql: String) throws -> any SQLStatement { throw TranslationOnly() }
        func changes(sql: String, arguments: SQLArguments) throws -> Int { try execute(sql: sql, arguments: arguments); return 0 }
        func insert(sql: String, arguments: SQLArguments, returning column: String) throws -> Int64 { try execute(sql: sql, arguments: arguments); return 0 }
        func inSavepoint<T>(_ body: () throws -> T) throws -> T { try body() }
        struct TranslationOnly: Error {}
    }

    func testEveryDomainsMigrationsTranslate() throws {
        var migrations = SQLMigrations()
        for domain in HubbubServer.standardDomains { domain.migrations(&migrations) }
        XCTAssertGreaterThan(migrations.steps.count, 15)
        let recorder = Recorder()
        for step in migrations.steps { try step.apply(recorder) }
        XCTAssertEqual(recorder.failures, [])
        let all = recorder.translated.joined(separator: "\n")
        for sqliteOnly in ["WITHOUT ROWID", "PRAGMA", " REAL", " BLOB", "INSERT OR", "?"] {
            XCTAssertFalse(all.contains(sqliteOnly), "\(sqliteOnly) left in:\n\(all)")
        }
        for statement in recorder.translated where statement.hasPrefix("CREATE TABLE") {
            XCTAssertFalse(statement.contains(" INTEGER"), statement)
        }
        for line in all.split(separator: "\n") {
            // Outside comments and literals, every `user` is quoted.
            let code = String(line.split(separator: "--", maxSplits: 1, omittingEmptySubsequences: false)[0])
                .replacingOccurrences(of: #"'[^']*'"#, with: "''", options: .regularExpression)
            XCTAssertNil(code.range(of: #"(?<![\w".])user(?![\w"])"#, options: [.regularExpression, .caseInsensitive]), "a bare user in: \(line)")
        }
    }
}
