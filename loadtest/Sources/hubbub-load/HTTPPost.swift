import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A minimal blocking HTTP/1.1 POST over a plain TCP socket: one request per connection
/// (`Connection: close`), the body with its `Content-Length`, the answer read to the end.
/// Foundation's URLSession is not dependable on Linux, and a provider posting a burst every few
/// seconds needs nothing more. Runs on whatever thread calls it (the provider's own).
struct HTTPPost {
    let host: String
    let port: Int
    var timeoutSeconds = 10.0

    struct Response {
        var status: Int
        var body: [UInt8]
    }

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    func post(path: String, headers: [(String, String)], body: [UInt8]) throws(Failure) -> Response {
        let fd = try open()
        defer { close(fd) }
        var head = "POST \(path) HTTP/1.1\r\nHost: \(host):\(port)\r\nContent-Type: application/json\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        head += "Content-Length: \(body.count)\r\nConnection: close\r\n\r\n"
        try write(fd, Array(head.utf8) + body)
        var answer: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n == 0 { break }
            if n < 0 {
                if errno == EINTR { continue }
                throw Failure(description: "reading the answer: errno \(errno)")
            }
            answer.append(contentsOf: chunk[0..<n])
        }
        return try Self.parse(answer)
    }

    /// Status and body of a response read to the end (a `Content-Length` cuts the body; chunked
    /// bodies are not expected from Hubbub and are refused).
    static func parse(_ answer: [UInt8]) throws(Failure) -> Response {
        guard let end = answer.firstRange(of: Array("\r\n\r\n".utf8)) else { throw Failure(description: "no HTTP response head") }
        let head = String(decoding: answer[..<end.lowerBound], as: UTF8.self)
        let lines = head.split(separator: "\r\n")
        let status = lines.first.flatMap { line -> Int? in
            let parts = line.split(separator: " ")
            return parts.count >= 2 && parts[0].hasPrefix("HTTP/1.") ? Int(parts[1]) : nil
        }
        guard let status else { throw Failure(description: "bad status line") }
        var body = Array(answer[end.upperBound...])
        for line in lines.dropFirst() {
            let kv = line.split(separator: ":", maxSplits: 1)
            guard kv.count == 2 else { continue }
            let name = kv[0].lowercased(), value = kv[1].trimmingCharacters(in: .whitespaces)
            if name == "transfer-encoding", value.lowercased() != "identity" { throw Failure(description: "chunked answer") }
            if name == "content-length", let n = Int(value), n <= body.count { body = Array(body[..<n]) }
        }
        return Response(status: status, body: body)
    }

    private func open() throws(Failure) -> Int32 {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        let rc = getaddrinfo(host, String(port), &hints, &list)
        guard rc == 0, let first = list else { throw Failure(description: "cannot resolve \(host): \(String(cString: gai_strerror(rc)))") }
        defer { freeaddrinfo(list) }
        var next: UnsafeMutablePointer<addrinfo>? = first
        var lastErrno: Int32 = 0
        while let a = next {
            next = a.pointee.ai_next
            let fd = socket(a.pointee.ai_family, a.pointee.ai_socktype, a.pointee.ai_protocol)
            if fd < 0 { lastErrno = errno; continue }
            var tv = timeval(tv_sec: Int(timeoutSeconds), tv_usec: Int((timeoutSeconds - timeoutSeconds.rounded(.down)) * 1_000_000))
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
            setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
            if connect(fd, a.pointee.ai_addr, a.pointee.ai_addrlen) == 0 { return fd }
            lastErrno = errno
            close(fd)
        }
        throw Failure(description: "connect to \(host):\(port) failed: errno \(lastErrno)")
    }

    private func write(_ fd: Int32, _ bytes: [UInt8]) throws(Failure) {
        var off = 0
        while off < bytes.count {
            let n = bytes[off...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n < 0, errno == EINTR { continue }
            guard n > 0 else { throw Failure(description: "sending the request: errno \(errno)") }
            off += n
        }
    }
}
