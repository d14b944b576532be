/// A streaming CSV reader (RFC 4180, as GTFS writes it): bytes go in as they arrive, in pieces of
/// any size, and each record comes out once complete, so a `stop_times.txt` of hundreds of
/// megabytes is read in the memory of one record. No I/O: the caller feeds it.
///
/// - Fields are separated by commas; records end with CRLF or LF (a lone CR too).
/// - A field may be quoted: `"a, ""b"""` is `a, "b"`; a quoted field may hold commas and line ends.
/// - A UTF-8 byte order mark before the first field is skipped (spreadsheets write one).
/// - An empty line is skipped (feeds often end with one).
/// - A record that breaks the format (a quote after a field's first byte, text after a closing
///   quote, a field or a record over the limits) is reported with its line and why, and reading
///   goes on with the next line.
public struct CSVReader: Sendable {
    /// Limits on one record (each over it is refused, not read).
    public struct Limits: Sendable, Equatable {
        public var maxFieldBytes = 64 * 1024
        public var maxFields = 256
        public init() {}
    }

    /// What reading a piece produced, in order.
    public enum Event: Equatable, Sendable {
        /// A complete record.
        case record(CSVRecord)
        /// A record refused: the line it started on, and why.
        case refused(line: Int, reason: String)
    }

    /// Where the reader is within a record.
    private enum State: Sendable {
        /// At the start of a field (after a comma, or at a record's start).
        case fieldStart
        /// Inside a field that is not quoted.
        case unquoted
        /// Inside a quoted field.
        case quoted
        /// Just after a quote inside a quoted field: the field's end, or the first of `""`.
        case quoteInQuoted
        /// Skipping the rest of a refused record's line.
        case skipping(reason: String)
    }

    public let limits: Limits
    private var state = State.fieldStart
    private var record = CSVRecord()
    /// The line (1-based) the next byte is on, and the line the current record started on.
    private var line = 1
    private var recordLine = 1
    /// The last byte was a CR: an LF now is the rest of the same line end.
    private var afterCR = false
    /// Bytes of the byte order mark matched so far; nil once past the start.
    private var bom: Int? = 0
    private static let byteOrderMark: [UInt8] = [0xEF, 0xBB, 0xBF]

    public init(limits: Limits = Limits()) { self.limits = limits }

    /// Reads a piece of the text; returns the records it completed (and the refusals).
    public mutating func feed(_ bytes: some Sequence<UInt8>) -> [Event] {
        var out: [Event] = []
        for b in bytes { take(b, &out) }
        return out
    }

    /// The same for bytes in memory (a zip's inflated chunk), faster: inside an unquoted field, the
    /// run of bytes up to the next comma, quote or line end is taken at once (a feed's hundreds of
    /// megabytes are mostly such runs); everything else goes byte by byte, as above.
    public mutating func feed(_ bytes: UnsafeRawBufferPointer) -> [Event] {
        var out: [Event] = []
        var i = 0
        let n = bytes.count
        while i < n {
            if bom == nil, case .unquoted = state {
                var end = i
                while end < n {
                    let b = bytes[end]
                    if b == Self.comma || b == Self.cr || b == Self.lf || b == Self.quote { break }
                    end += 1
                }
                if end > i {
                    afterCR = false
                    append(UnsafeRawBufferPointer(rebasing: bytes[i..<end]))
                    i = end
                    continue
                }
            }
            take(bytes[i], &out)
            i += 1
        }
        return out
    }

    /// The text has ended: a last record without a line end is complete; a quoted field left open
    /// is refused.
    public mutating func finish() -> [Event] {
        var out: [Event] = []
        if let matched = bom, matched > 0 { // the text was a partial byte order mark
            bom = nil
            for b in Self.byteOrderMark.prefix(matched) { step(b, &out) }
        }
        switch state {
        case .quoted:
            out.append(.refused(line: recordLine, reason: "a quoted field is not closed before the end of the text"))
        case .skipping(let reason):
            out.append(.refused(line: recordLine, reason: reason))
        case .fieldStart where !record.started:
            break
        case .fieldStart:
            record.addEmptyField()
            endRecord(&out)
        case .unquoted, .quoteInQuoted:
            record.endField()
            endRecord(&out)
        }
        state = .fieldStart
        record.removeAll()
        return out
    }

    private mutating func take(_ b: UInt8, _ out: inout [Event]) {
        guard let matched = bom else { return step(b, &out) }
        if b == Self.byteOrderMark[matched] {
            bom = matched + 1 == Self.byteOrderMark.count ? nil : matched + 1
            return
        }
        bom = nil // not a mark after all: what matched of it is text
        for pending in Self.byteOrderMark.prefix(matched) { step(pending, &out) }
        step(b, &out)
    }

    private static let comma: UInt8 = 0x2C, quote: UInt8 = 0x22, cr: UInt8 = 0x0D, lf: UInt8 = 0x0A

