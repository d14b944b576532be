import Accounts
import Foundation
import GRDB
import Storage
import XCTest

/// Log-outs are remembered only while the token they revoke could still be used: a server that
/// serves log-outs for months keeps a token lifetime's worth of them, not all of them.
final class RevocationTests: XCTestCase {
    private func makeService(_ dir: String) throws -> (AccountService, Store) {
        var migrator = SQLMigrations()
        AccountSchema.register(&migrator)
        let store = try Store(configuration: .init(directory: dir), migrations: migrator)
        var configuration = AccountService.Configuration()
        configuration.pbkdf2Iterations = 1000
        return (try AccountService(store: store, secret: Array(repeating: 7, count: 32), configuration: configuration), store)
    }

    func testExpiredRevocationsAreForgottenInMemoryAndOnDisk() async throws {
        let dir = NSTemporaryDirectory() + "hubbub-accounts-\(UUID().uuidString)"
        let (service, store) = try makeService(dir)
        let now = Date().timeIntervalSince1970
        // 5,000 log-outs of tokens that have expired since, then one of a token still valid.
        for i in 0..<5000 {
            try await service.logout(Tokens.Claims(user: "u", expires: now - 10, id: "old\(i)"))
        }
        try await service.logout(Tokens.Claims(user: "u", expires: now + 3600, id: "live"))
        let remembered = await service.revokedCount
        XCTAssertLessThan(remembered, 2048, "expired log-outs are dropped as the map grows, not kept forever")
        let onDisk = try await store.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM revoked_token") ?? 0 }
        XCTAssertLessThan(onDisk, 2048, "and deleted from the table")
        store.close()

        // The live revocation holds across a restart.
        let (again, reopened) = try makeService(dir)
        defer { reopened.close() }
        let live = try await reopened.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM revoked_token WHERE token_id = 'live'") ?? 0 }
        XCTAssertEqual(live, 1)
        let reloaded = await again.revokedCount
        XCTAssertEqual(reloaded, 1, "only the revocation of the token that can still be used comes back")
    }
}
