// OpenSSL 3 headers plus static-inline wrappers for the macros Swift cannot call.
#ifndef HUBBUB_COPENSSL_SHIM_H
#define HUBBUB_COPENSSL_SHIM_H
#include <openssl/ssl.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <openssl/sha.h>
#include <openssl/bio.h>
#include <openssl/crypto.h>
#include <openssl/kdf.h>
#include <openssl/buffer.h>

static inline long hubbub_SSL_CTX_set_min_proto_version(SSL_CTX *ctx, int version) {
    return SSL_CTX_set_min_proto_version(ctx, version);
}
static inline long hubbub_SSL_CTX_set_max_proto_version(SSL_CTX *ctx, int version) {
    return SSL_CTX_set_max_proto_version(ctx, version);
}
static inline long hubbub_SSL_CTX_set_mode(SSL_CTX *ctx, long mode) { return SSL_CTX_set_mode(ctx, mode); }
static inline uint64_t hubbub_SSL_CTX_set_options(SSL_CTX *ctx, uint64_t options) { return SSL_CTX_set_options(ctx, options); }
static inline long hubbub_SSL_CTX_set_session_cache_mode(SSL_CTX *ctx, long mode) {
    return SSL_CTX_set_session_cache_mode(ctx, mode);
}
static inline long hubbub_SSL_set_tlsext_host_name(SSL *ssl, const char *name) {
    return SSL_set_tlsext_host_name(ssl, name);
}
static inline size_t hubbub_BIO_ctrl_pending(BIO *bio) { return BIO_ctrl_pending(bio); }
static inline int hubbub_BIO_set_mem_eof_return(BIO *bio, int v) { return (int)BIO_set_mem_eof_return(bio, v); }

/// Bytes a memory BIO has allocated (it never shrinks by itself).
static inline size_t hubbub_BIO_mem_capacity(BIO *bio) {
    BUF_MEM *mem = NULL;
    BIO_get_mem_ptr(bio, &mem);
    return mem ? mem->max : 0;
}
static inline long hubbub_SSL_CTX_sess_set_cache_size(SSL_CTX *ctx, long size) {
    return SSL_CTX_sess_set_cache_size(ctx, size);
}
static inline uint64_t hubbub_ssl_options(void) {
    return SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION | SSL_OP_CIPHER_SERVER_PREFERENCE | SSL_OP_NO_SSLv3
        | SSL_OP_NO_TLSv1 | SSL_OP_NO_TLSv1_1;
}
static inline long hubbub_release_buffers_mode(void) {
    return SSL_MODE_RELEASE_BUFFERS | SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER;
}
#endif
