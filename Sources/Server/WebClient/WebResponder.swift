import Foundation

/// Answers the web client's requests (`GET /`, `/patron`, `/js/hubbub.js`...): the file, its type,
/// caching by ETag (`no-cache`: a browser asks again each time and gets 304 while the file is the
/// same, so a new server's files are never mixed with old ones), gzip when the browser takes it,
/// and headers that keep the pages to their own origin (a Content-Security-Policy without inline
/// script: whatever users typed is shown as text, and even markup slipped into a page would not run).
public struct WebResponder: Sendable {
    /// What to send.
    public struct Response: Sendable, Equatable {
        public var status: Int
        public var contentType: String
        public var body: [UInt8]
        public var headers: [(String, String)]

        public static func == (a: Response, b: Response) -> Bool {
            a.status == b.status && a.contentType == b.contentType && a.body == b.body && a.headers.elementsEqual(b.headers, by: ==)
        }
    }

    public static let contentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        + "connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

    static let securityHeaders = [
        ("Content-Security-Policy", contentSecurityPolicy),
        ("X-Content-Type-Options", "nosniff"),
        ("Referrer-Policy", "no-referrer"),
        ("Cross-Origin-Opener-Policy", "same-origin"),
        ("Permissions-Policy", "geolocation=(self), camera=(), microphone=()"),
    ]

    /// Where the files come from: read once at start-up, or (`web.root`, while working on the
    /// pages) read again from a directory at each request.
    public enum Source: Sendable {
        case fixed(WebAssets)
        case directory(URL)
    }

    public let source: Source

    public init(_ source: Source) { self.source = source }

    /// The answer to `method path` with the request's `Accept-Encoding` and `If-None-Match`;
    /// nil when no file is there (the caller answers 404 as for any unknown path).
    public func respond(method: String, path: String, acceptEncoding: String?, ifNoneMatch: String?) -> Response? {
        let assets: WebAssets
        switch source {
        case .fixed(let fixed): assets = fixed
        case .directory(let url):
            do { assets = try WebAssets(directory: url) } catch {
                return Response(status: 500, contentType: "text/plain; charset=utf-8", body: Array("\(error)\n".utf8), headers: [])
            }
        }
        guard let asset = assets.asset(for: path) else { return nil }
        guard method == "GET" || method == "HEAD" else {
            return Response(status: 405, contentType: "text/plain; charset=utf-8", body: Array("use GET\n".utf8), headers: [("Allow", "GET, HEAD")])
        }
        var headers = [("ETag", asset.etag), ("Cache-Control", "no-cache"), ("Vary", "Accept-Encoding")] + Self.securityHeaders
        if let ifNoneMatch, Self.matches(ifNoneMatch, asset.etag) {
            return Response(status: 304, contentType: asset.contentType, body: [], headers: headers)
        }
        var body = asset.bytes
        if let gzipped = asset.gzipped, Self.takesGzip(acceptEncoding) {
            body = gzipped
            headers.append(("Content-Encoding", "gzip"))
        }
        return Response(status: 200, contentType: asset.contentType, body: method == "HEAD" ? [] : body, headers: headers)
    }

    /// Whether an `If-None-Match` list holds `etag` (or `*`); weak forms compare equal (RFC 9110 13.1.2).
    static func matches(_ header: String, _ etag: String) -> Bool {
        header.split(separator: ",").contains { candidate in
            var c = candidate.trimmingCharacters(in: .whitespaces)
            if c.hasPrefix("W/") { c.removeFirst(2) }
            return c == "*" || c == etag
        }
    }

    /// Whether `Accept-Encoding` allows gzip (`gzip;q=0` refuses it).
    static func takesGzip(_ header: String?) -> Bool {
        guard let header else { return false }
        for part in header.split(separator: ",") {
            let fields = part.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
            guard let coding = fields.first, coding == "gzip" || coding == "x-gzip" || coding == "*" else { continue }
            let q = fields.dropFirst().first { $0.hasPrefix("q=") }.flatMap { Double($0.dropFirst(2)) } ?? 1
            return q > 0
        }
        return false
    }
}
