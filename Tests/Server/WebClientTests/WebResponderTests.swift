import Foundation
import XCTest

import WebClient

/// The web client's files as the server sends them: the built-in set, types, ETags and 304s,
/// gzip when asked, the security headers, and nothing outside the root.
final class WebResponderTests: XCTestCase {
    let web = WebResponder(.fixed(try! WebAssets.builtIn()))

    func header(_ r: WebResponder.Response, _ name: String) -> String? { r.headers.first { $0.0 == name }?.1 }

    func testPagesAndScriptsAreBuiltInWithTheirTypes() throws {
        let assets = try WebAssets.builtIn()
        for page in ["index.html", "js/hubbub.js", "js/ui.js", "css/app.css"] { XCTAssertTrue(assets.paths.contains(page), page) }
        let root = try XCTUnwrap(web.respond(method: "GET", path: "/", acceptEncoding: nil, ifNoneMatch: nil))
        XCTAssertEqual(root.status, 200)
        XCTAssertEqual(root.contentType, "text/html; charset=utf-8")
        XCTAssertTrue(String(decoding: root.body, as: UTF8.self).contains("<!doctype html>"))
        let script = try XCTUnwrap(web.respond(method: "GET", path: "/js/hubbub.js", acceptEncoding: nil, ifNoneMatch: nil))
        XCTAssertEqual(script.contentType, "text/javascript; charset=utf-8")
        XCTAssertEqual(script.body, try XCTUnwrap(assets.asset(for: "/js/hubbub.js")).bytes)
        XCTAssertEqual(try XCTUnwrap(web.respond(method: "GET", path: "/css/app.css", acceptEncoding: nil, ifNoneMatch: nil)).contentType,
                       "text/css; charset=utf-8")
    }

    func testAPageIsFoundWithoutItsExtension() throws {
        let assets = try WebAssets.builtIn()
        for page in assets.paths where page.hasSuffix(".html") && page != "index.html" {
            let name = "/" + page.dropLast(5)
            XCTAssertEqual(web.respond(method: "GET", path: name, acceptEncoding: nil, ifNoneMatch: nil)?.body, assets.asset(for: "/" + page)?.bytes, name)
        }
    }

    func testUnknownPathsAndPathsOutsideTheRootAreNotServed() {
        for path in ["/nope", "/../Package.swift", "/js/../../WebAssets.swift", "/js/", "js/hubbub.js", "/%2e%2e/etc/passwd", "/index"] {
            let r = web.respond(method: "GET", path: path, acceptEncoding: nil, ifNoneMatch: nil)
            if path == "/index" { XCTAssertEqual(r?.status, 200, "index.html by its name"); continue }
            XCTAssertNil(r, path)
        }
    }

    func testCachingByETag() throws {
        let first = try XCTUnwrap(web.respond(method: "GET", path: "/js/hubbub.js", acceptEncoding: nil, ifNoneMatch: nil))
        let etag = try XCTUnwrap(header(first, "ETag"))
        XCTAssertTrue(etag.hasPrefix("\"") && etag.hasSuffix("\"") && etag.count == 18, etag)
        XCTAssertEqual(header(first, "Cache-Control"), "no-cache", "a browser asks again each time, so a new server's files are never mixed with old ones")
        let again = try XCTUnwrap(web.respond(method: "GET", path: "/js/hubbub.js", acceptEncoding: nil, ifNoneMatch: etag))
        XCTAssertEqual(again.status, 304)
        XCTAssertTrue(again.body.isEmpty)
        XCTAssertEqual(web.respond(method: "GET", path: "/js/hubbub.js", acceptEncoding: nil, ifNoneMatch: "\"0000\", W/\(etag)")?.status, 304)
        XCTAssertEqual(web.respond(method: "GET", path: "/js/hubbub.js", acceptEncoding: nil, ifNoneMatch: "\"0000\"")?.status, 200)
        let other = try XCTUnwrap(web.respond(method: "GET", path: "/css/app.css", acceptEncoding: nil, ifNoneMatch: nil))
        XCTAssertNotEqual(header(other, "ETag"), etag)
    }

