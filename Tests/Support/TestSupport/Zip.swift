import Foundation
import ZIPFoundation

/// A zip made in the test: entries by path (deflated), written to a temporary file and read back.
public func makeZip(_ entries: [(String, String)]) throws -> [UInt8] {
    let url = URL(fileURLWithPath: NSTemporaryDirectory() + "gtfs-\(UUID().uuidString).zip")
    defer { try? FileManager.default.removeItem(at: url) }
    let archive = try Archive(url: url, accessMode: .create)
    for (path, text) in entries {
        let data = Data(text.utf8)
        try archive.addEntry(with: path, type: .file, uncompressedSize: Int64(data.count), compressionMethod: .deflate) { position, size in
            data.subdata(in: Int(position)..<Int(position) + size)
        }
    }
    return Array(try Data(contentsOf: url))
}
