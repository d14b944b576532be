import CLibXML2
#if canImport(Glibc)
import Glibc
#endif

/// Receives a streamed document's elements, in order, as the parser meets them.
public protocol XMLElementHandler: AnyObject {
    /// An element opened, with its attributes (by local name; namespaces are not used by feeds).
    func start(_ name: String, attributes: XMLAttributes, line: Int)
    /// An element closed; `text` is the character data (CDATA included) directly inside it since
    /// its last child closed (for a leaf element: all of its text), with no trimming; empty when
    /// the handler did not want it (`wantsText`).
    func end(_ name: String, text: XMLText)
    /// Whether the text that comes next is wanted, asked after each `start` and `end`: a handler
    /// skipping what it does not read (a feed's long descriptions) spares copying it. Its length
    /// still counts against `Limits.maxTextBytes`.
    var wantsText: Bool { get }
}

extension XMLElementHandler {
    public var wantsText: Bool { true }
}

/// An element's attributes as the parser holds them, looked up by name without building a
/// dictionary (most elements' attributes are never asked for). Valid only during the `start` call
/// it is given to: never keep it.
public struct XMLAttributes {
    /// libxml2's SAX2 array: five pointers per attribute (local name, prefix, URI, value start, value end).
    let raw: UnsafeMutablePointer<UnsafePointer<xmlChar>?>?
    public let count: Int

    /// The value of attribute `name` (its local name), if present (invalid UTF-8 repaired).
    public subscript(name: StaticString) -> String? {
        guard let raw else { return nil }
        for i in 0..<count {
            guard let local = raw[i * 5], let start = raw[i * 5 + 3], let end = raw[i * 5 + 4],
                  strcmp(UnsafeRawPointer(local).assumingMemoryBound(to: CChar.self), UnsafeRawPointer(name.utf8Start).assumingMemoryBound(to: CChar.self)) == 0 else { continue }
            return String(decoding: UnsafeBufferPointer(start: start, count: end - start), as: UTF8.self)
        }
        return nil
    }

    /// Every attribute by name (for tools and tests; handlers on a hot path ask by name).
    public var all: [String: String] {
        var out: [String: String] = [:]
        guard let raw else { return out }
        for i in 0..<count {
            guard let local = raw[i * 5], let start = raw[i * 5 + 3], let end = raw[i * 5 + 4] else { continue }
            out[String(cString: local)] = String(decoding: UnsafeBufferPointer(start: start, count: end - start), as: UTF8.self)
        }
        return out
    }
}

/// An element's text as the parser holds it, made into a `String` only by a handler that wants it
/// (a feed's long descriptions are never copied). Valid only during the `end` call it is given to:
/// never keep it.
public struct XMLText {
    let bytes: UnsafeBufferPointer<UInt8>

    init(_ bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

    /// The text (invalid UTF-8 repaired).
    public var string: String { String(decoding: bytes, as: UTF8.self) }
    public var isEmpty: Bool { bytes.isEmpty }
    public var count: Int { bytes.count }
}

/// A streamed XML parser over libxml2's push interface (SAX2): bytes go in as they arrive, and
/// elements come out to a handler, so a feed of any size is read in constant memory.
///
/// Safe for hostile input by construction:
/// - a DTD (`<!DOCTYPE`), hence any entity definition, external entity or billion-laughs
///   expansion, stops the parse with an error before any of it is processed;
/// - no network or file is ever read (`XML_PARSE_NONET`, and no entity is resolved);
/// - nesting deeper than `Limits.maxDepth` and text longer than `Limits.maxTextBytes` in one
///   element stop it too;
/// - the text is UTF-8 whatever the document declares (a UTF-16 document with its byte order
///   mark is read as such): bytes that are not are an error, never a guess.
///
/// Not thread-safe: one caller feeds it, in order.
public final class StreamingXMLParser {
    /// Limits on what a document may hold.
    public struct Limits: Sendable, Equatable {
        /// Deepest element nesting.
        public var maxDepth = 32
        /// Most bytes of text inside one element.
        public var maxTextBytes = 64 * 1024
        /// Most attributes on one element.
        public var maxAttributes = 32

        public init() {}
    }

