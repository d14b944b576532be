// Linux system calls whose shapes Swift cannot use directly (packed epoll_event, macros).
#ifndef HUBBUB_CLINUX_H
#define HUBBUB_CLINUX_H
#include <stdint.h>
#include <sys/types.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <netinet/in.h>

/// One readiness event, unpacked (the kernel's epoll_event is packed on x86-64).
typedef struct {
    uint32_t events;
    uint64_t data;
} clinux_event;

enum {
    CLINUX_EPOLLIN = 0x001,
    CLINUX_EPOLLOUT = 0x004,
    CLINUX_EPOLLERR = 0x008,
    CLINUX_EPOLLHUP = 0x010,
    CLINUX_EPOLLRDHUP = 0x2000,
    CLINUX_EPOLLET = (int)(1u << 31),
};

int clinux_epoll_create(void);
int clinux_epoll_add(int epfd, int fd, uint32_t events, uint64_t data);
int clinux_epoll_mod(int epfd, int fd, uint32_t events, uint64_t data);
int clinux_epoll_del(int epfd, int fd);
/// Waits for events; returns the count, 0 on timeout, -1 with errno (EINTR is returned as 0).
int clinux_epoll_wait(int epfd, clinux_event *events, int maxevents, int timeout_ms);

int clinux_eventfd(void);
int clinux_eventfd_signal(int fd);
int clinux_eventfd_drain(int fd);

/// A periodic monotonic timer; first expiry after interval_ms.
int clinux_timerfd(int interval_ms);
/// Reads the expiration count (0 when none).
uint64_t clinux_timerfd_drain(int fd);

/// accept4 with SOCK_NONBLOCK|SOCK_CLOEXEC; fills a printable peer address (IPv4 or IPv6).
int clinux_accept(int listen_fd, char *addr_out, int addr_len);
/// A nonblocking listening socket with SO_REUSEADDR and SO_REUSEPORT; returns fd or -errno.
int clinux_listen(const char *host, int port, int backlog);
/// A nonblocking connecting socket (connect in progress); returns fd or -errno.
int clinux_connect(const char *host, int port, const char *source_host);
/// Pending error of a socket after a nonblocking connect (SO_ERROR).
int clinux_socket_error(int fd);
/// The port a socket is bound to (for port 0 listeners).
int clinux_local_port(int fd);
int clinux_set_nodelay(int fd);

/// Writes to a socket (send for one buffer, sendmsg for several), without SIGPIPE; retries EINTR.
ssize_t clinux_sendv(int fd, const struct iovec *iov, int iovcnt);
/// Reads from a socket (recv); retries EINTR.
ssize_t clinux_recv(int fd, void *buf, size_t len);
int clinux_close(int fd);
int clinux_shutdown_write(int fd);
int clinux_errno(void);

/// Raises RLIMIT_NOFILE to at least `want` (the hard limit too when permitted); returns the soft limit now.
long clinux_raise_nofile_to(long want);
/// Resident set size of this process in KiB (from /proc/self/statm), -1 if unknown.
long clinux_rss_kb(void);
/// Monotonic clock in nanoseconds.
uint64_t clinux_now_ns(void);
/// Names the calling thread (for top and gdb).
void clinux_set_thread_name(const char *name);
/// Heap bytes in use by glibc's allocator (mallinfo2's uordblks): what live structures hold.
size_t clinux_heap_in_use(void);
#endif
