// SPDX-License-Identifier: MIT
// loadgen: the one echo client that drives every server in bench/ the same way.
//
// N active connections, each with exactly one message of S bytes in flight:
// send S bytes, read S bytes back, check them byte for byte, send the next.
// K idle connections are opened too; each proves the server has accepted it
// (one 1-byte echo) and then stays silent. Timeline:
//   connect + probe every connection -> warm-up (not counted) -> measure.
// Prints one line: "msgs=... secs=... msgs_per_s=... mb_per_s=..." where
// MB/s is echoed payload (one direction), 1 MB = 1e6 bytes, then the round
// trip of the messages measured, from the first byte written to the last
// byte read back: "p50_us=... p99_us=... p999_us=..." (a histogram of 1 us
// buckets up to kLatencyBuckets us, the rest counted at its top); with --server-pid
// also "server_cpu_ns_per_msg=...": the server's CPU time (user + kernel, from
// /proc/PID/task/*/schedstat) during the measured window, per message, and
// its parts and causes: "server_user_ns_per_msg=... server_sys_ns_per_msg=..."
// (utime and stime of /proc/PID/task/*/stat, clock ticks: ~1 % of a 1 s window)
// and "server_vcsw_per_msg=... server_ivcsw_per_msg=..." (voluntary and
// involuntary context switches, /proc/PID/task/*/status). --perf-ctl FIFO
// [--perf-ack FIFO] writes "enable" to FIFO when the measured window opens and
// "disable" when it closes, for `perf stat -D -1 --control fifo:CTL[,ACK]`,
// so that perf counts the measured window alone.
// Exit status 0 on success, 1 on any error (mismatch, EOF, stall, timeout).
// Every loop is bounded in time. 127.0.0.1 (or --host) only.
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

enum {
    kPatternPeriod = 251,       // prime, so consecutive messages differ
    kProbeBatch = 64,           // connections opened per batch: stays below every server's backlog
    kScratch = 256 * 1024,      // one read takes at most this much
    kMaxEvents = 256,
    kStallSeconds = 5,          // no progress for this long: the server is stuck
    kLatencyBuckets = 1000000,  // 1 us each: round trips up to 1 s are exact to the microsecond
};

struct conn {
    int fd;
    int id;
    size_t size;        // bytes per message on this connection
    size_t sent, recvd; // progress of the message in flight
    unsigned offset;    // where in the pattern this message starts
    int want_out;       // EPOLLOUT registered
    int active;         // sends again as soon as a message comes back
    double started;     // when the message in flight was started (now_s)
};

// Round trips of the messages completed while `recording` (the measurement).
static unsigned *latency_us;
static int recording;

static unsigned char *pattern;  // kPatternPeriod + largest message
static unsigned char scratch[kScratch];
static int epfd;
static const char *host = "127.0.0.1";
static int port = 0;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void die(const char *what) {
    fprintf(stderr, "loadgen: %s: %s\n", what, errno ? strerror(errno) : "failed");
    exit(1);
}

static void fail(const char *fmt, int id) {
    fprintf(stderr, "loadgen: ");
    fprintf(stderr, fmt, id);
    fprintf(stderr, "\n");
    exit(1);
}

static void ctl(struct conn *c, int op, uint32_t events) {
    struct epoll_event ev = {.events = events, .data.ptr = c};
    if (epoll_ctl(epfd, op, c->fd, &ev) < 0) die("epoll_ctl");
}

static void open_conn(struct conn *c, int id, size_t size) {
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    if (inet_pton(AF_INET, host, &sa.sin_addr) != 1) die("bad --host");
    c->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (c->fd < 0) die("socket");
    // Blocking connect: on loopback it returns once the kernel has completed
    // the handshake, whether or not the server has called accept yet.
    if (connect(c->fd, (struct sockaddr *)&sa, sizeof sa) < 0) die("connect");
    int one = 1;
    if (setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) < 0) die("TCP_NODELAY");
    if (fcntl(c->fd, F_SETFL, fcntl(c->fd, F_GETFL) | O_NONBLOCK) < 0) die("O_NONBLOCK");
    c->id = id;
    c->size = size;
    c->sent = c->recvd = 0;
    c->offset = (unsigned)id % kPatternPeriod;
    c->want_out = 0;
    c->active = 0;
    ctl(c, EPOLL_CTL_ADD, EPOLLIN);
}