    /// Why a document was refused: where (line, column, bytes consumed), and what.
    public struct Failure: Error, Equatable, Sendable, CustomStringConvertible {
        public var line: Int
        public var column: Int
        /// Bytes of the document read up to the error.
        public var offset: Int
        public var message: String
        public var description: String { "line \(line), column \(column) (byte \(offset)): \(message)" }
    }

    public let limits: Limits
    private let handler: any XMLElementHandler
    private var context: xmlParserCtxtPtr?
    private var sax = xmlSAXHandler()
    /// The first error met (libxml2's or a limit's); the parse stops there.
    private var failure: Failure?
    private var depth = 0
    private var text: [UInt8] = []
    /// Bytes of text met since the last start or end (kept in `text` only while `collecting`).
    private var textBytes = 0
    private var collecting = true
    /// Bytes handed to libxml2 so far (its own count may lag while it buffers).
    private var fed = 0
    private var finished = false

    public init(handler: any XMLElementHandler, limits: Limits = .init()) {
        self.handler = handler
        self.limits = limits
        sax.initialized = UInt32(XML_SAX2_MAGIC)
        sax.startElementNs = Self.onStart
        sax.endElementNs = Self.onEnd
        sax.characters = Self.onText
        sax.cdataBlock = Self.onText
        sax.internalSubset = Self.onDTD
        sax.externalSubset = Self.onDTD
        sax.entityDecl = Self.onEntityDecl
        sax.getEntity = Self.noEntity
        sax.getParameterEntity = Self.noEntity
        sax.resolveEntity = Self.noInput
        sax.serror = Self.onError
    }

    deinit {
        if let context { xmlFreeParserCtxt(context) }
    }

    /// Parses the next piece of the document.
    public func feed(_ bytes: UnsafeRawBufferPointer) throws(Failure) {
        guard !finished else { return }
        if let failure { throw failure }
        guard !bytes.isEmpty else { return }
        var rest = bytes[...]
        if context == nil {
            // libxml2 wants the first bytes (up to 4, for the encoding) when the context is made.
            let head = rest.prefix(4)
            try create(Array(head))
            rest = rest.dropFirst(head.count)
            fed += head.count
        }
        // xmlParseChunk takes an Int32 length: hand over very large pieces in parts.
        while !rest.isEmpty {
            let piece = UnsafeRawBufferPointer(rebasing: rest.prefix(1 << 30))
            let code = xmlParseChunk(context, piece.baseAddress?.assumingMemoryBound(to: CChar.self), Int32(piece.count), 0)
            fed += piece.count
            rest = rest.dropFirst(piece.count)
            try check(code)
        }
    }

    /// The document is complete: anything left open or cut off is an error.
    public func finish() throws(Failure) {
        guard !finished else { return }
        if let failure { throw failure }
        if context == nil { throw Failure(line: 1, column: 1, offset: 0, message: "the body is empty: no XML document") }
        finished = true
        try check(xmlParseChunk(context, nil, 0, 1))
    }

    private func create(_ head: [UInt8]) throws(Failure) {
        let me = Unmanaged.passUnretained(self).toOpaque()
        context = head.withUnsafeBufferPointer { h in
            h.withMemoryRebound(to: CChar.self) { xmlCreatePushParserCtxt(&sax, me, $0.baseAddress, Int32($0.count), nil) }
        }
        guard let context else { throw Failure(line: 1, column: 1, offset: 0, message: "could not start an XML parser") }
        // No network, no entity substitution, no DTD loading (none of XML_PARSE_NOENT,
        // DTDLOAD, DTDATTR, DTDVALID); CDATA arrives as text. The declared encoding is ignored: the
        // document is UTF-8 (or UTF-16 by its byte order mark), since libxml2's converters for
        // other encodings (iconv's stateful ones, UTF-7) read a document differently depending on
        // where its pieces were cut (found by the fuzzer); invalid UTF-8 is then an error.
        xmlCtxtUseOptions(context, Int32(XML_PARSE_NONET.rawValue | XML_PARSE_NOCDATA.rawValue | XML_PARSE_IGNORE_ENC.rawValue))
        try check(0)
    }

    private func check(_ code: Int32) throws(Failure) {
        if let failure { throw failure }
        if code != 0 {
            let f = fail("not well-formed XML (libxml2 error \(code))")
            throw f
        }
    }

