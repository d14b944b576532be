import COpenSSL
import WebSocket

/// Why TLS could not be set up or went wrong.
public struct TLSError: Error, CustomStringConvertible, Sendable {
    public var description: String
    init(_ what: String) {
        var text = what
        var code = ERR_get_error()
        while code != 0 {
            var buf = [CChar](repeating: 0, count: 256)
            ERR_error_string_n(code, &buf, buf.count)
            text += ": " + String(decoding: buf.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            code = ERR_get_error()
        }
        description = text
    }
}

/// An OpenSSL context: TLS 1.2 and 1.3 only, no renegotiation, no compression.
/// Thread-safe after creation (OpenSSL's SSL_CTX is shared by every connection).
public final class TLSContext: @unchecked Sendable {
    let ctx: OpaquePointer
    /// Clients only: the server's chain and host name are checked.
    private(set) var verifiesPeer = false

    /// A server context with a PEM certificate chain and private key.
    public static func server(certificatePath: String, privateKeyPath: String) throws -> TLSContext {
        let context = try TLSContext(method: TLS_server_method())
        guard SSL_CTX_use_certificate_chain_file(context.ctx, certificatePath) == 1 else {
            throw TLSError("cannot load certificate \(certificatePath)")
        }
        guard SSL_CTX_use_PrivateKey_file(context.ctx, privateKeyPath, SSL_FILETYPE_PEM) == 1 else {
            throw TLSError("cannot load private key \(privateKeyPath)")
        }
        guard SSL_CTX_check_private_key(context.ctx) == 1 else {
            throw TLSError("private key does not match the certificate")
        }
        _ = hubbub_SSL_CTX_set_session_cache_mode(context.ctx, Int(SSL_SESS_CACHE_SERVER))
        // Bounded session cache and one ticket per handshake: less memory and work per client.
        _ = hubbub_SSL_CTX_sess_set_cache_size(context.ctx, 1024)
        _ = SSL_CTX_set_num_tickets(context.ctx, 1)
        return context
    }

    /// A client context; `verify` checks the server's chain against `caFile` (or the system store).
    public static func client(verify: Bool, caFile: String? = nil) throws -> TLSContext {
        let context = try TLSContext(method: TLS_client_method())
        if verify {
            context.verifiesPeer = true
            SSL_CTX_set_verify(context.ctx, SSL_VERIFY_PEER, nil)
            if let caFile {
                guard SSL_CTX_load_verify_locations(context.ctx, caFile, nil) == 1 else { throw TLSError("cannot load CA file \(caFile)") }
            } else {
                SSL_CTX_set_default_verify_paths(context.ctx)
            }
        } else {
            SSL_CTX_set_verify(context.ctx, SSL_VERIFY_NONE, nil)
        }
        return context
    }

    private init(method: OpaquePointer?) throws {
        guard let ctx = SSL_CTX_new(method) else { throw TLSError("SSL_CTX_new failed") }
        self.ctx = ctx
        _ = hubbub_SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION)
        _ = hubbub_SSL_CTX_set_max_proto_version(ctx, TLS1_3_VERSION)
        _ = hubbub_SSL_CTX_set_options(ctx, hubbub_ssl_options())
        // Frees each connection's record buffers while it is idle: most of TLS's per-connection memory.
        _ = hubbub_SSL_CTX_set_mode(ctx, hubbub_release_buffers_mode())
    }

    deinit { SSL_CTX_free(ctx) }
}

/// One TLS session over memory BIOs: TLS never owns the file descriptor. Ciphertext from the
/// socket goes in with `feedCiphertext`, plaintext comes out of `readPlaintext`; plaintext
/// to send goes in with `writePlaintext` and ciphertext to write comes out of `takeCiphertext`.
final class TLSSession {
    private let ssl: OpaquePointer
    private var readBIO: OpaquePointer
    private var writeBIO: OpaquePointer
    private(set) var handshakeDone = false
    /// A memory BIO keeps the capacity of its largest burst; an idle one bigger than this is
    /// replaced (0: any that has grown at all).
    private static let idleBIOCapacity = 0

    init(context: TLSContext, isServer: Bool, serverName: String? = nil, verifyHost: Bool = false) throws {
        guard let ssl = SSL_new(context.ctx) else { throw TLSError("SSL_new failed") }
        guard let r = TLSSession.memoryBIO(), let w = TLSSession.memoryBIO() else {
            SSL_free(ssl)
            throw TLSError("BIO_new failed")
        }
        SSL_set_bio(ssl, r, w)
        if isServer {
            SSL_set_accept_state(ssl)
        } else {
            if let serverName {
                // SNI is for names only, not IP literals (RFC 6066 §3).
                if !serverName.contains(where: { $0 == ":" }) && !serverName.allSatisfy({ $0.isNumber || $0 == "." }) {
                    _ = hubbub_SSL_set_tlsext_host_name(ssl, serverName)
                }
                if verifyHost { _ = SSL_set1_host(ssl, serverName) }
            }
            SSL_set_connect_state(ssl)
        }
        ERR_clear_error()
        self.ssl = ssl
        self.readBIO = r
        self.writeBIO = w
    }

