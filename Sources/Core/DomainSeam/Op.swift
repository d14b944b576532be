import Realtime
import WebSocket

/// How a request is rate limited: each class has its own per-connection budget (and `auth`
/// further limits of its own).
public enum RateClass: String, Sendable, CaseIterable {
    /// signup, login, auth: slow on purpose (password hashing).
    case auth
    /// reads: get, search, list, subscribe.
    case read
    /// writes: votes, requests, owner actions, profile changes.
    case write
}

/// The arguments of one op, parsed and checked before its handler runs; a failure names the field.
/// A field the parser never asks for is refused (`bad_request` `unknown field x (did you mean y?)`):
/// a parser that takes a field without reading it at once says so with `Args.declare`.
public protocol OpArguments: Sendable {
    init(_ args: Args) throws(ProtocolError)
}

extension OpArguments {
    /// Parses `args`, then refuses any field the parser did not ask for.
    static func parse(_ args: Args) throws(ProtocolError) -> Self {
        let parsed = try Self(args)
        if let unknown = args.unknownField() { throw unknown }
        return parsed
    }
}

/// An op without arguments: any field given is refused as unknown.
public struct NoArguments: OpArguments {
    public init(_ args: Args) {}
}

/// `{user?}`: the user an op is about (another user's profile or lists), or the caller when absent.
public struct UserArgument: OpArguments {
    public var user: String?
    public init(_ a: Args) throws(ProtocolError) { user = try a.optionalString("user", maxLength: 64) }
}

/// What a handler did about its reply.
public enum OpOutcome: Sendable {
    /// Answer the request with this result (the core sends it).
    case reply(JSON)
    /// The handler, or whoever it handed the request to, answers through the call's `Replier`
    /// (a subscribe orders its reply before the pushes it replays; a write answers once durable).
    case sent
}

/// One request being handled: who sent it, over which connection, and how to answer.
public struct OpCall: Sendable {
    public let requestID: Int
    /// The logged-in user, if any (ops declared `.user` always have one).
    public let user: String?
    public let session: any SessionControl
    public let reply: Replier

    public init(requestID: Int, user: String?, session: any SessionControl, reply: Replier) {
        self.requestID = requestID
        self.user = user
        self.session = session
        self.reply = reply
    }
}

/// A call of an op that needs a logged-in user, with its arguments parsed.
public struct UserCall<Arguments: OpArguments>: Sendable {
    public let user: String
    public let args: Arguments
    public let session: any SessionControl
    public let reply: Replier
}

/// One op of protocol.md: its name, rate class, whether it needs a logged-in user, and what it
/// does. Build one with `Op.user` or `Op.anyone`, which parse the arguments before the handler.
public struct Op: Sendable {
    /// Who may call an op.
    public enum Access: Sendable {
        /// Anyone, logged in or not (sign-up, log-in).
        case anyone
        /// A logged-in user only; others get `unauthorized`.
        case user
        /// Another node of the cluster only, over its link (a domain's part of a change that
        /// spans nodes); a client asking for it is told the op does not exist.
        case node
    }

    public let name: String
    public let rateClass: RateClass
    public let access: Access
    private let handler: @Sendable (Args, OpCall) async throws(ProtocolError) -> OpOutcome
    /// The logged room whose state the op reads or changes (`venue:v12`), from its raw arguments:
    /// with several nodes, the op runs on that room's owner node (forwarded there from the
    /// others). Nil: it runs where it arrives (it reads or writes only the shared store).
    public private(set) var home: (@Sendable (Args) -> String?)?

    /// This op, run on the owner of the room `home` names.
    public func homed(_ home: @escaping @Sendable (Args) -> String?) -> Op {
        var op = self
        op.home = home
        return op
    }

    /// This op, run once `step` passes (a domain making its memory current first); a `step` that
    /// throws answers for the op.
    public func preceded(by step: @escaping @Sendable () async throws(ProtocolError) -> Void) -> Op {
        let handler = self.handler
        var op = Op(name: name, rateClass: rateClass, access: access) { args, call throws(ProtocolError) in
            try await step()
            return try await handler(args, call)
        }
        op.home = home
        return op
    }

    /// Runs the op (the core has checked access and the rate limit).
    public func run(_ args: Args, _ call: OpCall) async throws(ProtocolError) -> OpOutcome {
        try await handler(args, call)
    }

    /// An op for logged-in users; `A` parses its arguments.
    public static func user<A: OpArguments>(_ name: String, _ rateClass: RateClass, _ arguments: A.Type = A.self,
                                            _ body: @escaping @Sendable (UserCall<A>) async throws(ProtocolError) -> OpOutcome) -> Op {
        Op(name: name, rateClass: rateClass, access: .user) { args, call throws(ProtocolError) in
            guard let user = call.user else { throw .unauthorized("log in or send auth first") }
            return try await body(UserCall(user: user, args: try A.parse(args), session: call.session, reply: call.reply))
        }
    }

    /// An op only another node may ask for (`Access.node`); `A` parses its arguments.
    public static func node<A: OpArguments>(_ name: String, _ arguments: A.Type = A.self,
                                            _ body: @escaping @Sendable (A) async throws(ProtocolError) -> OpOutcome) -> Op {
        Op(name: name, rateClass: .write, access: .node) { args, _ throws(ProtocolError) in
            try await body(try A.parse(args))
        }
    }

    /// An op anyone may call; `A` parses its arguments.
    public static func anyone<A: OpArguments>(_ name: String, _ rateClass: RateClass, _ arguments: A.Type = A.self,
                                              _ body: @escaping @Sendable (OpCall, A) async throws(ProtocolError) -> OpOutcome) -> Op {
        Op(name: name, rateClass: rateClass, access: .anyone) { args, call throws(ProtocolError) in
            try await body(call, try A.parse(args))
        }
    }
}

/// Who a connection is logged in as.
public struct Identity: Sendable, Equatable {
    public var user: String
    /// The token it authenticated with (nil: none, e.g. in tests).
    public var tokenID: String?
    /// When that token expires (seconds since 1970); past it, requests close the connection with 4002.
    public var expires: Double?

    public init(user: String, tokenID: String? = nil, expires: Double? = nil) {
        self.user = user
        self.tokenID = tokenID
        self.expires = expires
    }
}

/// The connection's session, as ops may change it (the core's session actor implements it).
public protocol SessionControl: Sendable {
    /// The connection (what rooms keep as a member).
    var member: ConnectionID { get }
    /// The peer's IP address (what per-address limits count).
    var address: String { get }
    /// From now on, requests on this connection act as `identity.user`.
    func signIn(_ identity: Identity) async
    /// Forgets who is logged in; returns who was.
    func signOut() async -> Identity?
    /// Records a room this connection subscribes to (left when it closes), within the
    /// per-connection limit (`too_large` beyond it). Used by the core's `subscribe`.
    func addSubscription(_ room: String) async throws(ProtocolError)
    func removeSubscription(_ room: String) async
}