// Writes as much of the message in flight as the socket takes; registers for
// EPOLLOUT only while some is left.
static void pump_out(struct conn *c) {
    while (c->sent < c->size) {
        ssize_t n = write(c->fd, pattern + c->offset + c->sent, c->size - c->sent);
        if (n > 0) {
            c->sent += (size_t)n;
        } else if (n < 0 && errno == EINTR) {
            continue;
        } else if (n < 0 && errno == EAGAIN) {
            break;
        } else {
            die("write");
        }
    }
    int want = c->sent < c->size;
    if (want != c->want_out) {
        ctl(c, EPOLL_CTL_MOD, want ? EPOLLIN | EPOLLOUT : EPOLLIN);
        c->want_out = want;
    }
}

static void start_message(struct conn *c) {
    c->sent = c->recvd = 0;
    if (recording) c->started = now_s();
    c->offset = (c->offset + 1) % kPatternPeriod;
    pump_out(c);
}

// Reads what is there (one read), verifies it; returns 1 when the message in
// flight has fully come back.
static int pump_in(struct conn *c) {
    for (;;) {
        size_t room = c->size - c->recvd;
        if (room == 0) room = 1;  // anything more would be a protocol error: catch it
        if (room > kScratch) room = kScratch;
        ssize_t n = read(c->fd, scratch, room);
        if (n > 0) {
            if (c->recvd + (size_t)n > c->sent) fail("connection %d: server sent bytes it was never sent", c->id);
            if (memcmp(scratch, pattern + c->offset + c->recvd, (size_t)n) != 0)
                fail("connection %d: echoed bytes differ from the bytes sent", c->id);
            c->recvd += (size_t)n;
            return c->recvd == c->size;
        }
        if (n == 0) fail("connection %d: server closed the connection", c->id);
        if (errno == EINTR) continue;
        if (errno == EAGAIN) return 0;
        die("read");
    }
}

static void handle(struct epoll_event *ev, long *completed) {
    struct conn *c = ev->data.ptr;
    if (ev->events & (EPOLLERR | EPOLLHUP)) {
        if (!(ev->events & EPOLLIN)) fail("connection %d: error or hang-up", c->id);
    }
    if (ev->events & EPOLLOUT) pump_out(c);
    if (ev->events & (EPOLLIN | EPOLLERR | EPOLLHUP)) {
        if (pump_in(c)) {
            ++*completed;
            if (recording && c->started > 0) {
                double us = (now_s() - c->started) * 1e6;
                long b = us < 0 ? 0 : (long)us;
                ++latency_us[b < kLatencyBuckets ? b : kLatencyBuckets - 1];
            }
            if (c->active) start_message(c);  // probes go quiet once answered
        }
    }
}

// Runs the event loop until `target` messages completed or `deadline`.
static long run_until(long target, double deadline) {
    struct epoll_event evs[kMaxEvents];
    long completed = 0;
    double last_progress = now_s();
    while (completed < target) {
        int n = epoll_wait(epfd, evs, kMaxEvents, 50);
        if (n < 0 && errno != EINTR) die("epoll_wait");
        long before = completed;
        for (int i = 0; i < n; ++i) handle(&evs[i], &completed);
        double t = now_s();
        if (completed != before) last_progress = t;
        if (t >= deadline) break;
        if (t - last_progress > kStallSeconds) fail("stalled: no echo for %d seconds", kStallSeconds);
    }
    return completed;
}

// CPU time (ns) the server's threads have run so far, from
// /proc/PID/task/*/schedstat (first field: time on CPU, ns); -1 if unknown.
static long long server_cpu_ns(int pid) {
    if (pid <= 0) return -1;
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task", pid);
    DIR *d = opendir(path);
    if (!d) return -1;
    long long total = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') continue;
        char file[128];
        snprintf(file, sizeof file, "/proc/%d/task/%.20s/schedstat", pid, e->d_name);
        FILE *f = fopen(file, "r");
        if (!f) continue;
        long long ns = 0;
        if (fscanf(f, "%lld", &ns) == 1) total += ns;
        fclose(f);
    }
    closedir(d);
    return total;
}

