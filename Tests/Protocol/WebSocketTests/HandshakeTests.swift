import XCTest
import WebSocket
import HubbubCrypto

/// The opening handshake (RFC 6455 §4) and permessage-deflate negotiation (RFC 7692 §7.1).
final class HandshakeTests: XCTestCase {
    static let rfcKey = "dGhlIHNhbXBsZSBub25jZQ=="
    static let rfcAccept = "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="

    func head(_ lines: [String], method: String = "GET", version: String = "HTTP/1.1") -> HTTPHead {
        let text = "\(method) /ws \(version)\r\n" + lines.map { $0 + "\r\n" }.joined() + "\r\n"
        var p = HTTPHeadParser(kind: .request)
        let result = Array(text.utf8).withUnsafeBytes { p.feed($0) }
        guard case .head(let h, _) = result else { fatalError("test request does not parse: \(result)") }
        return h
    }

    func request(without skip: String? = nil, replacing: [String: String] = [:], adding extra: [String] = [],
                 method: String = "GET") -> HTTPHead {
        var fields: [(String, String)] = [("Host", "example.com"), ("Upgrade", "websocket"), ("Connection", "Upgrade"),
                                          ("Sec-WebSocket-Key", Self.rfcKey), ("Sec-WebSocket-Version", "13")]
        fields = fields.filter { $0.0 != skip }.map { (k, v) in (k, replacing[k] ?? v) }
        return head(fields.map { "\($0.0): \($0.1)" } + extra, method: method)
    }

    func accept(_ h: HTTPHead, _ policy: Handshake.ServerPolicy = .init()) -> Result<Handshake.Accepted, HTTPError> {
        Handshake.accept(h, policy: policy)
    }

    func failure(_ r: Result<Handshake.Accepted, HTTPError>) -> HTTPError? {
        if case .failure(let e) = r { return e }
        return nil
    }

    func success(_ r: Result<Handshake.Accepted, HTTPError>, file: StaticString = #filePath, line: UInt = #line) -> Handshake.Accepted? {
        switch r {
        case .success(let a): return a
        case .failure(let e): XCTFail("refused: \(e)", file: file, line: line); return nil
        }
    }

    func responseHead(_ bytes: [UInt8]) -> HTTPHead? {
        var p = HTTPHeadParser(kind: .response)
        if case .head(let h, let rest) = bytes.withUnsafeBytes({ p.feed($0) }), rest.isEmpty { return h }
        return nil
    }

    // MARK: Server side

    func testRFCAcceptValue() {
        XCTAssertEqual(Handshake.acceptValue(forKey: Self.rfcKey), Self.rfcAccept)
    }

