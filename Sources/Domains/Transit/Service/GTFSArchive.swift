import CHubbubZlib
import Foundation
import Transit
import ZIPFoundation

/// A GTFS feed's zip read into a network: the archive (ZIPFoundation) gives each file's bytes as
/// they inflate, `CSVReader` makes records of them and `GTFSReader` keeps what the network needs,
/// so nothing of a file is held whole and nothing is written to disk.
///
/// Refused whole, before anything is read: an archive that is not a zip, an entry whose name
/// leaves the archive's folder (`../`, `/`, `\`, a symbolic link), a missing required file, files
/// that declare more than `maxUncompressedBytes` together. Refused while reading: files that
/// inflate to more than that (whatever they declared: a zip bomb), or that fail their checksum.
/// Bad rows are the reader's rejects: the rest of the feed is kept.
struct GTFSArchive {
    struct Limits: Sendable, Equatable {
        /// The most bytes the files read may inflate to, together.
        var maxUncompressedBytes = 4 << 30
        var reader = GTFSReader.Limits()
        var csv = CSVReader.Limits()
    }

    struct Refusal: Error, Equatable {
        var reason: String
        init(_ reason: String) { self.reason = reason }
    }

    /// The files a feed must have (`agency.txt` is read when present: it gives the texts' language).
    static let required: [GTFSFile] = [.stops, .routes, .trips, .stopTimes]

    /// Reads the zip at `url`; returns the reader with the network and its rejects.
    static func read(_ url: URL, limits: Limits) throws(Refusal) -> GTFSReader {
        let archive: Archive
        do {
            archive = try Archive(url: url, accessMode: .read)
        } catch {
            throw Refusal("the body is not a zip archive (\(error))")
        }
        var entries: [GTFSFile: Entry] = [:]
        for entry in archive {
            let path = entry.path
            let parts = path.split(separator: "/", omittingEmptySubsequences: false)
            if path.hasPrefix("/") || path.contains("\\") || parts.contains("..") || entry.type == .symlink {
                throw Refusal("entry \(path.debugDescription) would leave the archive's folder (absolute, .. or a link): refused")
            }
            if let file = GTFSFile(rawValue: path), entry.type == .file { entries[file] = entry }
        }
        if let missing = required.first(where: { entries[$0] == nil }) {
            throw Refusal("no \(missing.rawValue) at the root of the zip")
        }
        let declared = entries.values.reduce(UInt64(0)) { $0 + $1.uncompressedSize }
        guard declared <= UInt64(limits.maxUncompressedBytes) else {
            throw Refusal("its files declare \(declared) bytes uncompressed, more than \(limits.maxUncompressedBytes) (routes.gtfsMaxUncompressedBytes)")
        }
        var reader = GTFSReader(limits: limits.reader)
        var inflated = 0
        for file in GTFSFile.allCases {
            guard let entry = entries[file] else { continue }
            reader.begin(file)
            var csv = CSVReader(limits: limits.csv)
            func take(_ events: [CSVReader.Event]) {
                for event in events {
                    switch event {
                    case .record(let record): reader.take(record)
                    case .refused(let line, let reason): reader.refused(line: line, reason: reason)
                    }
                }
            }
            // The checksum is zlib's (ZIPFoundation's own, on Linux, is a byte loop: a tenth of the read).
            var crc = crc32(0, nil, 0)
            do {
                _ = try archive.extract(entry, bufferSize: 256 * 1024, skipCRC32: true) { data in
                    inflated += data.count
                    guard inflated <= limits.maxUncompressedBytes else { throw Inflation.beyondLimit }
                    data.withUnsafeBytes { bytes in
                        crc = crc32(crc, bytes.bindMemory(to: UInt8.self).baseAddress, uInt(bytes.count))
                        take(csv.feed(bytes))
                    }
                }
                guard UInt32(crc) == entry.checksum else { throw Inflation.damaged }
            } catch Inflation.damaged {
                throw Refusal("\(file.rawValue) is damaged: its checksum does not match")
            } catch Inflation.beyondLimit {
                throw Refusal("\(file.rawValue) inflates beyond \(limits.maxUncompressedBytes) bytes (routes.gtfsMaxUncompressedBytes), whatever it declared: refused as a zip bomb")
            } catch {
                throw Refusal("\(file.rawValue) could not be read from the zip (\(error))")
            }
            take(csv.finish())
        }
        return reader
    }

    private enum Inflation: Error { case beyondLimit, damaged }
}
