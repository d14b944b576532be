import Foundation
import HubbubCrypto

/// The web client's files (`Public/`: pages, scripts, styles, icons), as the server sends them:
/// each read once, with its content type, a strong ETag and, when it shrinks, a gzip copy. The
/// pages need nothing from the internet (a venue's network may have none).
public struct WebAssets: Sendable {
    /// One file, ready to send.
    public struct Asset: Sendable, Equatable {
        /// Its path under the root (`js/hubbub.js`).
        public let path: String
        public let contentType: String
        public let bytes: [UInt8]
        /// The gzip copy, when smaller than the file.
        public let gzipped: [UInt8]?
        /// `"<16 hex digits of its SHA-256>"`.
        public let etag: String
    }

    /// Why the files could not be read.
    public struct LoadError: Error, CustomStringConvertible {
        public let description: String
    }

    private let assets: [String: Asset]

    /// Every file under `directory` (hidden files left out).
    public init(directory: URL) throws {
        let root = directory.standardizedFileURL.resolvingSymlinksInPath()
        guard let walker = FileManager.default.enumerator(at: root, includingPropertiesForKeys: [.isRegularFileKey],
                                                          options: [.skipsHiddenFiles]) else {
            throw LoadError(description: "cannot read the web client's files at \(root.path)")
        }
        var assets: [String: Asset] = [:]
        for case let url as URL in walker {
            guard (try? url.resourceValues(forKeys: [.isRegularFileKey]))?.isRegularFile == true else { continue }
            let full = url.standardizedFileURL.resolvingSymlinksInPath().path
            guard full.hasPrefix(root.path + "/") else { continue }
            let path = String(full.dropFirst(root.path.count + 1))
            let bytes = try [UInt8](Data(contentsOf: url))
            let gzipped = Gzip.compress(bytes)
            assets[path] = Asset(path: path, contentType: Self.contentType(of: path), bytes: bytes,
                                 gzipped: gzipped.count < bytes.count ? gzipped : nil,
                                 etag: "\"" + Digest.sha256(bytes).prefix(8).map { String(format: "%02x", $0) }.joined() + "\"")
        }
        guard assets["index.html"] != nil else { throw LoadError(description: "no index.html among the web client's files at \(root.path)") }
        self.assets = assets
    }

    /// The files built into the server (this target's `Public/`).
    public static func builtIn() throws -> WebAssets {
        guard let url = Bundle.module.url(forResource: "Public", withExtension: nil) else {
            throw LoadError(description: "the server was built without its web client's files (Public/)")
        }
        return try WebAssets(directory: url)
    }

    /// Every file's path.
    public var paths: [String] { assets.keys.sorted() }

    /// The file a request path names: `/` is `index.html`, `/patron` is `patron.html`, `/js/hubbub.js`
    /// itself. Only the files there are: no path leaves the root.
    public func asset(for requestPath: String) -> Asset? {
        guard requestPath.hasPrefix("/") else { return nil }
        let path = String(requestPath.dropFirst())
        if path.isEmpty { return assets["index.html"] }
        return assets[path] ?? (path.contains(".") ? nil : assets[path + ".html"])
    }

    static func contentType(of path: String) -> String {
        switch path.split(separator: ".").last.map({ $0.lowercased() }) {
        case "html": "text/html; charset=utf-8"
        case "js", "mjs": "text/javascript; charset=utf-8"
        case "css": "text/css; charset=utf-8"
        case "svg": "image/svg+xml"
        case "png": "image/png"
        case "ico": "image/x-icon"
        case "json": "application/json"
        case "webmanifest": "application/manifest+json"
        case "txt", "md": "text/plain; charset=utf-8"
        default: "application/octet-stream"
        }
    }
}