    func testGzipWhenTheBrowserTakesIt() throws {
        let plain = try XCTUnwrap(web.respond(method: "GET", path: "/js/hubbub.js", acceptEncoding: nil, ifNoneMatch: nil))
        let zipped = try XCTUnwrap(web.respond(method: "GET", path: "/js/hubbub.js", acceptEncoding: "gzip, deflate, br", ifNoneMatch: nil))
        XCTAssertEqual(header(zipped, "Content-Encoding"), "gzip")
        XCTAssertEqual(header(zipped, "Vary"), "Accept-Encoding")
        XCTAssertLessThan(zipped.body.count, plain.body.count / 2)
        XCTAssertEqual(Array(zipped.body.prefix(2)), [0x1F, 0x8B], "a gzip member")
        XCTAssertEqual(try gunzip(zipped.body), plain.body)
        XCTAssertNil(header(try XCTUnwrap(web.respond(method: "GET", path: "/js/hubbub.js", acceptEncoding: "gzip;q=0, identity", ifNoneMatch: nil)),
                            "Content-Encoding"))
        XCTAssertNil(header(plain, "Content-Encoding"))
    }

    func testEveryAnswerKeepsThePageToItsOrigin() throws {
        let r = try XCTUnwrap(web.respond(method: "GET", path: "/", acceptEncoding: nil, ifNoneMatch: nil))
        let csp = try XCTUnwrap(header(r, "Content-Security-Policy"))
        XCTAssertTrue(csp.contains("script-src 'self'"))
        XCTAssertFalse(csp.contains("unsafe-inline"), "no inline script, no inline style")
        XCTAssertFalse(csp.contains("http"), "nothing from another origin")
        XCTAssertTrue(csp.contains("frame-ancestors 'none'"))
        XCTAssertEqual(header(r, "X-Content-Type-Options"), "nosniff")
    }

    func testPagesHoldNoInlineScriptAndLoadNothingFromElsewhere() throws {
        let assets = try WebAssets.builtIn()
        for path in assets.paths where path.hasSuffix(".html") || path.hasSuffix(".js") || path.hasSuffix(".css") {
            let text = String(decoding: try XCTUnwrap(assets.asset(for: "/" + path)).bytes, as: UTF8.self)
            XCTAssertFalse(text.range(of: #"(src|href)\s*=\s*["']?(https?:)?//"#, options: .regularExpression) != nil, "\(path) loads from another origin")
            XCTAssertFalse(text.contains("innerHTML") || text.contains("outerHTML") || text.contains("insertAdjacentHTML") || text.contains("document.write"),
                           "\(path) writes HTML: user text must be set as text")
            if path.hasSuffix(".html") {
                XCTAssertNil(text.range(of: #"<script(?![^>]*\bsrc=)[^>]*>"#, options: .regularExpression), "\(path) has an inline script")
                XCTAssertNil(text.range(of: #"\son[a-z]+\s*="#, options: .regularExpression), "\(path) has an inline event handler")
                XCTAssertNil(text.range(of: #"\sstyle\s*="#, options: .regularExpression), "\(path) has an inline style")
            }
        }
    }

    func testOtherMethodsAndHead() throws {
        XCTAssertEqual(web.respond(method: "POST", path: "/", acceptEncoding: nil, ifNoneMatch: nil)?.status, 405)
        let head = try XCTUnwrap(web.respond(method: "HEAD", path: "/", acceptEncoding: nil, ifNoneMatch: nil))
        XCTAssertEqual(head.status, 200)
        XCTAssertTrue(head.body.isEmpty)
    }

    func testADirectoryIsReadAgainAtEachRequest() throws {
        let dir = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("hubbub-web-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        try Data("<!doctype html>one".utf8).write(to: dir.appendingPathComponent("index.html"))
        let live = WebResponder(.directory(dir))
        XCTAssertEqual(live.respond(method: "GET", path: "/", acceptEncoding: nil, ifNoneMatch: nil)?.body, Array("<!doctype html>one".utf8))
        try Data("<!doctype html>two".utf8).write(to: dir.appendingPathComponent("index.html"))
        XCTAssertEqual(live.respond(method: "GET", path: "/", acceptEncoding: nil, ifNoneMatch: nil)?.body, Array("<!doctype html>two".utf8))
        try FileManager.default.removeItem(at: dir.appendingPathComponent("index.html"))
        XCTAssertEqual(live.respond(method: "GET", path: "/", acceptEncoding: nil, ifNoneMatch: nil)?.status, 500, "a root without index.html says so")
    }

    /// Inflates a gzip member with the system's gzip (an independent implementation).
    func gunzip(_ bytes: [UInt8]) throws -> [UInt8] {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/bin/gzip")
        p.arguments = ["-dc"]
        let input = Pipe(), output = Pipe()
        p.standardInput = input
        p.standardOutput = output
        try p.run()
        input.fileHandleForWriting.write(Data(bytes))
        try input.fileHandleForWriting.close()
        let out = output.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        return [UInt8](out)
    }
}