    private static func memoryBIO() -> OpaquePointer? {
        guard let b = BIO_new(BIO_s_mem()) else { return nil }
        _ = hubbub_BIO_set_mem_eof_return(b, -1)
        return b
    }

    /// Gives back what an idle session holds: OpenSSL's record buffers (about 17 KB, which
    /// `SSL_MODE_RELEASE_BUFFERS` frees only after a read that emptied them; a handshake or a
    /// close can leave them allocated) and the memory BIOs' buffers once they are empty.
    /// Called from the connection's tick, not per record: a busy connection would otherwise free
    /// and regrow its buffers for every message.
    func releaseIdleBuffers() {
        // Refused (and harmless) while a partial record is buffered.
        _ = SSL_free_buffers(ssl)
        if hubbub_BIO_ctrl_pending(readBIO) == 0 && hubbub_BIO_mem_capacity(readBIO) > Self.idleBIOCapacity,
           let fresh = TLSSession.memoryBIO() {
            SSL_set0_rbio(ssl, fresh) // frees the old one
            readBIO = fresh
        }
        if hubbub_BIO_ctrl_pending(writeBIO) == 0 && hubbub_BIO_mem_capacity(writeBIO) > Self.idleBIOCapacity,
           let fresh = TLSSession.memoryBIO() {
            SSL_set0_wbio(ssl, fresh)
            writeBIO = fresh
        }
    }

    /// Ciphertext is waiting to be decrypted: fed and not yet read by OpenSSL, or read into its
    /// record buffer and not yet returned. Without it, `SSL_read` would only answer WANT_READ,
    /// after allocating its read buffer again (OpenSSL 3.0 does so on entry): the buffer an idle
    /// connection would then keep.
    var hasPendingInput: Bool {
        hubbub_BIO_ctrl_pending(readBIO) > 0 || SSL_has_pending(ssl) == 1
    }

    deinit { SSL_free(ssl) } // frees both BIOs too

    /// Outcome of driving the session with new ciphertext.
    enum Progress {
        /// More bytes from the peer are needed.
        case wantMore
        /// The handshake just finished (or had already).
        case ready
        /// A fatal TLS error (bad record, failed handshake); the connection must close.
        case failed(String)
        /// The peer sent close_notify.
        case closed
    }

    func feedCiphertext(_ bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress else { return }
        var offset = 0
        while offset < bytes.count {
            let n = BIO_write(readBIO, base + offset, Int32(bytes.count - offset))
            if n <= 0 { break }
            offset += Int(n)
        }
    }

    /// Advances the handshake.
    func handshake() -> Progress {
        if handshakeDone { return .ready }
        ERR_clear_error() // SSL_get_error reads this thread's queue: start it empty
        let rc = SSL_do_handshake(ssl)
        if rc == 1 {
            handshakeDone = true
            return .ready
        }
        switch SSL_get_error(ssl, rc) {
        case SSL_ERROR_WANT_READ, SSL_ERROR_WANT_WRITE: return .wantMore
        case SSL_ERROR_ZERO_RETURN: return .closed
        default:
            let err = TLSError("TLS handshake failed")
            return .failed(err.description)
        }
    }

    /// Decrypts what is available into `buffer`; returns bytes read, 0 when nothing is ready,
    /// nil when the session failed or was closed by the peer.
    func readPlaintext(into buffer: UnsafeMutableRawBufferPointer) -> Int? {
        ERR_clear_error()
        let n = SSL_read(ssl, buffer.baseAddress, Int32(buffer.count))
        if n > 0 { return Int(n) }
        switch SSL_get_error(ssl, n) {
        case SSL_ERROR_WANT_READ, SSL_ERROR_WANT_WRITE:
            return 0
        default:
            ERR_clear_error()
            return nil
        }
    }

    /// Encrypts plaintext into the write BIO; false on failure.
    func writePlaintext(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard let base = bytes.baseAddress else { return true }
        var offset = 0
        ERR_clear_error()
        while offset < bytes.count {
            let n = SSL_write(ssl, base + offset, Int32(min(bytes.count - offset, 1 << 30)))
            if n <= 0 {
                ERR_clear_error()
                return false
            }
            offset += Int(n)
        }
        return true
    }

    /// Sends close_notify.
    func shutdown() {
        ERR_clear_error()
        _ = SSL_shutdown(ssl)
        ERR_clear_error()
    }

    /// Takes the ciphertext waiting to be written, if any.
    func takeCiphertext() -> SharedBytes? {
        let pending = hubbub_BIO_ctrl_pending(writeBIO)
        guard pending > 0 else { return nil }
        let chunk = SharedBytes.create(count: pending) { dst in
            _ = BIO_read(writeBIO, dst.baseAddress, Int32(pending))
        }
        return chunk
    }
}