    private mutating func step(_ b: UInt8, _ out: inout [Event]) {
        let continuesCRLF = afterCR && b == Self.lf
        afterCR = b == Self.cr
        switch state {
        case .skipping(let reason):
            guard b == Self.cr || b == Self.lf else { return }
            if continuesCRLF { return }
            out.append(.refused(line: recordLine, reason: reason))
            record.removeAll()
            newLine()
        case .fieldStart:
            if continuesCRLF { return } // the line already ended at its CR
            switch b {
            case Self.quote:
                beginRecordIfNeeded()
                record.startField()
                state = .quoted
            case Self.comma:
                beginRecordIfNeeded()
                record.addEmptyField()
                checkFieldCount()
            case Self.cr, Self.lf:
                if record.started { // a record ending in a comma: its last field is empty
                    record.addEmptyField()
                    endRecord(&out)
                } // else an empty line, skipped
                newLine()
            default:
                beginRecordIfNeeded()
                record.startField()
                append(b)
                if case .fieldStart = state { state = .unquoted }
            }
        case .unquoted:
            switch b {
            case Self.comma, Self.cr, Self.lf:
                fieldEnded(by: b, &out)
            case Self.quote:
                refuse("a quote inside field \(record.fieldCount), which does not start with one")
            default:
                append(b)
            }
        case .quoted:
            if b == Self.quote {
                state = .quoteInQuoted
                return
            }
            // A line end inside the field: kept as it is, counted once (CRLF at its CR).
            if b == Self.cr || (b == Self.lf && !continuesCRLF) { line += 1 }
            append(b)
        case .quoteInQuoted:
            switch b {
            case Self.quote:
                state = .quoted
                append(Self.quote)
            case Self.comma, Self.cr, Self.lf:
                fieldEnded(by: b, &out)
            default:
                refuse("text after the closing quote of field \(record.fieldCount)")
            }
        }
    }

    /// A comma or a line end after a field: the field ends, and at a line end the record too.
    private mutating func fieldEnded(by b: UInt8, _ out: inout [Event]) {
        record.endField()
        if b == Self.comma {
            state = .fieldStart
            checkFieldCount()
        } else {
            endRecord(&out)
            newLine()
        }
    }

    private mutating func beginRecordIfNeeded() {
        if !record.started { recordLine = line }
    }

    private mutating func append(_ b: UInt8) {
        if record.currentFieldBytes >= limits.maxFieldBytes {
            refuse("field \(record.fieldCount) is longer than \(limits.maxFieldBytes) bytes")
        } else {
            record.append(b)
        }
    }

    /// A run of a field's bytes: all kept, or the record refused as soon as the field is too long.
    private mutating func append(_ run: UnsafeRawBufferPointer) {
        if record.currentFieldBytes + run.count > limits.maxFieldBytes {
            refuse("field \(record.fieldCount) is longer than \(limits.maxFieldBytes) bytes")
        } else {
            record.append(contentsOf: run)
        }
    }

    private mutating func checkFieldCount() {
        if record.fieldCount > limits.maxFields { refuse("more than \(limits.maxFields) fields") }
    }

    private mutating func refuse(_ reason: String) {
        state = .skipping(reason: reason)
    }

    private mutating func newLine() {
        line += 1
        state = .fieldStart
    }

    private mutating func endRecord(_ out: inout [Event]) {
        if record.count > limits.maxFields {
            out.append(.refused(line: recordLine, reason: "more than \(limits.maxFields) fields"))
        } else {
            var done = record
            done.line = recordLine
            out.append(.record(done))
        }
        record.removeAll()
    }
}

/// One record: its fields' bytes (unquoted), kept in one buffer.
public struct CSVRecord: Equatable, Sendable {
    /// The line it started on (1-based).
    public internal(set) var line = 0
    private var bytes: [UInt8] = []
    /// Where each field ends in `bytes` (a field starts where the previous one ended).
    private var ends: [Int] = []
    /// A field is being read (started, not yet ended).
    private var openField = false

    public init() {}

    /// A record of these fields (tests).
    public init(_ fields: [String], line: Int = 0) {
        self.line = line
        for f in fields {
            bytes += Array(f.utf8)
            ends.append(bytes.count)
        }
    }

    public var count: Int { ends.count }
    /// Whether any of it has been read.
    fileprivate var started: Bool { !ends.isEmpty || openField }
    /// Fields read or being read.
    fileprivate var fieldCount: Int { ends.count + (openField ? 1 : 0) }
    fileprivate var currentFieldBytes: Int { bytes.count - (ends.last ?? 0) }

    fileprivate mutating func startField() { openField = true }
    fileprivate mutating func append(_ b: UInt8) { bytes.append(b) }
    fileprivate mutating func append(contentsOf run: UnsafeRawBufferPointer) { bytes.append(contentsOf: run) }
    fileprivate mutating func endField() {
        ends.append(bytes.count)
        openField = false
    }
    fileprivate mutating func addEmptyField() { endField() }
    fileprivate mutating func removeAll() {
        bytes.removeAll(keepingCapacity: true)
        ends.removeAll(keepingCapacity: true)
        openField = false
    }

    /// Field `i`'s bytes.
    public func bytes(_ i: Int) -> ArraySlice<UInt8> {
        bytes[(i == 0 ? 0 : ends[i - 1])..<ends[i]]
    }

    /// Field `i` as text (invalid UTF-8 repaired), nil past the record's end.
    public subscript(i: Int) -> String? {
        i < ends.count ? String(decoding: bytes(i), as: UTF8.self) : nil
    }

    /// Every field as text.
    public var fields: [String] { (0..<count).map { self[$0]! } }
}
