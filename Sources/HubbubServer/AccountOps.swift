import Accounts
import Realtime

/// Accounts and profiles: `account.*`, `auth`, `profile.*`.
enum AccountOps {
    static let all: [Operation] = [
        Operation(name: "account.signup", opClass: .auth, needsAuth: false) { session, r throws(ProtocolError) in
            let (user, token) = try await session.services.accounts.signup(
                username: try r.args.string("username", maxLength: 64), email: try r.args.string("email", maxLength: 254),
                password: try r.args.string("password", maxLength: 1024),
                confirmation: try r.args.optionalString("passwordConfirmation", maxLength: 1024))
            // Signed up is logged in, as after account.login.
            let (_, claims) = try await session.services.accounts.authenticate(token)
            await session.authenticated(user, claims: claims)
            return ["user": user.json, "token": .string(token)]
        },
        Operation(name: "account.login", opClass: .auth, needsAuth: false) { session, r throws(ProtocolError) in
            let (user, token) = try await session.services.accounts.login(try r.args.string("login", maxLength: 254),
                                                                          password: try r.args.string("password", maxLength: 1024))
            let (_, claims) = try await session.services.accounts.authenticate(token)
            await session.authenticated(user, claims: claims)
            return ["user": user.json, "token": .string(token)]
        },
        Operation(name: "auth", opClass: .auth, needsAuth: false) { session, r throws(ProtocolError) in
            let (user, claims) = try await session.services.accounts.authenticate(try r.args.string("token", maxLength: 512))
            await session.authenticated(user, claims: claims)
            return ["user": user.json]
        },
        Operation(name: "account.logout", opClass: .auth, needsAuth: true) { session, _ throws(ProtocolError) in
            if let claims = await session.loggedOut() { try await session.services.accounts.logout(claims) }
            return [:]
        },
        Operation(name: "account.delete", opClass: .write, needsAuth: true) { session, _ throws(ProtocolError) in
            let user = try await session.requireUser()
            try await session.services.accounts.delete(user.id)
            if let claims = await session.loggedOut() { try await session.services.accounts.logout(claims) }
            return ["deleted": .string(user.id)]
        },
        Operation(name: "profile.get", opClass: .read, needsAuth: true) { session, r throws(ProtocolError) in
            let me = try await session.requireUser()
            let id = try r.args.optionalString("user", maxLength: 64) ?? me.id
            return ["profile": try await session.services.accounts.profile(id)]
        },
        Operation(name: "profile.update", opClass: .write, needsAuth: true) { session, r throws(ProtocolError) in
            let me = try await session.requireUser()
            if let target = try r.args.optionalString("user", maxLength: 64), target != me.id {
                throw .forbidden("you can only edit your own profile")
            }
            return ["profile": try await session.services.accounts.updateProfile(me.id, args: r.args)]
        },
    ]
}
