import Accounts
import Foundation
import GRDB
import HubbubTestSupport
import Storage
import XCTest

/// Log-outs are remembered only while the token they revoke could still be used: a server that
/// serves log-outs for months keeps a token lifetime's worth of them, not all of them.
final class RevocationTests: XCTestCase {
    private func makeService(_ store: Store) throws -> AccountService {
        var configuration = AccountService.Configuration()
        configuration.pbkdf2Iterations = 1000
        return try AccountService(store: store, secret: Array(repeating: 7, count: 32), configuration: configuration)
    }

    func testExpiredRevocationsAreForgottenInMemoryAndOnDisk() async throws {
        let temporary = try temporaryStore("hubbub-accounts", migrations: .of(AccountSchema.register))
        let store = temporary.store
        let service = try makeService(store)
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
        let reopened = try temporary.reopen()
        defer { reopened.close() }
        let again = try makeService(reopened)
        let live = try await reopened.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM revoked_token WHERE token_id = 'live'") ?? 0 }
        XCTAssertEqual(live, 1)
        let reloaded = await again.revokedCount
        XCTAssertEqual(reloaded, 1, "only the revocation of the token that can still be used comes back")
    }
}
