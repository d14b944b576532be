import DomainSeam
import StreamingXML
import Tonight

/// The event feed's reader takes the streamed parser's elements (reading an element's text only
/// for the fields a record keeps).
extension EventFeedReader: XMLElementHandler {
    public func start(_ name: String, attributes: XMLAttributes, line: Int) { start(name, id: attributes["ID"], line: line) }
    public func end(_ name: String, text: XMLText) { end(name, text: { text.string }) }
}

extension IngestReport.Reject {
    /// A feed record refused by the tonight readers.
    init(_ reject: FeedReject) { self.init(record: reject.record, line: reject.line, reason: reject.reason) }
}
