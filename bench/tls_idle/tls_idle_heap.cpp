// SPDX-License-Identifier: MIT
// bench/tls_idle/tls_idle_heap: the heap an idle TLS server connection holds,
// and how much of it OpenSSL's own allocations are, by OpenSSL source line
// (issue 46: the idle-TLS target). In process, so no allocator slack and no
// other connection's leftovers count: glibc's heap in use (mallinfo2) before
// and after N handshaken, idle connections, and OpenSSL's allocations seen
// through CRYPTO_set_mem_functions (installed before OpenSSL allocates
// anything). The clients are another process (tls_idle_clients.py, Python's
// ssl over 127.0.0.1), so their memory is not ours.
//
//   cmake -S bench -B /tmp/b -DCMAKE_BUILD_TYPE=Release && ninja -C /tmp/b tls_idle_heap
//   /tmp/b/tls_idle_heap [N=300] [--no-tickets] [--by-line]
//
// Prints the bytes per connection: the heap, OpenSSL's share, the rest (ours:
// the plain connection, the tls::Connection, their blocks). --by-line prints
// OpenSSL's live allocations by source line instead, largest first (the map
// that keeps them is on the heap too, so that run prints no heap figure). Talks to 127.0.0.1 only;
// ends by itself (the clients hold their connections for a few seconds).
#include <malloc.h>
#include <openssl/crypto.h>
#include <spawn.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include <reactor/net/listener.hpp>
#include <reactor/tls/certificate_maker.hpp>
#include <reactor/tls/connection.hpp>

extern char** environ;

namespace {

// OpenSSL's live allocations: their chunk sizes, and while `counting`, each
// one's source line. The map's own allocations go through malloc, not
// through these hooks.
struct Site {
    const char* file;
    int line;
    std::size_t bytes;
};
long openssl_live = 0;
bool counting = false;
std::unordered_map<void*, Site>* sites = nullptr;

void noted(void* p, const char* file, int line) {
    openssl_live += static_cast<long>(malloc_usable_size(p));
    if (counting) (*sites)[p] = {file, line, malloc_usable_size(p)};
}
void forgotten(void* p) {
    openssl_live -= static_cast<long>(malloc_usable_size(p));
    if (counting) sites->erase(p);
}
void* openssl_malloc(std::size_t n, const char* file, int line) {
    void* p = std::malloc(n);
    if (p) noted(p, file, line);
    return p;
}
void* openssl_realloc(void* p, std::size_t n, const char* file, int line) {
    if (p) forgotten(p);
    void* q = std::realloc(p, n);
    if (q) noted(q, file, line);
    return q;
}
void openssl_free(void* p, const char*, int) {
    if (p) forgotten(p);
    std::free(p);
}

void run_for(reactor::Scheduler& sched, int ms) { sched.run_for(std::chrono::milliseconds(ms)); }

}  // namespace

int main(int argc, char** argv) {
    CRYPTO_set_mem_functions(openssl_malloc, openssl_realloc, openssl_free);
    int n = 300;
    bool tickets = true, by_line = false;
    for (int i = 1; i < argc; ++i) {
        if (std::strcmp(argv[i], "--no-tickets") == 0) {
            tickets = false;
        } else if (std::strcmp(argv[i], "--by-line") == 0) {
            by_line = true;
        } else {
            n = std::max(1, std::atoi(argv[i]));
        }
    }
    constexpr int kWarmup = 8;  // first connections: they grow the loop's tables
    reactor::Scheduler sched;
    reactor::tls::ServerOptions options;
    options.identity = reactor::tls::self_signed({"localhost"}).identity();
    options.session_tickets = tickets;
    auto context = reactor::tls::Context::server(options);
    std::vector<reactor::tls::ConnectionPtr> held;
    int handshaken = 0;
    auto listener = reactor::Listener::listen(sched, reactor::Address::loopback_v4(0), [&](const reactor::ConnectionPtr& c) {
        auto tls = reactor::tls::Connection::start_server(c, context);
        tls->set_handshake_callback([&](reactor::tls::Connection&) { ++handshaken; });
        held.push_back(tls);
    });
    const std::string port = std::to_string(listener->address().port()), count = std::to_string(n);
    const std::string script = std::string(BENCH_DIR) + "/tls_idle/tls_idle_clients.py";
    char* child_argv[] = {const_cast<char*>("python3"), const_cast<char*>(script.c_str()),
                          const_cast<char*>(port.c_str()), const_cast<char*>(count.c_str()), nullptr};
    pid_t child = 0;
    if (posix_spawnp(&child, "python3", nullptr, nullptr, child_argv, environ) != 0) {
        std::perror("tls_idle_heap: python3");
        return 1;
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    auto wait_for = [&](int want) {
        while (handshaken < want && std::chrono::steady_clock::now() < deadline) run_for(sched, 20);
        for (int i = 0; i < 20; ++i) run_for(sched, 10);  // the last records settle
        return handshaken >= want;
    };
    if (!wait_for(kWarmup)) return std::fprintf(stderr, "tls_idle_heap: the warm-up clients did not come\n"), 1;
    const long heap_before = static_cast<long>(mallinfo2().uordblks);
    const long openssl_before = openssl_live;
    sites = new std::unordered_map<void*, Site>();
    counting = by_line;
    if (!wait_for(kWarmup + n)) return std::fprintf(stderr, "tls_idle_heap: %d of %d clients came\n", handshaken - kWarmup, n), 1;
    counting = false;
    const long heap = static_cast<long>(mallinfo2().uordblks) - heap_before;
    const long openssl = openssl_live - openssl_before;
    if (!by_line) {
        std::printf("%d idle TLS connections (session tickets %s): heap %ld bytes each, OpenSSL's %ld, ours %ld\n", n,
                    tickets ? "on" : "off", heap / n, openssl / n, (heap - openssl) / n);
    } else {
        std::printf("%d idle TLS connections (session tickets %s): OpenSSL's %ld bytes each, by line:\n", n,
                    tickets ? "on" : "off", openssl / n);
    }
    std::map<std::string, std::pair<long, long>> per_line;  // bytes (chunks: usable + 8), allocations
    for (const auto& [p, site] : *sites) {
        auto& entry = per_line[std::string(site.file ? site.file : "?") + ":" + std::to_string(site.line)];
        entry.first += static_cast<long>(site.bytes) + 8;
        ++entry.second;
    }
    std::vector<std::pair<long, std::string>> lines;
    for (const auto& [where, e] : per_line) lines.push_back({e.first, where + " (" + std::to_string(e.second / n) + " each)"});
    std::sort(lines.rbegin(), lines.rend());
    for (std::size_t i = 0; i < lines.size() && i < 16; ++i) std::printf("%8ld  %s\n", lines[i].first / n, lines[i].second.c_str());
    for (auto& tls : held) tls->abort();
    run_for(sched, 100);
    ::kill(child, SIGTERM);
    ::waitpid(child, nullptr, 0);
    return 0;
}