    func testAcceptBuildsTheRFCResponse() {
        guard let a = success(accept(request())) else { return }
        XCTAssertEqual(String(decoding: a.response, as: UTF8.self),
                       "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                       + "Sec-WebSocket-Accept: \(Self.rfcAccept)\r\n\r\n")
        XCTAssertNil(a.subprotocol)
        XCTAssertNil(a.deflate)
        XCTAssertTrue(Handshake.isUpgradeRequest(request()))
        XCTAssertFalse(Handshake.isUpgradeRequest(head(["Host: a"])))
    }

    func testTokensAreCaseInsensitiveAndListed() {
        XCTAssertNotNil(success(accept(request(replacing: ["Upgrade": "WebSocket", "Connection": "keep-alive, upgrade"]))))
    }

    func testNonGET405() {
        let e = failure(accept(request(method: "POST")))
        XCTAssertEqual(e?.status, 405)
        XCTAssertEqual(e?.headers["Allow"], "GET")
    }

    func testHTTP10Refused() {
        XCTAssertEqual(failure(accept(head(["Host: a", "Upgrade: websocket", "Connection: Upgrade",
                                            "Sec-WebSocket-Key: \(Self.rfcKey)", "Sec-WebSocket-Version: 13"],
                                           version: "HTTP/1.0")))?.status, 505)
    }

    func testMissingOrRepeatedHost400() {
        XCTAssertEqual(failure(accept(request(without: "Host")))?.status, 400)
        XCTAssertEqual(failure(accept(request(adding: ["Host: other.example"])))?.status, 400)
    }

    func testMissingOrInvalidKey400() {
        XCTAssertEqual(failure(accept(request(without: "Sec-WebSocket-Key")))?.status, 400)
        for bad in ["not base64!", "dGhlIHNhbXBsZSBub25jZQ", "AAAAAAAAAAAAAAAAAAAA",   // 15 bytes
                    "AAAAAAAAAAAAAAAAAAAAAAA=",                                           // 17 bytes
                    "dGhlIHNhbXBsZSBub25j", ""] {
            XCTAssertEqual(failure(accept(request(replacing: ["Sec-WebSocket-Key": bad])))?.status, 400, bad)
        }
        XCTAssertEqual(failure(accept(request(adding: ["Sec-WebSocket-Key: AAAAAAAAAAAAAAAAAAAAAA=="])))?.status, 400, "two keys")
        XCTAssertNotNil(success(accept(request(replacing: ["Sec-WebSocket-Key": "AAAAAAAAAAAAAAAAAAAAAA=="]))))
    }

    func testWrongVersion426() {
        for version in ["12", "8", "", "13, 8"] {
            let e = failure(accept(request(replacing: ["Sec-WebSocket-Version": version])))
            XCTAssertEqual(e?.status, 426, version)
            XCTAssertEqual(e?.headers["Sec-WebSocket-Version"], "13")
        }
        let e = failure(accept(request(without: "Sec-WebSocket-Version")))
        XCTAssertEqual(e?.status, 426)
        // The 426 response carries the header.
        guard let e else { return XCTFail("no 426") }
        var p = HTTPHeadParser(kind: .response)
        guard case .head(let h, _) = HTTPResponse.error(e).withUnsafeBytes({ p.feed($0) }) else { return XCTFail("no 426 response") }
        XCTAssertEqual(h.startLine.1, "426")
        XCTAssertEqual(h.value("Sec-WebSocket-Version"), "13")
    }

    func testMissingUpgradeOrConnection400() {
        XCTAssertEqual(failure(accept(request(without: "Upgrade")))?.status, 400)
        XCTAssertEqual(failure(accept(request(replacing: ["Upgrade": "h2c"])))?.status, 400)
        XCTAssertEqual(failure(accept(request(without: "Connection")))?.status, 400)
        XCTAssertEqual(failure(accept(request(replacing: ["Connection": "keep-alive"])))?.status, 400)
    }

    func testOriginAllowList() {
        let policy = Handshake.ServerPolicy(allowedOrigins: ["https://hubbub.example"])
        XCTAssertEqual(failure(accept(request(adding: ["Origin: https://evil.example"]), policy))?.status, 403)
        XCTAssertNotNil(success(accept(request(adding: ["Origin: https://hubbub.example"]), policy)))
        // No list: any origin.
        XCTAssertNotNil(success(accept(request(adding: ["Origin: https://evil.example"]))))
    }

    func testSubprotocolChoice() {
        let policy = Handshake.ServerPolicy(subprotocols: ["hubbub.v2", "hubbub.v1"])
        guard let a = success(accept(request(adding: ["Sec-WebSocket-Protocol: chat, hubbub.v1"]), policy)) else { return }
        XCTAssertEqual(a.subprotocol, "hubbub.v1")
        XCTAssertEqual(responseHead(a.response)?.value("Sec-WebSocket-Protocol"), "hubbub.v1")
        // The server's preference wins when the client offers several we speak.
        XCTAssertEqual(success(accept(request(adding: ["Sec-WebSocket-Protocol: hubbub.v1, hubbub.v2"]), policy))?.subprotocol,
                       "hubbub.v2")
        // Offers split over two header lines.
        XCTAssertEqual(success(accept(request(adding: ["Sec-WebSocket-Protocol: chat", "Sec-WebSocket-Protocol: hubbub.v1"]),
                                      policy))?.subprotocol, "hubbub.v1")
        // Nothing in common: no header (the client decides whether to go on).
        guard let none = success(accept(request(adding: ["Sec-WebSocket-Protocol: chat"]), policy)) else { return }
        XCTAssertNil(none.subprotocol)
        XCTAssertNil(responseHead(none.response)?.value("Sec-WebSocket-Protocol"))
    }

    // MARK: permessage-deflate negotiation

    let both = PerMessageDeflate.Configuration()  // server and client no-context-takeover by default
    let takeover = PerMessageDeflate.Configuration(serverNoContextTakeover: false, clientNoContextTakeover: false)

    func negotiate(_ header: String?, _ config: PerMessageDeflate.Configuration) -> PerMessageDeflate.Parameters? {
        PerMessageDeflate.negotiate(offers: header, configuration: config)
    }

    func testPlainOffer() {
        XCTAssertEqual(negotiate("permessage-deflate", takeover), PerMessageDeflate.Parameters())
        XCTAssertEqual(negotiate("permessage-deflate", takeover)?.responseHeader, "permessage-deflate")
        let p = negotiate("permessage-deflate", both)
        XCTAssertEqual(p, PerMessageDeflate.Parameters(serverNoContextTakeover: true, clientNoContextTakeover: true))
        XCTAssertEqual(p?.responseHeader, "permessage-deflate; server_no_context_takeover; client_no_context_takeover")
        XCTAssertNil(negotiate(nil, both))
        XCTAssertNil(negotiate("x-webkit-deflate-frame", both))
        XCTAssertEqual(negotiate("x-webkit-deflate-frame, permessage-deflate", takeover), PerMessageDeflate.Parameters())
    }

    func testClientOffersNoContextTakeover() {
        XCTAssertEqual(negotiate("permessage-deflate; client_no_context_takeover; server_no_context_takeover", takeover),
                       PerMessageDeflate.Parameters(serverNoContextTakeover: true, clientNoContextTakeover: true))
        XCTAssertNil(negotiate("permessage-deflate; client_no_context_takeover=1", takeover), "takes no value")
    }

    func testClientMaxWindowBitsWithoutValue() {
        let p = negotiate("permessage-deflate; client_max_window_bits", takeover)
        XCTAssertEqual(p, PerMessageDeflate.Parameters())
        XCTAssertNil(p?.clientMaxWindowBits)
        XCTAssertEqual(p?.responseHeader, "permessage-deflate")
        XCTAssertNotNil(negotiate("permessage-deflate; client_max_window_bits=10", takeover))
        XCTAssertNil(negotiate("permessage-deflate; client_max_window_bits=7", takeover))
        XCTAssertNil(negotiate("permessage-deflate; client_max_window_bits=16", takeover))
    }

    func testServerMaxWindowBits10() {
        let p = negotiate("permessage-deflate; server_max_window_bits=10", takeover)
        XCTAssertEqual(p?.serverMaxWindowBits, 10)
        XCTAssertEqual(p?.responseHeader, "permessage-deflate; server_max_window_bits=10")
        XCTAssertEqual(negotiate("permessage-deflate; server_max_window_bits=\"10\"", takeover)?.serverMaxWindowBits, 10)
        // Our own smaller limit wins, and is announced even when not asked for.
        var small = takeover
        small.serverMaxWindowBits = 9
        XCTAssertEqual(negotiate("permessage-deflate; server_max_window_bits=12", small)?.serverMaxWindowBits, 9)
        XCTAssertEqual(negotiate("permessage-deflate", small)?.responseHeader, "permessage-deflate; server_max_window_bits=9")
    }

    func testServerMaxWindowBits8Declined() {
        XCTAssertNil(negotiate("permessage-deflate; server_max_window_bits=8", takeover))
        XCTAssertEqual(negotiate("permessage-deflate; server_max_window_bits=8, permessage-deflate", takeover),
                       PerMessageDeflate.Parameters())
        for bad in ["", "=", "=16", "=09", "=abc", "=1x"] {
            XCTAssertNil(negotiate("permessage-deflate; server_max_window_bits\(bad)", takeover), bad)
        }
    }

    func testUnknownParameterDeclinedAndNextOfferTaken() {
        XCTAssertNil(negotiate("permessage-deflate; foo", takeover))
        let p = negotiate("permessage-deflate; foo=1, permessage-deflate; server_max_window_bits=11", takeover)
        XCTAssertEqual(p?.serverMaxWindowBits, 11)
    }

    func testDuplicateParameterDeclined() {
        XCTAssertNil(negotiate("permessage-deflate; server_no_context_takeover; server_no_context_takeover", takeover))
        XCTAssertNil(negotiate("permessage-deflate; client_max_window_bits; client_max_window_bits=10", takeover))
        XCTAssertEqual(negotiate("permessage-deflate; server_max_window_bits=10; server_max_window_bits=10, permessage-deflate",
                                 takeover), PerMessageDeflate.Parameters())
    }

    func testDisabledByConfiguration() {
        var off = both
        off.enabled = false
        XCTAssertNil(negotiate("permessage-deflate", off))
        guard let a = success(accept(request(adding: ["Sec-WebSocket-Extensions: permessage-deflate"]),
                                     .init(deflate: off))) else { return }
        XCTAssertNil(a.deflate)
        XCTAssertNil(responseHead(a.response)?.value("Sec-WebSocket-Extensions"))
    }

    func testMalformedExtensionHeaderMeansNoCompression() {
        XCTAssertNil(PerMessageDeflate.parseExtensions("permessage-deflate; =1"))
        XCTAssertNil(negotiate("permessage-deflate; server_max_window_bits=\"10", takeover))
        XCTAssertNil(negotiate("perm@ssage-deflate", takeover))
    }

    func testAcceptAnnouncesNegotiatedDeflate() {
        guard let a = success(accept(request(adding: ["Sec-WebSocket-Extensions: permessage-deflate; client_max_window_bits"])))
        else { return }
        XCTAssertEqual(a.deflate, PerMessageDeflate.Parameters(serverNoContextTakeover: true, clientNoContextTakeover: true))
        XCTAssertEqual(responseHead(a.response)?.value("Sec-WebSocket-Extensions"),
                       "permessage-deflate; server_no_context_takeover; client_no_context_takeover")
    }

    // MARK: Client side

    func testClientRequestIsAcceptedByServerAndAnswerChecks() {
        let key = pseudoRandomBytes(16)
        let req = Handshake.clientRequest(host: "example.com", path: "/ws", subprotocols: ["hubbub.v1"], offerDeflate: true,
                                          extraHeaders: [("Authorization", "Bearer t")], key: key)
        XCTAssertEqual(Base64.decode(req.key), key)
        var p = HTTPHeadParser(kind: .request)
        guard case .head(let h, let rest) = req.bytes.withUnsafeBytes({ p.feed($0) }) else { return XCTFail("request does not parse") }
        XCTAssertEqual(rest, [])
        XCTAssertEqual(h.value("Authorization"), "Bearer t")
        guard let a = success(accept(h, .init(subprotocols: ["hubbub.v1"]))), let response = responseHead(a.response) else { return }
        guard case .success(let c) = Handshake.checkResponse(response, key: req.key, offeredDeflate: true,
                                                             offeredSubprotocols: ["hubbub.v1"]) else {
            return XCTFail("client refuses a correct answer")
        }
        XCTAssertEqual(c.subprotocol, "hubbub.v1")
        XCTAssertEqual(c.deflate, a.deflate)
        // RFC 6455 §4.1: a subprotocol the client did not offer fails the handshake.
        guard case .failure = Handshake.checkResponse(response, key: req.key, offeredDeflate: true, offeredSubprotocols: ["other"]) else {
            return XCTFail("client accepted a subprotocol it never offered")
        }
    }

    func responseLines(_ lines: [String]) -> HTTPHead {
        var p = HTTPHeadParser(kind: .response)
        let text = "HTTP/1.1 101 Switching Protocols\r\n" + lines.map { $0 + "\r\n" }.joined() + "\r\n"
        guard case .head(let h, _) = Array(text.utf8).withUnsafeBytes({ p.feed($0) }) else { fatalError("bad test response") }
        return h
    }

    func testCheckResponseAcceptsRFCAnswer() {
        let h = responseLines(["Upgrade: websocket", "Connection: Upgrade", "Sec-WebSocket-Accept: \(Self.rfcAccept)"])
        guard case .success(let c) = Handshake.checkResponse(h, key: Self.rfcKey, offeredDeflate: false) else { return XCTFail() }
        XCTAssertNil(c.deflate)
        XCTAssertNil(c.subprotocol)
    }

    func testCheckResponseRejectsWrongAccept() {
        let h = responseLines(["Upgrade: websocket", "Connection: Upgrade", "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOp="])
        guard case .failure(let e) = Handshake.checkResponse(h, key: Self.rfcKey, offeredDeflate: false) else { return XCTFail() }
        XCTAssertEqual(e.status, 502)
        let missing = responseLines(["Upgrade: websocket", "Connection: Upgrade"])
        guard case .failure = Handshake.checkResponse(missing, key: Self.rfcKey, offeredDeflate: false) else { return XCTFail() }
    }

    func testCheckResponseRejectsExtensionNotOffered() {
        let lines = ["Upgrade: websocket", "Connection: Upgrade", "Sec-WebSocket-Accept: \(Self.rfcAccept)",
                     "Sec-WebSocket-Extensions: permessage-deflate"]
        guard case .failure = Handshake.checkResponse(responseLines(lines), key: Self.rfcKey, offeredDeflate: false) else {
            return XCTFail("accepted an extension we did not offer")
        }
        guard case .success(let c) = Handshake.checkResponse(responseLines(lines), key: Self.rfcKey, offeredDeflate: true) else {
            return XCTFail()
        }
        XCTAssertEqual(c.deflate, PerMessageDeflate.Parameters())
        // An extension other than permessage-deflate, or an unknown parameter.
        for ext in ["x-other", "permessage-deflate; foo", "permessage-deflate, permessage-deflate"] {
            let l = Array(lines.dropLast()) + ["Sec-WebSocket-Extensions: \(ext)"]
            guard case .failure = Handshake.checkResponse(responseLines(l), key: Self.rfcKey, offeredDeflate: true) else {
                return XCTFail("accepted \(ext)")
            }
        }
    }

    func testCheckResponseParsesDeflateParameters() {
        let h = responseLines(["Upgrade: websocket", "Connection: Upgrade", "Sec-WebSocket-Accept: \(Self.rfcAccept)",
                               "Sec-WebSocket-Extensions: permessage-deflate; server_no_context_takeover; client_max_window_bits=12"])
        guard case .success(let c) = Handshake.checkResponse(h, key: Self.rfcKey, offeredDeflate: true) else { return XCTFail() }
        XCTAssertEqual(c.deflate, PerMessageDeflate.Parameters(serverNoContextTakeover: true, clientMaxWindowBits: 12))
    }

    func testCheckResponseDeflateParameterEdgeCases() {
        func check(_ ext: String) -> Result<Handshake.ClientAccepted, HTTPError> {
            Handshake.checkResponse(responseLines(["Upgrade: websocket", "Connection: Upgrade", "Sec-WebSocket-Accept: \(Self.rfcAccept)",
                                                   "Sec-WebSocket-Extensions: \(ext)"]), key: Self.rfcKey, offeredDeflate: true)
        }
        // zlib cannot compress with an 8-bit raw window, so a client told to use one must send uncompressed:
        // the limit must reach the caller as 8, not be widened to a 9-bit window the server did not allow.
        guard case .success(let eight) = check("permessage-deflate; client_max_window_bits=8") else {
            return XCTFail("refused client_max_window_bits=8")
        }
        XCTAssertEqual(eight.deflate?.clientMaxWindowBits, 8)
        guard case .success(let nine) = check("permessage-deflate; client_max_window_bits=9") else { return XCTFail() }
        XCTAssertEqual(nine.deflate?.clientMaxWindowBits, 9)
        // The server may compress with 8 bits: we inflate with 15, which reads it.
        guard case .success(let s8) = check("permessage-deflate; server_max_window_bits=8") else { return XCTFail() }
        XCTAssertEqual(s8.deflate?.serverMaxWindowBits, 8)
        // The no-context-takeover parameters take no value; window bits need one.
        for bad in ["permessage-deflate; server_no_context_takeover=1", "permessage-deflate; client_no_context_takeover=x",
                    "permessage-deflate; server_max_window_bits", "permessage-deflate; client_max_window_bits=16"] {
            guard case .failure = check(bad) else { return XCTFail("accepted \(bad)") }
        }
    }

    func testCheckResponseRefusesNon101() {
        var p = HTTPHeadParser(kind: .response)
        guard case .head(let h, _) = Array("HTTP/1.1 403 Forbidden\r\n\r\n".utf8).withUnsafeBytes({ p.feed($0) }) else { return XCTFail() }
        guard case .failure(let e) = Handshake.checkResponse(h, key: Self.rfcKey, offeredDeflate: false) else { return XCTFail() }
        XCTAssertEqual(e.status, 403)
        let noUpgrade = responseLines(["Connection: Upgrade", "Sec-WebSocket-Accept: \(Self.rfcAccept)"])
        guard case .failure = Handshake.checkResponse(noUpgrade, key: Self.rfcKey, offeredDeflate: false) else { return XCTFail() }
    }

    func testBase64() {
        XCTAssertEqual(Base64.encode(Array("Hello".utf8)), "SGVsbG8=")
        XCTAssertEqual(Base64.encode(Array("Hell".utf8)), "SGVsbA==")
        XCTAssertEqual(Base64.encode(Array("Hel".utf8)), "SGVs")
        XCTAssertEqual(Base64.decode("SGVsbG8="), Array("Hello".utf8))
        XCTAssertNil(Base64.decode("SGVsbG8"))
        XCTAssertNil(Base64.decode("SG=sbG8="))
        for n in 0..<40 {
            let b = pseudoRandomBytes(n, seed: UInt64(n + 99))
            XCTAssertEqual(Base64.decode(Base64.encode(b)), b)
        }
    }
}
