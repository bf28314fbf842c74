// SPDX-License-Identifier: MIT
// select_echo: the hand-written C ceiling for select(2): master fd_sets copied
// before each call, max_fd kept current, one read of up to kBuf bytes per
// readiness, bytes written back at once; leftovers kept (reading paused) until
// the socket is writable. Connections at fd >= FD_SETSIZE are refused (closed).
// usage: select_echo [PORT]   (0 or none: any free port; prints "listening on 127.0.0.1:PORT")
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <unistd.h>

enum { kBuf = 256 * 1024 };  // as epoll_echo

struct pending {
    char *data;
    size_t len, off;
};

static struct pending pend[FD_SETSIZE];
static fd_set want_read, want_write;
static int max_fd;
static char buf[kBuf];

static void die(const char *what) {
    perror(what);
    exit(1);
}

static void recompute_max_fd(void) {
    while (max_fd > 0 && !FD_ISSET(max_fd, &want_read) && !FD_ISSET(max_fd, &want_write)) --max_fd;
}

static void close_conn(int fd) {
    FD_CLR(fd, &want_read);
    FD_CLR(fd, &want_write);
    free(pend[fd].data);
    pend[fd].data = NULL;
    close(fd);
    recompute_max_fd();
}

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

static void on_readable(int fd) {
    ssize_t n = read(fd, buf, kBuf);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
        close_conn(fd);
        return;
    }
    if (n < 0) return;
    ssize_t w = write_some(fd, buf, (size_t)n);
    if (w < 0) {
        close_conn(fd);
        return;
    }
    if (w < n) {
        struct pending *p = &pend[fd];
        p->len = (size_t)(n - w);
        p->off = 0;
        p->data = malloc(p->len);
        if (!p->data) die("malloc");
        memcpy(p->data, buf + w, p->len);
        FD_CLR(fd, &want_read);
        FD_SET(fd, &want_write);
    }
}

static void on_writable(int fd) {
    struct pending *p = &pend[fd];
    ssize_t w = write_some(fd, p->data + p->off, p->len - p->off);
    if (w < 0) {
        close_conn(fd);
        return;
    }
    p->off += (size_t)w;
    if (p->off == p->len) {
        free(p->data);
        p->data = NULL;
        FD_CLR(fd, &want_write);
        FD_SET(fd, &want_read);
    }
}

int main(int argc, char **argv) {
    signal(SIGPIPE, SIG_IGN);
    int port = argc > 1 ? atoi(argv[1]) : 0;
    int lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
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

    FD_SET(lfd, &want_read);
    max_fd = lfd;
    for (;;) {
        fd_set r = want_read, w = want_write;
        int n = select(max_fd + 1, &r, &w, NULL, NULL);
        if (n < 0) {
            if (errno == EINTR) continue;
            die("select");
        }
        int top = max_fd;
        for (int fd = 0; fd <= top && n > 0; ++fd) {
            int rd = FD_ISSET(fd, &r), wr = FD_ISSET(fd, &w);
            if (!rd && !wr) continue;
            --n;
            if (fd == lfd) {
                int cfd;
                while ((cfd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
                    if (cfd >= FD_SETSIZE) {
                        close(cfd);
                        continue;
                    }
                    setsockopt(cfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
                    FD_SET(cfd, &want_read);
                    if (cfd > max_fd) max_fd = cfd;
                }
            } else if (wr) {
                on_writable(fd);
            } else {
                on_readable(fd);
            }
        }
    }
}
