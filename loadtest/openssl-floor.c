// What OpenSSL itself keeps for one idle server connection: a TLS 1.3 handshake over memory BIOs
// (as Transport/TLS.swift does), one message each way, the buffers released (SSL_MODE_RELEASE_BUFFERS,
// SSL_free_buffers, fresh BIOs), then the bytes still allocated through OpenSSL per connection,
// by call site (CRYPTO_set_mem_functions). Hubbub's own part is separate: see loadtest/idle-tls.sh.
//   cc -O1 loadtest/openssl-floor.c -lssl -lcrypto -o /tmp/openssl-floor && /tmp/openssl-floor CERT KEY
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { CONNECTIONS = 200, MAX_SITES = 4096 };
typedef struct { const char *file; int line; long live; long count; } Site;
static Site sites[MAX_SITES];
static int site_count;
static int tracking; // only the server side's allocations count
typedef struct { size_t size; int site; long pad; } Header;

static int site_of(const char *file, int line) {
    for (int i = 0; i < site_count; i++) if (sites[i].line == line && sites[i].file == file) return i;
    if (site_count == MAX_SITES) return -1;
    sites[site_count].file = file; sites[site_count].line = line;
    return site_count++;
}
static void *counted_malloc(size_t n, const char *file, int line) {
    Header *h = malloc(sizeof(Header) + n);
    if (!h) return NULL;
    h->size = n; h->site = tracking ? site_of(file, line) : -1;
    if (h->site >= 0) { sites[h->site].live += (long)n; sites[h->site].count++; }
    return h + 1;
}
static void counted_free(void *p, const char *file, int line) {
    (void)file; (void)line;
    if (!p) return;
    Header *h = (Header *)p - 1;
    if (h->site >= 0) { sites[h->site].live -= (long)h->size; sites[h->site].count--; }
    free(h);
}
static void *counted_realloc(void *p, size_t n, const char *file, int line) {
    if (!p) return counted_malloc(n, file, line);
    Header *h = (Header *)p - 1;
    void *q = counted_malloc(n, file, line);
    if (!q) return NULL;
    memcpy(q, p, h->size < n ? h->size : n);
    counted_free(p, file, line);
    return q;
}
static void pump(BIO *from, BIO *to) {
    char buffer[65536];
    int n;
    while ((n = BIO_read(from, buffer, sizeof buffer)) > 0) BIO_write(to, buffer, n);
}

int main(int argc, char **argv) {
    if (argc < 3) { fprintf(stderr, "usage: %s CERT KEY\n", argv[0]); return 2; }
    CRYPTO_set_mem_functions(counted_malloc, counted_realloc, counted_free);
    SSL_CTX *server = SSL_CTX_new(TLS_server_method()), *client = SSL_CTX_new(TLS_client_method());
    if (SSL_CTX_use_certificate_chain_file(server, argv[1]) != 1 || SSL_CTX_use_PrivateKey_file(server, argv[2], SSL_FILETYPE_PEM) != 1) {
        fprintf(stderr, "cannot load %s / %s\n", argv[1], argv[2]);
        return 1;
    }
    SSL_CTX_set_mode(server, SSL_MODE_RELEASE_BUFFERS);
    SSL_CTX_set_num_tickets(server, 1);
    static SSL *held[CONNECTIONS];
    for (int i = 0; i < CONNECTIONS; i++) {
        SSL *c = SSL_new(client);
        BIO *cr = BIO_new(BIO_s_mem()), *cw = BIO_new(BIO_s_mem());
        SSL_set_bio(c, cr, cw);
        SSL_set_connect_state(c);
        tracking = 1;
        SSL *s = SSL_new(server);
        BIO *sr = BIO_new(BIO_s_mem()), *sw = BIO_new(BIO_s_mem());
        SSL_set_bio(s, sr, sw);
        SSL_set_accept_state(s);
        tracking = 0;
        for (int round = 0; round < 10; round++) {
            SSL_do_handshake(c); pump(cw, sr);
            tracking = 1; SSL_do_handshake(s); tracking = 0; pump(sw, cr);
        }
        char text[64];
        SSL_write(c, "hello", 5); pump(cw, sr);
        tracking = 1;
        if (SSL_read(s, text, sizeof text) != 5 || SSL_write(s, "ok", 2) != 2) { fprintf(stderr, "handshake failed\n"); return 1; }
        tracking = 0;
        pump(sw, cr); SSL_read(c, text, sizeof text);
        tracking = 1;
        SSL_free_buffers(s);
        SSL_set0_rbio(s, BIO_new(BIO_s_mem()));
        SSL_set0_wbio(s, BIO_new(BIO_s_mem()));
        tracking = 0;
        SSL_free(c);
        held[i] = s;
    }
    long total = 0;
    for (int i = 0; i < site_count; i++) total += sites[i].live;
    printf("%s, TLS %s: %ld bytes per idle connection allocated through OpenSSL\n", OpenSSL_version(OPENSSL_VERSION),
           SSL_get_version(held[0]), total / CONNECTIONS);
    for (int i = 0; i < site_count; i++)
        if (sites[i].live / CONNECTIONS >= 100)
            printf("  %6ld B in %4.1f allocations  %s:%d\n", sites[i].live / CONNECTIONS, (double)sites[i].count / CONNECTIONS, sites[i].file, sites[i].line);
    return 0;
}
