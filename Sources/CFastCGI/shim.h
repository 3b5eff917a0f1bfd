#ifndef ATTESTEDGE_CFASTCGI_SHIM_H
#define ATTESTEDGE_CFASTCGI_SHIM_H
/* The Linux process, signal and epoll calls the FastCGI runtime's pre-fork pool needs that
 * Swift cannot import directly: function-like macros (sys/wait.h), a variadic function
 * (prctl), struct sigaction and the packed struct epoll_event. No library is linked: the
 * FastCGI records themselves are read and written in Swift (Sources/FastCGI). */
#include <signal.h>
#include <errno.h>
#include <string.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <sys/syscall.h>
#include <linux/capability.h>

/* accept4(2), which glibc declares only under _GNU_SOURCE (socklen_t is unsigned int on
 * Linux). <sys/socket.h> is not included here: its declarations would then belong to this
 * module and files that import only Glibc would lose SOCK_CLOEXEC and friends. */
struct sockaddr;
extern int accept4(int fd, struct sockaddr *addr, unsigned int *addrlen, int flags);

/* The next connection queued on `listen_fd`, with `flags` (SOCK_NONBLOCK, SOCK_CLOEXEC);
 * -1 with errno set (EAGAIN when none is queued on a non-blocking listening socket). */
static inline int attest_fcgi_accept(int listen_fd, int flags) {
    return accept4(listen_fd, NULL, NULL, flags);
}

/* Sets the disposition of `sig` to SIG_DFL (which = 0) or SIG_IGN (which = 1). */
static inline int attest_fcgi_sigdisposition(int sig, int which) {
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = which ? SIG_IGN : SIG_DFL;
    sigemptyset(&action.sa_mask);
    return sigaction(sig, &action, NULL);
}

/* prctl(PR_SET_PDEATHSIG): `sig` is delivered to this process when its parent dies. */
static inline int attest_fcgi_set_parent_death_signal(int sig) {
    return prctl(PR_SET_PDEATHSIG, (unsigned long)sig, 0UL, 0UL, 0UL);
}

/* A worker's event set: the shared listening socket (EPOLLEXCLUSIVE: one waiting worker is
 * woken per connection, not all of them) and a signalfd for SIGTERM and SIGINT, which the
 * caller keeps blocked. Returns the epoll descriptor, or -1 with errno set. */
static inline int attest_fcgi_worker_events(int listen_fd) {
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGTERM);
    sigaddset(&stop, SIGINT);
    int sfd = signalfd(-1, &stop, SFD_CLOEXEC | SFD_NONBLOCK);
    int epfd = epoll_create1(EPOLL_CLOEXEC);
    struct epoll_event listen_event, stop_event;
    memset(&listen_event, 0, sizeof listen_event);
    memset(&stop_event, 0, sizeof stop_event);
    listen_event.events = EPOLLIN | EPOLLEXCLUSIVE;
    listen_event.data.u32 = 1;
    stop_event.events = EPOLLIN;
    stop_event.data.u32 = 2;
    if (sfd < 0 || epfd < 0
        || epoll_ctl(epfd, EPOLL_CTL_ADD, listen_fd, &listen_event) != 0
        || epoll_ctl(epfd, EPOLL_CTL_ADD, sfd, &stop_event) != 0) {
        int saved = errno;
        if (sfd >= 0) close(sfd);
        if (epfd >= 0) close(epfd);
        errno = saved;
        return -1;
    }
    return epfd;
}

/* Waits on a worker's event set. Returns a bit set (1: a connection is queued, 2: a stop
 * signal is pending; both can be set), 0 when interrupted, or -1 with errno set. */
static inline int attest_fcgi_worker_wait(int epfd, int timeout_ms) {
    struct epoll_event events[2];
    int n = epoll_wait(epfd, events, 2, timeout_ms);
    if (n < 0) return errno == EINTR ? 0 : -1;
    int ready = 0;
    for (int i = 0; i < n; i++) ready |= (int)events[i].data.u32;
    return ready;
}

/* Before setuid(2) away from root: keep the permitted capabilities across it
 * (prctl(PR_SET_KEEPCAPS)), so that `attest_fcgi_keep_only_bind_capability` can keep one. The
 * flag is cleared by execve. Async-signal-safe (a system call). */
static inline int attest_fcgi_keep_capabilities_across_setuid(void) {
    return prctl(PR_SET_KEEPCAPS, 1UL, 0UL, 0UL, 0UL);
}

/* After setuid(2) away from root with the capabilities kept: reduces them to
 * CAP_NET_BIND_SERVICE alone (permitted, effective, inheritable) and raises it in the ambient
 * set, so the program execve runs next, unprivileged otherwise, may bind a port below 1024 and
 * nothing more. 0, or -1 with errno set. Async-signal-safe (system calls only). */
static inline int attest_fcgi_keep_only_bind_capability(void) {
    struct __user_cap_header_struct header;
    struct __user_cap_data_struct data[2];
    memset(&header, 0, sizeof header);
    memset(data, 0, sizeof data);
    header.version = _LINUX_CAPABILITY_VERSION_3;
    header.pid = 0;
    unsigned int bit = 1u << (CAP_NET_BIND_SERVICE & 31);
    data[CAP_NET_BIND_SERVICE >> 5].permitted = bit;
    data[CAP_NET_BIND_SERVICE >> 5].effective = bit;
    data[CAP_NET_BIND_SERVICE >> 5].inheritable = bit;
    if (syscall(SYS_capset, &header, data) != 0) return -1;
    return prctl(PR_CAP_AMBIENT, (unsigned long)PR_CAP_AMBIENT_RAISE, (unsigned long)CAP_NET_BIND_SERVICE, 0UL, 0UL);
}

/* waitpid(2) status decoding. */
static inline int attest_fcgi_wifexited(int status) { return WIFEXITED(status); }
static inline int attest_fcgi_wexitstatus(int status) { return WEXITSTATUS(status); }
static inline int attest_fcgi_wifsignaled(int status) { return WIFSIGNALED(status); }
static inline int attest_fcgi_wtermsig(int status) { return WTERMSIG(status); }
#endif
