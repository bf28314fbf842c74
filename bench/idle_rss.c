// SPDX-License-Identifier: MIT
// idle_rss: what one idle TCP connection costs an echo server in resident
// memory (issue 22). The one client bench/memory runs against every server.
//
//   idle_rss --port P --server-pid PID --conns K [--warmup W] [--rounds R]
//            [--batch B] [--probe BYTES] [--timeout S]
//
// Timeline, all against 127.0.0.1:P:
//   1. warm-up: W connections (default 64), each proven accepted by an echo
//      as in step 3, kept open; they bring the server's lazily made state (first-use
//      buffers, code pages, malloc arenas, services) into being before the
//      baseline, so that state is not charged to the measured connections.
//   2. baseline: the server's RSS once it is steady.
//   3. K connections opened in batches of B (default 64, below every peer's
//      listen backlog): all of a batch connect, each sends 1 byte, each reads
//      the byte back. They then stay open and silent. --probe BYTES (at most
//      64 KiB) echoes that many bytes instead: the cost of a connection left
//      idle after some traffic (buffers a server keeps).
//   4. the server's RSS once it is steady again; the server must hold at
//      least K more fds than at the baseline, and no idle connection may have
//      been closed or sent anything meanwhile.
//   5. prints one line per round:
//        round=1 conns=K warmup=W probe=1 rss_before=B rss_after=A bytes_per_conn=X
//        anon_before=.. anon_after=.. anon_bytes_per_conn=.. fds_before=.. fds_after=..
//      bytes_per_conn = (A - B) / K, in bytes.
//   6. closes the K connections and waits until the server has closed its
//      ends (its fd count is back to the baseline's).
// With --rounds R > 1, steps 2-6 repeat in the same server: a later round
// measures what a new batch adds once an equal batch has come and gone, so
// a figure near zero there says the server reuses what closed connections
// freed (and a figure like round 1's, that it keeps it). bench/memory runs a
// fresh server per round instead.
//
// The measure: `Rss:` of /proc/PID/smaps_rollup, which the kernel computes
// by walking the page tables, so it is exact to the page. (VmRSS in
// /proc/PID/status comes from per-CPU counters that may lag by a batch of
// pages per CPU: too coarse for a few bytes per connection.) `Anonymous:`
// is printed too: the heap and the stacks, without the file pages (code) a
// new path may fault in. Kernel memory (socket buffers, struct file, epoll
// items) is in neither: RSS is what the process itself holds.
//
// "Steady": the same Rss in 10 reads 20 ms apart. Every wait is bounded:
// each connect, send and read times out after 5 s (SO_SNDTIMEO,
// SO_RCVTIMEO), the steady RSS and the server's closes after 10 s, the whole
// run after --timeout seconds (default 120). Raises RLIMIT_NOFILE to the
// hard limit. Exit status 0 on success, 1 on any error (said on stderr), 2
// on bad usage. 127.0.0.1 only.
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

enum {
    kIoTimeoutSeconds = 5,   // one connect, send or read
    kSteadyReads = 10,       // equal Rss reads in a row that make it "steady"
    kSteadyIntervalMs = 20,
    kWaitLimitSeconds = 10,  // for the steady Rss, for the server's closes
};

enum { kMaxProbe = 64 * 1024 };  // fits the loopback socket buffers: a batch never blocks both ways

static int port;
static long probe = 1;  // bytes each connection echoes
static unsigned char probe_out[kMaxProbe], probe_in[kMaxProbe];
static long server_pid;
static double deadline;  // the whole run, CLOCK_MONOTONIC seconds

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void sleep_ms(int ms) {
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR) {
    }
}

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void fail(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "idle_rss: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    exit(1);
}

static void check_deadline(const char *during) {
    if (now_s() > deadline) fail("--timeout passed during %s", during);
}

// ---------------------------------------------------------------- the server's side

struct mem {
    long rss, anon;  // bytes
};

// Rss and Anonymous of smaps_rollup, in bytes.
static struct mem read_mem(void) {
    char path[64];
    snprintf(path, sizeof path, "/proc/%ld/smaps_rollup", server_pid);
    FILE *f = fopen(path, "r");
    if (!f) fail("%s: %s (is the server still running, and ours?)", path, strerror(errno));
    struct mem m = {-1, -1};
    char line[256];
    long kb;
    while (fgets(line, sizeof line, f)) {
        if (sscanf(line, "Rss: %ld kB", &kb) == 1) m.rss = kb * 1024;
        else if (sscanf(line, "Anonymous: %ld kB", &kb) == 1) m.anon = kb * 1024;
    }
    fclose(f);
    if (m.rss < 0 || m.anon < 0) fail("%s: no Rss or Anonymous line", path);
    return m;
}

