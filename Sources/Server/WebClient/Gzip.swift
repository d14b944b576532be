import CHubbubZlib

/// gzip (RFC 1952) of a whole buffer, for the web client's files: compressed once at start-up.
enum Gzip {
    static func compress(_ bytes: [UInt8], level: Int32 = 9) -> [UInt8] {
        var stream = z_stream()
        // windowBits 15 + 16: a gzip header and trailer around the deflate stream.
        guard hubbub_deflateInit2(&stream, level, 15 + 16, 9) == Z_OK else { return bytes }
        defer { deflateEnd(&stream) }
        var out = [UInt8](repeating: 0, count: Int(deflateBound(&stream, uLong(bytes.count))) + 32)
        let written: Int? = bytes.withUnsafeBufferPointer { input in
            out.withUnsafeMutableBufferPointer { output in
                stream.next_in = UnsafeMutablePointer(mutating: input.baseAddress)
                stream.avail_in = uInt(input.count)
                stream.next_out = output.baseAddress
                stream.avail_out = uInt(output.count)
                guard deflate(&stream, Z_FINISH) == Z_STREAM_END else { return nil }
                return output.count - Int(stream.avail_out)
            }
        }
        guard let written else { return bytes }
        return Array(out.prefix(written))
    }
}
