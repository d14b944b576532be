import COpenSSL

/// Hashes, MACs, key derivation and randomness, all from OpenSSL's libcrypto.
public enum Digest {
    /// SHA-1 of `bytes` (20 bytes). Used only where a protocol demands it (Sec-WebSocket-Accept).
    public static func sha1<Bytes: Collection<UInt8>>(_ bytes: Bytes) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: Int(SHA_DIGEST_LENGTH))
        let input = Array(bytes)
        input.withUnsafeBufferPointer { inp in
            out.withUnsafeMutableBufferPointer { o in
                _ = SHA1(inp.baseAddress, inp.count, o.baseAddress)
            }
        }
        return out
    }

    /// SHA-256 of `bytes` (32 bytes).
    public static func sha256<Bytes: Collection<UInt8>>(_ bytes: Bytes) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: Int(SHA256_DIGEST_LENGTH))
        let input = Array(bytes)
        input.withUnsafeBufferPointer { inp in
            out.withUnsafeMutableBufferPointer { o in
                _ = SHA256(inp.baseAddress, inp.count, o.baseAddress)
            }
        }
        return out
    }

    /// HMAC-SHA-256 of `message` under `key` (32 bytes).
    public static func hmacSHA256(key: [UInt8], message: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        key.withUnsafeBufferPointer { k in
            message.withUnsafeBufferPointer { m in
                out.withUnsafeMutableBufferPointer { o in
                    _ = HMAC(EVP_sha256(), k.baseAddress, Int32(k.count), m.baseAddress, m.count, o.baseAddress, &length)
                }
            }
        }
        return Array(out.prefix(Int(length)))
    }

    /// PBKDF2-HMAC-SHA-256: a slow salted key derivation for passwords.
    public static func pbkdf2SHA256(password: [UInt8], salt: [UInt8], iterations: Int, length: Int = 32) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: length)
        password.withUnsafeBufferPointer { p in
            salt.withUnsafeBufferPointer { s in
                out.withUnsafeMutableBufferPointer { o in
                    p.withMemoryRebound(to: CChar.self) { pc in
                        _ = PKCS5_PBKDF2_HMAC(pc.baseAddress, Int32(pc.count), s.baseAddress, Int32(s.count),
                                              Int32(iterations), EVP_sha256(), Int32(length), o.baseAddress)
                    }
                }
            }
        }
        return out
    }

    /// `count` cryptographically random bytes.
    public static func randomBytes(_ count: Int) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: count)
        out.withUnsafeMutableBufferPointer { o in
            if RAND_bytes(o.baseAddress, Int32(count)) != 1 {
                // RAND_bytes fails only when the OS entropy source is broken; fall back to the system RNG.
                var rng = SystemRandomNumberGenerator()
                for i in 0..<count { o[i] = UInt8.random(in: .min ... .max, using: &rng) }
            }
        }
        return out
    }

    /// `length` random lowercase letters and digits, without the easily confused l, 0 and 1 (ids
    /// and room epochs people may read or type).
    public static func randomToken(length: Int) -> String {
        let alphabet = Array("abcdefghijkmnopqrstuvwxyz23456789")
        return String(randomBytes(length).map { alphabet[Int($0) % alphabet.count] })
    }

    /// Compares two byte strings in time independent of where they differ.
    public static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        var diff: UInt8 = 0
        for i in 0..<a.count { diff |= a[i] ^ b[i] }
        return diff == 0
    }
}
