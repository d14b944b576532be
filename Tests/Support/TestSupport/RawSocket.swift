import Foundation
import WebSocket
#if canImport(Glibc)
import Glibc
#endif

/// A blocking TCP client that sends exactly the bytes a test gives it: for handshakes and
/// frames no well-behaved client would send.
public final class RawSocket {
    public let fd: Int32
    private var buffer: [UInt8] = []

    /// Connects to 127.0.0.1:`port`; reads time out after `timeout` seconds.
    public init(port: Int, host: String = "127.0.0.1", timeout: Double = 5) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw TestError("socket() failed") }
        var tv = timeval(tv_sec: Int(timeout), tv_usec: Int((timeout - Double(Int(timeout))) * 1_000_000))
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = in_port_t(UInt16(port).bigEndian)
        inet_pton(AF_INET, host, &addr.sin_addr)
        let rc = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard rc == 0 else {
            Glibc.close(fd)
            throw TestError("connect to \(host):\(port) failed: errno \(errno)")
        }
    }

    private var closed = false

    deinit { if !closed { Glibc.close(fd) } }

    /// Closes the socket now.
    public func close() {
        if !closed { Glibc.close(fd) }
        closed = true
    }

    /// Sends all bytes; false if the peer is gone.
    @discardableResult
    public func send(_ bytes: [UInt8]) -> Bool {
        var off = 0
        while off < bytes.count {
            let n = bytes[off...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n <= 0 { return false }
            off += n
        }
        return true
    }

    public func send(_ text: String) { send(Array(text.utf8)) }

    /// Half-closes: tells the peer we will send nothing more (it may still answer).
    public func shutdownWrite() { Glibc.shutdown(fd, Int32(SHUT_WR)) }

    /// Everything the peer sends until it closes (or the read times out).
    public func readToEnd() -> [UInt8] {
        while fill() {}
        defer { buffer = [] }
        return buffer
    }

    /// Reads more bytes into the buffer; false on EOF, error or timeout.
    private func fill() -> Bool {
        var chunk = [UInt8](repeating: 0, count: 65536)
        let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        if n <= 0 { return false }
        buffer.append(contentsOf: chunk[0..<n])
        return true
    }

    /// Reads an HTTP response head; returns the status code and the header block.
    public func readHTTPHead() -> (status: Int, head: String)? {
        while true {
            if let r = buffer.firstRange(of: Array("\r\n\r\n".utf8)) {
                let head = String(decoding: buffer[..<r.lowerBound], as: UTF8.self)
                buffer.removeSubrange(..<r.upperBound)
                let parts = head.split(separator: " ", maxSplits: 2)
                return (parts.count > 1 ? Int(parts[1]) ?? -1 : -1, head)
            }
            if !fill() { return nil }
        }
    }

    /// Reads a whole HTTP response (head and a Content-Length body): status, head, body.
    public func readHTTPResponse() -> (status: Int, head: String, body: [UInt8])? {
        guard let (status, head) = readHTTPHead() else { return nil }
        let length = head.split(separator: "\r\n").first { $0.lowercased().hasPrefix("content-length:") }
            .flatMap { Int($0.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)) } ?? 0
        while buffer.count < length { if !fill() { return nil } }
        let body = Array(buffer[..<length])
        buffer.removeSubrange(..<length)
        return (status, head, body)
    }

    /// Whether the peer closed the connection (EOF) within the read timeout.
    public func readsEOF() -> Bool {
        while true {
            var chunk = [UInt8](repeating: 0, count: 4096)
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n == 0 { return true }
            if n < 0 { return errno == ECONNRESET }
        }
    }

    /// Performs a WebSocket upgrade on `path`; returns the 101 head or throws.
    public func upgrade(path: String = "/echo", extraHeaders: [String] = []) throws {
        var req = "GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        req += "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
        for h in extraHeaders { req += h + "\r\n" }
        req += "\r\n"
        send(req)
        guard let (status, head) = readHTTPHead(), status == 101 else { throw TestError("upgrade refused") }
        _ = head
    }

    /// Reads the next server frame (unmasked); nil on EOF or timeout.
    public func readFrame() -> (opcode: UInt8, fin: Bool, rsv1: Bool, payload: [UInt8])? {
        while true {
            if buffer.count >= 2 {
                var len = Int(buffer[1] & 0x7F)
                var off = 2
                if len == 126 {
                    guard buffer.count >= 4 else { if !fill() { return nil }; continue }
                    len = Int(buffer[2]) << 8 | Int(buffer[3]); off = 4
                } else if len == 127 {
                    guard buffer.count >= 10 else { if !fill() { return nil }; continue }
                    len = 0
                    for i in 2..<10 { len = len << 8 | Int(buffer[i]) }
                    off = 10
                }
                if buffer.count >= off + len {
                    let frame = (buffer[0] & 0x0F, buffer[0] & 0x80 != 0, buffer[0] & 0x40 != 0, Array(buffer[off..<(off + len)]))
                    buffer.removeSubrange(..<(off + len))
                    return frame
                }
            }
            if !fill() { return nil }
        }
    }

    /// Reads frames until a close frame; returns its code (1005 for none, nil if the connection ended without one).
    public func readCloseCode() -> UInt16? {
        while let f = readFrame() {
            if f.opcode == 0x8 {
                return f.payload.count >= 2 ? UInt16(f.payload[0]) << 8 | UInt16(f.payload[1]) : 1005
            }
        }
        return nil
    }

    /// A masked client frame.
    public static func frame(opcode: UInt8, payload: [UInt8], fin: Bool = true, rsv: UInt8 = 0, masked: Bool = true) -> [UInt8] {
        var out: [UInt8] = [(fin ? 0x80 : 0) | rsv | opcode]
        let maskBit: UInt8 = masked ? 0x80 : 0
        if payload.count < 126 {
            out.append(maskBit | UInt8(payload.count))
        } else if payload.count <= 0xFFFF {
            out.append(maskBit | 126)
            out += [UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)]
        } else {
            out.append(maskBit | 127)
            for i in (0..<8).reversed() { out.append(UInt8((payload.count >> (8 * i)) & 0xFF)) }
        }
        guard masked else { return out + payload }
        let key: [UInt8] = [0x12, 0x34, 0x56, 0x78]
        out += key
        out += payload.enumerated().map { $0.element ^ key[$0.offset & 3] }
        return out
    }
}

/// A failure in test plumbing.
public struct TestError: Error, CustomStringConvertible {
    public var description: String
    public init(_ d: String) { description = d }
}