// The server's threads' user and kernel time (ns, from the clock ticks of
// /proc/PID/task/*/stat) and voluntary and involuntary context switches
// (/proc/PID/task/*/status), summed; all -1 if unknown.
struct server_counts {
    long long user_ns, sys_ns, vcsw, ivcsw;
};
static struct server_counts server_counts(int pid) {
    struct server_counts c = {-1, -1, -1, -1};
    if (pid <= 0) return c;
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task", pid);
    DIR *d = opendir(path);
    if (!d) return c;
    const long hz = sysconf(_SC_CLK_TCK);
    long long utick = 0, stick = 0, vcsw = 0, ivcsw = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') continue;
        char file[128], line[512];
        snprintf(file, sizeof file, "/proc/%d/task/%.20s/stat", pid, e->d_name);
        FILE *f = fopen(file, "r");
        if (!f) continue;
        if (fgets(line, sizeof line, f)) {
            // After the ")" that ends the command name: field 3 (state) on; utime and stime are 14 and 15.
            const char *p = strrchr(line, ')');
            unsigned long long ut = 0, st = 0;
            if (p && sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) == 2) {
                utick += (long long)ut;
                stick += (long long)st;
            }
        }
        fclose(f);
        snprintf(file, sizeof file, "/proc/%d/task/%.20s/status", pid, e->d_name);
        f = fopen(file, "r");
        if (!f) continue;
        while (fgets(line, sizeof line, f)) {
            long long v;
            if (sscanf(line, "voluntary_ctxt_switches: %lld", &v) == 1) vcsw += v;
            else if (sscanf(line, "nonvoluntary_ctxt_switches: %lld", &v) == 1) ivcsw += v;
        }
        fclose(f);
    }
    closedir(d);
    c.user_ns = utick * (1000000000LL / hz);
    c.sys_ns = stick * (1000000000LL / hz);
    c.vcsw = vcsw;
    c.ivcsw = ivcsw;
    return c;
}

// --perf-ctl: tell perf stat to start or stop counting; with --perf-ack, wait for its "ack".
static int perf_ctl_fd = -1, perf_ack_fd = -1;
static void perf_control(const char *cmd) {
    if (perf_ctl_fd < 0) return;
    size_t len = strlen(cmd);
    if (write(perf_ctl_fd, cmd, len) != (ssize_t)len) die("--perf-ctl write");
    if (perf_ack_fd >= 0) {
        char ack[16];
        if (read(perf_ack_fd, ack, sizeof ack) <= 0) die("--perf-ack read");
    }
}

// The round trip (us) below which `fraction` of the recorded messages came back.
static long latency_percentile(double fraction) {
    long total = 0, seen = 0;
    for (long b = 0; b < kLatencyBuckets; ++b) total += latency_us[b];
    long want = (long)(fraction * (double)total + 0.5);
    if (want < 1) want = 1;
    for (long b = 0; b < kLatencyBuckets; ++b) {
        seen += latency_us[b];
        if (seen >= want) return b + 1;  // the bucket's upper edge
    }
    return kLatencyBuckets;
}

static void usage(void) {
    fprintf(stderr,
            "usage: loadgen --port P [--host 127.0.0.1] [--conns N=1] [--size S=64] [--idle K=0]\n"
            "               [--warmup SECONDS=0.2] [--duration SECONDS=1] [--server-pid PID]\n"
            "               [--perf-ctl FIFO [--perf-ack FIFO]]\n"
            "--server-pid: also report the server's CPU time per message during the measurement\n"
            "--perf-ctl: write \"enable\" / \"disable\" there when the measurement starts / ends\n");
    exit(2);
}