// How many fds the server holds: proves its side of the connections is open
// (or, after our closes, closed).
static long server_fds(void) {
    char path[64];
    snprintf(path, sizeof path, "/proc/%ld/fd", server_pid);
    DIR *d = opendir(path);
    if (!d) fail("%s: %s", path, strerror(errno));
    long n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (e->d_name[0] != '.') ++n;
    closedir(d);
    return n;
}

static struct mem steady_mem(const char *when) {
    double limit = now_s() + kWaitLimitSeconds;
    struct mem m = read_mem();
    int same = 1;
    while (same < kSteadyReads) {
        if (now_s() > limit) fail("the server's RSS was not steady within %d s %s", kWaitLimitSeconds, when);
        check_deadline(when);
        sleep_ms(kSteadyIntervalMs);
        struct mem next = read_mem();
        same = next.rss == m.rss ? same + 1 : 1;
        m = next;
    }
    return m;
}

// ---------------------------------------------------------------- our side

static int open_conn(void) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) fail("socket: %s", strerror(errno));
    // Blocking with timeouts: connect honours SO_SNDTIMEO, read SO_RCVTIMEO.
    struct timeval tv = {.tv_sec = kIoTimeoutSeconds};
    if (setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv) < 0 ||
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) < 0)
        fail("setsockopt: %s", strerror(errno));
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) fail("connect to 127.0.0.1:%d: %s", port, strerror(errno));
    return fd;
}

// Opens n connections in batches, each proven accepted by an echo of
// `probe` bytes (the pattern starts at i % 251, so neighbours differ).
static void open_batches(int *fds, int n, int batch) {
    for (int first = 0; first < n; first += batch) {
        int end = first + batch < n ? first + batch : n;
        for (int i = first; i < end; ++i) fds[i] = open_conn();
        for (int i = first; i < end; ++i) {
            for (long j = 0; j < probe; ++j) probe_out[j] = (unsigned char)((i + j) % 251);
            for (long sent = 0; sent < probe;) {
                ssize_t w = send(fds[i], probe_out + sent, (size_t)(probe - sent), MSG_NOSIGNAL);
                if (w < 0 && errno == EINTR) continue;
                if (w <= 0) fail("send on connection %d: %s", i, errno == EAGAIN ? "timed out" : strerror(errno));
                sent += w;
            }
        }
        for (int i = first; i < end; ++i) {
            for (long got = 0; got < probe;) {
                ssize_t r = recv(fds[i], probe_in + got, (size_t)(probe - got), 0);
                if (r < 0 && errno == EINTR) continue;
                if (r == 0) fail("connection %d: the server closed it before echoing", i);
                if (r < 0) fail("connection %d: no echo: %s", i, errno == EAGAIN ? "timed out" : strerror(errno));
                got += r;
            }
            for (long j = 0; j < probe; ++j)
                if (probe_in[j] != (unsigned char)((i + j) % 251))
                    fail("connection %d: the echo differs from the bytes sent", i);
        }
        check_deadline("connecting");
    }
}

// An idle connection must have nothing to read: no EOF (the server closed
// it), no bytes, no error.
static void check_idle(const int *fds, int n) {
    struct pollfd p[256];
    for (int first = 0; first < n; first += 256) {
        int m = n - first < 256 ? n - first : 256;
        for (int i = 0; i < m; ++i) p[i] = (struct pollfd){.fd = fds[first + i], .events = POLLIN | POLLRDHUP};
        int r = poll(p, (nfds_t)m, 0);
        if (r < 0) fail("poll: %s", strerror(errno));
        for (int i = 0; r > 0 && i < m; ++i)
            if (p[i].revents)
                fail("connection %d is no longer idle (the server closed it or sent something)", first + i);
    }
}

static void close_all(int *fds, int n) {
    for (int i = 0; i < n; ++i) close(fds[i]);
}

