import DomainSeam
import Foundation
import Realtime

/// How an operator request forwarded to the node holding its endpoint's lease (`ClusterOp.http`),
/// and the response it gets there, travel over the link: the request as
/// `{method, target, headers: [[name, value]], body: base64}`, the response as
/// `{status, contentType, headers, body: base64}`. Both ends read and write them here.
public enum ForwardedHTTP {
    /// The request's arguments.
    public static func arguments(method: String, target: String, headers: [(name: String, value: String)], body: [UInt8]) -> JSON {
        ["method": .string(method), "target": .string(target), "headers": pairs(headers.map { ($0.name, $0.value) }),
         "body": .string(Data(body).base64EncodedString())]
    }

    /// The request's headers and body read back from its arguments (method and target are plain
    /// fields, read with their limits by the serving end).
    public static func request(_ args: Args) throws(ProtocolError) -> (headers: [(name: String, value: String)], body: [UInt8]) {
        guard case .string(let text)? = args.value["body"], let body = Data(base64Encoded: text) else {
            throw .badRequest("field body must be base64")
        }
        return (headers(args.value["headers"]).map { (name: $0.0, value: $0.1) }, [UInt8](body))
    }

    /// A response as the serving end sends it back.
    public static func json(_ response: HTTPResponse) -> JSON {
        ["status": .int(response.status), "contentType": .string(response.contentType), "headers": pairs(response.headers),
         "body": .string(Data(response.body).base64EncodedString())]
    }

    /// The response read back; nil if `json` is not one.
    public static func response(_ json: JSON) -> HTTPResponse? {
        guard case .int(let status)? = json["status"], case .string(let type)? = json["contentType"],
              case .string(let text)? = json["body"], let bytes = Data(base64Encoded: text) else { return nil }
        return HTTPResponse(status: status, contentType: type, body: [UInt8](bytes), headers: headers(json["headers"]))
    }

    private static func pairs(_ headers: [(String, String)]) -> JSON {
        .array(headers.map { .array([.string($0.0), .string($0.1)]) })
    }

    /// `[[name, value]]`; anything else in the list is skipped.
    private static func headers(_ json: JSON?) -> [(String, String)] {
        guard case .array(let list)? = json else { return [] }
        var out: [(String, String)] = []
        for case .array(let pair) in list where pair.count == 2 {
            if case .string(let name) = pair[0], case .string(let value) = pair[1] { out.append((name, value)) }
        }
        return out
    }
}