int main(int argc, char **argv) {
    int nconns = 1, nidle = 0, server_pid = 0;
    long size = 64;
    double warmup = 0.2, duration = 1.0;
    const char *perf_ctl = NULL, *perf_ack = NULL;
    for (int i = 1; i < argc; ++i) {
        const char *a = argv[i];
        if (i + 1 >= argc) usage();
        const char *v = argv[++i];
        if (!strcmp(a, "--port")) port = atoi(v);
        else if (!strcmp(a, "--host")) host = v;
        else if (!strcmp(a, "--conns")) nconns = atoi(v);
        else if (!strcmp(a, "--size")) size = atol(v);
        else if (!strcmp(a, "--idle")) nidle = atoi(v);
        else if (!strcmp(a, "--warmup")) warmup = atof(v);
        else if (!strcmp(a, "--duration")) duration = atof(v);
        else if (!strcmp(a, "--server-pid")) server_pid = atoi(v);
        else if (!strcmp(a, "--perf-ctl")) perf_ctl = v;
        else if (!strcmp(a, "--perf-ack")) perf_ack = v;
        else usage();
    }
    if (port <= 0 || nconns < 1 || nidle < 0 || size < 1 || duration <= 0 || warmup < 0) usage();

    if (perf_ctl) {
        // perf opens the FIFOs too: these block until it has.
        perf_ctl_fd = open(perf_ctl, O_WRONLY | O_CLOEXEC);
        if (perf_ctl_fd < 0) die("--perf-ctl");
        if (perf_ack) {
            perf_ack_fd = open(perf_ack, O_RDONLY | O_CLOEXEC);
            if (perf_ack_fd < 0) die("--perf-ack");
        }
    }

    pattern = malloc((size_t)size + kPatternPeriod + 1);
    if (!pattern) die("malloc");
    for (long i = 0; i < size + kPatternPeriod + 1; ++i) pattern[i] = (unsigned char)(i * 131 + 7);
    epfd = epoll_create1(EPOLL_CLOEXEC);
    if (epfd < 0) die("epoll_create1");

    int total = nconns + nidle;
    struct conn *conns = calloc((size_t)total, sizeof *conns);
    if (!conns) die("calloc");

    // Open every connection in batches, each proven accepted by a 1-byte echo.
    double setup_deadline = now_s() + 30;
    for (int first = 0; first < total; first += kProbeBatch) {
        int last = first + kProbeBatch < total ? first + kProbeBatch : total;
        for (int i = first; i < last; ++i) {
            open_conn(&conns[i], i, 1);
            start_message(&conns[i]);
        }
        if (run_until(last - first, setup_deadline) < last - first) fail("setup: %d connections not echoed in time", total);
    }

    // Active connections switch to full-size messages; idle ones stay quiet.
    for (int i = 0; i < nconns; ++i) {
        conns[i].size = (size_t)size;
        conns[i].active = 1;
        start_message(&conns[i]);
    }
    latency_us = calloc(kLatencyBuckets, sizeof *latency_us);
    if (!latency_us) die("calloc");
    double t0 = now_s();
    recording = 1;  // messages started from here on are timed; the warm-up's are not counted
    run_until(__LONG_MAX__, t0 + warmup);
    memset(latency_us, 0, kLatencyBuckets * sizeof *latency_us);
    perf_control("enable\n");
    struct server_counts counts0 = server_counts(server_pid);
    long long cpu0 = server_cpu_ns(server_pid);
    double t1 = now_s();
    long msgs = run_until(__LONG_MAX__, t1 + duration);
    double secs = now_s() - t1;
    long long cpu1 = server_cpu_ns(server_pid);
    struct server_counts counts1 = server_counts(server_pid);
    perf_control("disable\n");
    recording = 0;

    // Stop sending and let every message in flight come back, so each
    // connection ends with a clean FIN (closing with unread bytes sends a
    // reset, which some servers log as an error).
    for (int i = 0; i < nconns; ++i) conns[i].active = 0;
    run_until(nconns, now_s() + 2);

    printf("msgs=%ld secs=%.4f msgs_per_s=%.1f mb_per_s=%.3f conns=%d size=%ld idle=%d", msgs, secs,
           (double)msgs / secs, (double)msgs * (double)size / secs / 1e6, nconns, size, nidle);
    if (msgs > 0)
        printf(" p50_us=%ld p99_us=%ld p999_us=%ld", latency_percentile(0.5), latency_percentile(0.99),
               latency_percentile(0.999));
    if (cpu0 >= 0 && cpu1 >= cpu0 && msgs > 0) printf(" server_cpu_ns_per_msg=%.0f", (double)(cpu1 - cpu0) / (double)msgs);
    if (counts0.user_ns >= 0 && counts1.user_ns >= 0 && msgs > 0) {
        double m = (double)msgs;
        printf(" server_user_ns_per_msg=%.0f server_sys_ns_per_msg=%.0f server_vcsw_per_msg=%.4f server_ivcsw_per_msg=%.4f",
               (double)(counts1.user_ns - counts0.user_ns) / m, (double)(counts1.sys_ns - counts0.sys_ns) / m,
               (double)(counts1.vcsw - counts0.vcsw) / m, (double)(counts1.ivcsw - counts0.ivcsw) / m);
    }
    printf("\n");
    fflush(stdout);
    for (int i = 0; i < total; ++i) close(conns[i].fd);
    return 0;
}