// After our closes: the server has closed its ends once its fd count is back.
static void wait_server_fds(long at_most) {
    double limit = now_s() + kWaitLimitSeconds;
    long n;
    while ((n = server_fds()) > at_most) {
        if (now_s() > limit)
            fail("the server still holds %ld fds (expected %ld) %d s after our closes", n, at_most, kWaitLimitSeconds);
        sleep_ms(kSteadyIntervalMs);
    }
}

static void raise_nofile(long need) {
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) < 0) fail("getrlimit: %s", strerror(errno));
    if (rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &rl) < 0) fail("setrlimit: %s", strerror(errno));
    }
    if (rl.rlim_cur != RLIM_INFINITY && (long)rl.rlim_cur < need)
        fail("needs %ld fds, the hard limit is %ld (raise it: ulimit -Hn)", need, (long)rl.rlim_cur);
}

static void usage(const char *prog) {
    fprintf(stderr,
            "usage: %s --port P --server-pid PID --conns K [--warmup W] [--rounds R] [--batch B] [--probe BYTES]\n"
            "       [--timeout S]\n"
            "  the server's RSS growth per idle connection to 127.0.0.1:P (see the comment atop idle_rss.c)\n",
            prog);
}

static long parse_long(const char *s, const char *opt, long min) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || *end || end == s || v < min) {
        fprintf(stderr, "idle_rss: %s needs an integer >= %ld, not '%s'\n", opt, min, s);
        exit(2);
    }
    return v;
}

int main(int argc, char **argv) {
    long conns = 0, warmup = 64, rounds = 1, batch = 64, timeout = 120;
    for (int i = 1; i < argc; ++i) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(argv[0]);
            return 0;
        }
        if (i + 1 >= argc) {
            usage(argv[0]);
            return 2;
        }
        const char *v = argv[++i];
        if (!strcmp(a, "--port")) port = (int)parse_long(v, a, 1);
        else if (!strcmp(a, "--server-pid")) server_pid = parse_long(v, a, 1);
        else if (!strcmp(a, "--conns")) conns = parse_long(v, a, 1);
        else if (!strcmp(a, "--warmup")) warmup = parse_long(v, a, 0);
        else if (!strcmp(a, "--rounds")) rounds = parse_long(v, a, 1);
        else if (!strcmp(a, "--batch")) batch = parse_long(v, a, 1);
        else if (!strcmp(a, "--timeout")) timeout = parse_long(v, a, 1);
        else if (!strcmp(a, "--probe")) probe = parse_long(v, a, 1);
        else {
            usage(argv[0]);
            return 2;
        }
    }
    if (probe > kMaxProbe) {
        fprintf(stderr, "idle_rss: --probe is at most %d bytes\n", kMaxProbe);
        return 2;
    }
    if (port == 0 || port > 65535 || server_pid == 0 || conns == 0) {
        usage(argv[0]);
        return 2;
    }
    deadline = now_s() + (double)timeout;
    raise_nofile(warmup + conns + 16);

    int *warm = calloc((size_t)warmup + 1, sizeof *warm);
    int *fds = calloc((size_t)conns, sizeof *fds);
    if (!warm || !fds) fail("out of memory");

    long fds_start = server_fds();
    open_batches(warm, (int)warmup, (int)batch);
    for (long r = 1; r <= rounds; ++r) {
        struct mem before = steady_mem("before opening the connections");
        long fds_before = server_fds();
        open_batches(fds, (int)conns, (int)batch);
        struct mem after = steady_mem("after opening the connections");
        long fds_after = server_fds();
        check_idle(warm, (int)warmup);
        check_idle(fds, (int)conns);
        if (fds_after - fds_before < conns)
            fail("the server holds %ld more fds, not the %ld connections opened", fds_after - fds_before, conns);
        printf("round=%ld conns=%ld warmup=%ld probe=%ld rss_before=%ld rss_after=%ld bytes_per_conn=%.1f "
               "anon_before=%ld anon_after=%ld anon_bytes_per_conn=%.1f fds_before=%ld fds_after=%ld\n",
               r, conns, warmup, probe, before.rss, after.rss, (double)(after.rss - before.rss) / (double)conns,
               before.anon, after.anon, (double)(after.anon - before.anon) / (double)conns, fds_before, fds_after);
        fflush(stdout);
        close_all(fds, (int)conns);
        wait_server_fds(fds_before);
    }
    close_all(warm, (int)warmup);
    wait_server_fds(fds_start);
    free(fds);
    free(warm);
    return 0;
}
