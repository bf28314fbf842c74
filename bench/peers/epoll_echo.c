// SPDX-License-Identifier: MIT
// epoll_echo: the hand-written C ceiling. No library, no abstraction: one
// level-triggered epoll loop, one read of up to kBuf (256 KiB) bytes per readiness, the
// bytes written back at once; only if the socket refuses some are they kept
// and EPOLLOUT registered (and reading paused: backpressure) until drained.
// With THREADS > 1 (bench/loops_run's peer) each thread runs its own epoll set
// and the first one also accepts, adding each new connection to the next
// thread's set in turn (epoll_ctl is safe across threads): shared nothing but
// the listener, the floor against which a loop group's cost is read.
// usage: epoll_echo [PORT [THREADS [MAX_SECONDS]]]   (PORT 0 or none: any free
//        port; prints "listening on 127.0.0.1:PORT"; THREADS defaults to 1;
//        MAX_SECONDS > 0 ends the process after that long, as a benchmark's
//        guard)
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

enum { kBuf = 256 * 1024, kMaxEvents = 256 };  // 256 KiB: as much as asyncio reads at once

struct conn {
    int fd;
    char *pending;  // unsent bytes (malloc'd) or NULL
    size_t pending_len, pending_off;
};

enum { kMaxThreads = 64 };
static int lfd;
static int nthreads = 1;
static int epfds[kMaxThreads];
static _Thread_local int epfd;  // this thread's set
static _Thread_local char buf[kBuf];

static void on_interrupt(int sig) {
    (void)sig;
    _exit(0);  // Ctrl-C (or a script's kill -INT) is the expected way out
}

static void die(const char *what) {
    perror(what);
    exit(1);
}

static void set_events_in(int set, struct conn *c, int op, uint32_t events) {
    struct epoll_event ev = {.events = events, .data.ptr = c};
    if (epoll_ctl(set, op, c->fd, &ev) < 0) die("epoll_ctl");
}

static void set_events(struct conn *c, int op, uint32_t events) { set_events_in(epfd, c, op, events); }

static void close_conn(struct conn *c) {
    close(c->fd);  // also removes it from the epoll set
    free(c->pending);
    free(c);
}

// Writes data; returns how many bytes were taken, or -1 on a fatal error.
static ssize_t write_some(int fd, const char *data, size_t len) {
    size_t off = 0;
    while (off < len) {
        ssize_t n = write(fd, data + off, len - off);
        if (n >= 0) off += (size_t)n;
        else if (errno == EINTR) continue;
        else if (errno == EAGAIN) break;
        else return -1;
    }
    return (ssize_t)off;
}

static void on_readable(struct conn *c) {
    ssize_t n = read(c->fd, buf, kBuf);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
        close_conn(c);
        return;
    }
    if (n < 0) return;
    ssize_t w = write_some(c->fd, buf, (size_t)n);
    if (w < 0) {
        close_conn(c);
        return;
    }
    if (w < n) {
        c->pending_len = (size_t)(n - w);
        c->pending_off = 0;
        c->pending = malloc(c->pending_len);
        if (!c->pending) die("malloc");
        memcpy(c->pending, buf + w, c->pending_len);
        set_events(c, EPOLL_CTL_MOD, EPOLLOUT);
    }
}

static void on_writable(struct conn *c) {
    ssize_t w = write_some(c->fd, c->pending + c->pending_off, c->pending_len - c->pending_off);
    if (w < 0) {
        close_conn(c);
        return;
    }
    c->pending_off += (size_t)w;
    if (c->pending_off == c->pending_len) {
        free(c->pending);
        c->pending = NULL;
        set_events(c, EPOLL_CTL_MOD, EPOLLIN);
    }
}

__attribute__((noreturn)) static void *run_loop(void *index) {
    epfd = epfds[(long)index];
    int one = 1;
    struct epoll_event evs[kMaxEvents];
    for (;;) {
        int n = epoll_wait(epfd, evs, kMaxEvents, -1);
        if (n < 0) {
            if (errno == EINTR) continue;
            die("epoll_wait");
        }
        for (int i = 0; i < n; ++i) {
            struct conn *c = evs[i].data.ptr;
            if (!c) {
                int fd;
                static int next;  // only the first thread accepts
                while ((fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
                    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
                    c = calloc(1, sizeof *c);
                    if (!c) die("calloc");
                    c->fd = fd;
                    set_events_in(epfds[next], c, EPOLL_CTL_ADD, EPOLLIN);
                    next = (next + 1) % nthreads;
                }
                continue;
            }
            // A connection is closed (and freed) at most once per event, and
            // each fd appears at most once per epoll_wait batch.
            if (c->pending) on_writable(c);
            else on_readable(c);
        }
    }
}

int main(int argc, char **argv) {
    signal(SIGPIPE, SIG_IGN);
    signal(SIGINT, on_interrupt);
    int port = argc > 1 ? atoi(argv[1]) : 0;
    nthreads = argc > 2 ? atoi(argv[2]) : 1;
    if (nthreads < 1 || nthreads > kMaxThreads) {
        fprintf(stderr, "epoll_echo: THREADS must be 1 to %d\n", kMaxThreads);
        return 2;
    }
    const int max_seconds = argc > 3 ? atoi(argv[3]) : 0;
    if (max_seconds > 0) alarm((unsigned)max_seconds);  // SIGALRM's default action ends the process
    lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (lfd < 0) die("socket");
    int one = 1;
    setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof sa;
    if (bind(lfd, (struct sockaddr *)&sa, sizeof sa) < 0) die("bind");
    if (listen(lfd, SOMAXCONN) < 0) die("listen");
    if (getsockname(lfd, (struct sockaddr *)&sa, &len) < 0) die("getsockname");
    printf("listening on 127.0.0.1:%d\n", ntohs(sa.sin_port));
    fflush(stdout);

    for (int t = 0; t < nthreads; ++t)
        if ((epfds[t] = epoll_create1(EPOLL_CLOEXEC)) < 0) die("epoll_create1");
    struct epoll_event lev = {.events = EPOLLIN, .data.ptr = NULL};  // NULL marks the listener
    if (epoll_ctl(epfds[0], EPOLL_CTL_ADD, lfd, &lev) < 0) die("epoll_ctl");
    for (long t = 1; t < nthreads; ++t) {
        pthread_t th;
        if (pthread_create(&th, NULL, run_loop, (void *)t) != 0) die("pthread_create");
    }
    run_loop((void *)0);
}