    /// Records the first failure and stops the parser.
    @discardableResult
    private func fail(_ message: String, line: Int? = nil, column: Int? = nil) -> Failure {
        if let failure { return failure }
        let f = Failure(line: line ?? currentLine, column: column ?? currentColumn, offset: consumed, message: message)
        failure = f
        if let context { xmlStopParser(context) }
        return f
    }

    private var currentLine: Int { context.map { Int(xmlSAX2GetLineNumber($0)) } ?? 1 }
    private var currentColumn: Int { context.map { Int(xmlSAX2GetColumnNumber($0)) } ?? 1 }
    private var consumed: Int {
        guard let context else { return 0 }
        let n = Int(xmlByteConsumed(context))
        return n >= 0 ? n : fed
    }

    // MARK: SAX callbacks (C function pointers: the parser comes back through `ctx`)

    private static func parser(_ ctx: UnsafeMutableRawPointer?) -> StreamingXMLParser {
        Unmanaged<StreamingXMLParser>.fromOpaque(ctx!).takeUnretainedValue()
    }

    private static let onStart: startElementNsSAX2Func = { ctx, localname, _, _, _, _, count, _, attributes in
        let p = parser(ctx)
        guard p.failure == nil, let localname else { return }
        p.depth += 1
        guard p.depth <= p.limits.maxDepth else {
            p.fail("elements nested deeper than \(p.limits.maxDepth)")
            return
        }
        guard Int(count) <= p.limits.maxAttributes else {
            p.fail("more than \(p.limits.maxAttributes) attributes on one element")
            return
        }
        p.text.removeAll(keepingCapacity: true)
        p.textBytes = 0
        p.handler.start(String(cString: localname), attributes: XMLAttributes(raw: attributes, count: Int(count)), line: p.currentLine)
        p.collecting = p.handler.wantsText
    }

    private static let onEnd: endElementNsSAX2Func = { ctx, localname, _, _ in
        let p = parser(ctx)
        guard p.failure == nil, let localname else { return }
        p.depth -= 1
        let name = String(cString: localname)
        p.text.withUnsafeBufferPointer { p.handler.end(name, text: XMLText($0)) }
        p.text.removeAll(keepingCapacity: true)
        p.textBytes = 0
        p.collecting = p.handler.wantsText
    }

    private static let onText: charactersSAXFunc = { ctx, bytes, length in
        let p = parser(ctx)
        guard p.failure == nil, let bytes, length > 0 else { return }
        p.textBytes += Int(length)
        guard p.textBytes <= p.limits.maxTextBytes else {
            p.fail("more than \(p.limits.maxTextBytes) bytes of text in one element")
            return
        }
        if p.collecting { p.text.append(contentsOf: UnsafeBufferPointer(start: bytes, count: Int(length))) }
    }

    private static let onDTD: internalSubsetSAXFunc = { ctx, _, _, _ in
        parser(ctx).fail("a DTD (<!DOCTYPE ...>) is not allowed: feeds may define no entities")
    }

    private static let onEntityDecl: entityDeclSAXFunc = { ctx, _, _, _, _, _ in
        parser(ctx).fail("entity definitions are not allowed")
    }

    /// No entity is ever looked up (the predefined ones, &amp; and the like, are libxml2's own).
    private static let noEntity: getEntitySAXFunc = { _, _ in nil }

    /// No external input is ever opened.
    private static let noInput: resolveEntitySAXFunc = { ctx, _, _ in
        parser(ctx).fail("external entities are not allowed")
        return nil
    }

    private static let onError: xmlStructuredErrorFunc = { ctx, error in
        guard let ctx, let error, error.pointee.level.rawValue >= XML_ERR_ERROR.rawValue else { return }
        let message = error.pointee.message.map { String(cString: $0) } ?? "XML error \(error.pointee.code)"
        parser(ctx).fail(message.trimmingSuffix(), line: Int(error.pointee.line), column: Int(error.pointee.int2))
    }
}

extension String {
    /// Without the trailing newline libxml2 ends its messages with.
    fileprivate func trimmingSuffix() -> String {
        var s = self
        while s.last == "\n" || s.last == " " { s.removeLast() }
        return s
    }
}
