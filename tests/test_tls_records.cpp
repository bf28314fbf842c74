// SPDX-License-Identifier: MIT
// The records one call into the TLS engine writes leave in one write: a TLS
// 1.3 server's two session tickets are one send(2), not two. Seen through
// SOCK_SEQPACKET socket pairs, which keep every send(2) a message of its own:
// the server's transport is one end of a pair, the client's one end of
// another, and the test relays between the two other ends, counting what the
// server sent. And they reach the transport only once the engine call has
// returned: an allocation that fails on the way (this program's operator new
// fails on demand) never unwinds through OpenSSL's C frames nor out of a
// destructor, and ends the connection with a reason (each case in a forked
// child, so that a std::terminate would not take the suite with it).
// Loopback only (Unix sockets); on every selector backend.
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/test/unit_test.hpp>

#include <array>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <functional>
#include <new>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <reactor/net/connection.hpp>
#include <reactor/tls/connection.hpp>

#include "support/backends.hpp"
#include "support/net_util.hpp"
#include "support/tls_fixtures.hpp"

namespace tls = reactor::tls;
using reactor_test::on;

// Allocation failure on demand: while armed, the Nth operator new from then
// on throws std::bad_alloc (once; then the countdown is disarmed). Replaces
// the global operator new of this test program only (unarmed: malloc).
namespace {
int fail_allocation_countdown = 0;  // 0: disarmed; one thread uses it (the forked child's)
void fail_nth_allocation(int n) { fail_allocation_countdown = n; }
}  // namespace

// operator new is malloc, and GCC then mistakes the matching delete's free() for a mismatch.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"

void* operator new(std::size_t size) {
    if (fail_allocation_countdown > 0 && --fail_allocation_countdown == 0) throw std::bad_alloc();
    if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
    throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void* operator new(std::size_t size, const std::nothrow_t&) noexcept { return std::malloc(size == 0 ? 1 : size); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }

namespace {

std::array<int, 2> seqpacket_pair() {
    std::array<int, 2> fds{-1, -1};
    BOOST_REQUIRE(::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fds.data()) == 0);
    return fds;
}

// Moves each message from `from` to `to` as one message, noting its size;
// the end of `from` shuts `to`'s writing down.
void relay(reactor::Scheduler& sched, int from, int to, std::vector<std::size_t>* sizes) {
    sched.add_reader(from, [&sched, from, to, sizes] {
        std::array<char, 65536> buf;
        const ssize_t n = ::recv(from, buf.data(), buf.size(), 0);
        if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
        if (n <= 0) {
            sched.remove_reader(from);
            ::shutdown(to, SHUT_WR);
            return;
        }
        if (sizes) sizes->push_back(static_cast<std::size_t>(n));
        ::send(to, buf.data(), static_cast<std::size_t>(n), MSG_NOSIGNAL);  // the peer may have gone: ignored
    });
}

}  // namespace

BOOST_AUTO_TEST_CASE(the_records_of_one_engine_call_leave_in_one_write) {
    reactor::Scheduler sched(on(reactor_test::backend_under_test()));
    const auto server_pair = seqpacket_pair();
    const auto client_pair = seqpacket_pair();
    std::vector<std::size_t> server_sent;  // the size of each of the server's writes, in order
    relay(sched, server_pair[1], client_pair[1], &server_sent);
    relay(sched, client_pair[1], server_pair[1], nullptr);

    std::optional<reactor::End> server_reason, client_reason;
    std::string client_got;
    auto server = tls::Connection::start_server(reactor::Connection::adopt(sched, server_pair[0]),
                                                reactor_test::server_context());
    server->set_data_callback([](tls::Connection& c, std::string_view d) { c.write(d); });
    server->set_close_callback([&](tls::Connection&, const reactor::End& r) { server_reason = r; });
    auto client = tls::Connection::start_client(reactor::Connection::adopt(sched, client_pair[0]),
                                                reactor_test::client_context(), "localhost");
    std::string protocol;
    client->set_handshake_callback([&](tls::Connection& c) {
        protocol = c.protocol_version();
        c.write("ping");
    });
    client->set_data_callback([&](tls::Connection& c, std::string_view d) {
        client_got += d;
        if (client_got == "ping") c.close();
    });
    client->set_close_callback([&](tls::Connection&, const reactor::End& r) { client_reason = r; });
    server.reset();
    client.reset();

    BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return server_reason && client_reason; }));
    BOOST_TEST(protocol == "TLSv1.3");
    BOOST_TEST(client_got == "ping");
    BOOST_TEST(server_reason->to_string() == "eof");
    // The server wrote: its flight (ServerHello to Finished), the two session
    // tickets (one engine call: one write; two before the records were held),
    // the echo, and its close_notify in answer to the client's.
    BOOST_TEST(server_sent.size() == 4u);
    if (server_sent.size() == 4u) {
        // Two tickets in one message: longer than the echo and the alert together.
        BOOST_TEST(server_sent[1] > server_sent[2] + server_sent[3]);
    }

    sched.remove_reader(server_pair[1]);
    sched.remove_reader(client_pair[1]);
    ::close(server_pair[1]);
    ::close(client_pair[1]);
}

namespace {

// Runs `body` in a forked child (bounded by alarm(2)); its exit status.
// Boost.Test stays out of the child: `body` returns 0 for success, or a
// code naming what it found wrong, and writes its findings to stderr.
int in_child(const std::function<int()>& body) {
    std::fflush(nullptr);
    const pid_t pid = ::fork();
    BOOST_REQUIRE(pid >= 0);
    if (pid == 0) {
        // Boost.Test's handlers would carry on with the next case in the child.
        std::signal(SIGABRT, SIG_DFL);
        std::signal(SIGSEGV, SIG_DFL);
        std::signal(SIGALRM, SIG_DFL);
        ::alarm(30);
        int code = 99;
        try {
            code = body();
        } catch (...) {
            code = 98;
        }
        ::_exit(code);
    }
    int status = 0;
    BOOST_REQUIRE(::waitpid(pid, &status, 0) == pid);
    return status;
}

std::string describe(int status) {
    if (WIFEXITED(status)) return "exited " + std::to_string(WEXITSTATUS(status));
    if (WIFSIGNALED(status)) return "killed by signal " + std::to_string(WTERMSIG(status));
    return "status " + std::to_string(status);
}

// A TLS server and client over one AF_UNIX stream socket pair on `sched`,
// handshake done; the client no longer reads, so the server's writes back up.
struct PairedTls {
    tls::ConnectionPtr server, client;
    std::optional<reactor::End> server_reason, client_reason;
    bool ready(reactor::Scheduler& sched) {
        if (!reactor_test::start_over_socketpair(sched, server, client)) return false;
        bool server_done = false, client_done = false;
        server->set_handshake_callback([&](tls::Connection&) { server_done = true; });
        client->set_handshake_callback([&](tls::Connection&) { client_done = true; });
        server->set_close_callback([this](tls::Connection&, const reactor::End& r) { server_reason = r; });
        client->set_close_callback([this](tls::Connection&, const reactor::End& r) { client_reason = r; });
        if (!reactor_test::run_until(sched, [&] { return server_done && client_done; })) return false;
        client->pause_reading();
        return true;
    }
    // The client aborted, both close callbacks run: nothing left on `sched`.
    bool end(reactor::Scheduler& sched) {
        client->abort();
        return reactor_test::run_until(sched, [&] { return server_reason && client_reason; });
    }
};

}  // namespace

// The server's output backs up (the client reads nothing), so a record the
// transport must queue grows its buffer: that allocation fails. The records
// are handed over after the engine call, so the failure is an exception out
// of write() (as the plain Connection's), not one unwinding through OpenSSL
// or out of a destructor (std::terminate before); the connection, whose
// records are lost, is aborted with the reason tls_error.
BOOST_AUTO_TEST_CASE(an_allocation_failing_as_records_reach_the_transport_aborts_the_connection) {
    const int status = in_child([] {
        reactor::Scheduler sched(on(reactor_test::backend_under_test()));
        PairedTls tls_pair;
        if (!tls_pair.ready(sched)) return 2;
        tls::Connection& server = *tls_pair.server;
        // Until the transport holds what the kernel would not take: its
        // buffer is then exactly full, and the next record grows it.
        const std::string chunk(16 * 1024, 'x');
        for (int i = 0; i < 1000 && server.transport().buffered() == 0; ++i) server.write(chunk);
        if (server.transport().buffered() == 0) return 3;
        bool threw = false, written = false;
        fail_nth_allocation(1);
        try {
            written = server.write("one short record");
        } catch (const std::bad_alloc&) {
            threw = true;
        }
        fail_nth_allocation(0);
        if (!threw) {
            std::fprintf(stderr, "write did not throw (returned %d)\n", written ? 1 : 0);
            return 4;
        }
        if (!reactor_test::run_until(sched, [&] { return tls_pair.server_reason.has_value(); })) return 5;
        if (tls_pair.server_reason->kind != reactor::EndKind::tls_error) {
            std::fprintf(stderr, "reason: %s\n", tls_pair.server_reason->to_string().c_str());
            return 6;
        }
        if (!tls_pair.end(sched)) return 7;
        return 0;
    });
    BOOST_TEST(status == 0, describe(status));
}

// The engine's own output (what the BIO collects during the call) cannot
// grow: the BIO catches the std::bad_alloc inside the C frame and fails the
// write, so the engine call fails; write() returns false and the connection
// is aborted (tls_error, naming OpenSSL's "malloc failure"). On a thread of
// its own, whose collecting buffer is new: the first allocation of a 64 KiB
// write is the buffer's growth.
BOOST_AUTO_TEST_CASE(an_allocation_failing_inside_the_engine_call_fails_the_write) {
    const int status = in_child([] {
        int code = 99;
        std::thread([&] {
            reactor::Scheduler sched(on(reactor_test::backend_under_test()));
            PairedTls tls_pair;
            if (!tls_pair.ready(sched)) {
                code = 2;
                return;
            }
            bool written = true, threw = false;
            const std::string bulk(64 * 1024, 'y');
            fail_nth_allocation(1);
            try {
                written = tls_pair.server->write(bulk);
            } catch (const std::bad_alloc&) {
                threw = true;
            }
            fail_nth_allocation(0);
            if (threw || written) {
                std::fprintf(stderr, "threw %d, written %d\n", threw ? 1 : 0, written ? 1 : 0);
                code = 3;
                return;
            }
            if (!reactor_test::run_until(sched, [&] { return tls_pair.server_reason.has_value(); })) {
                code = 4;
                return;
            }
            const reactor::End& r = *tls_pair.server_reason;
            if (r.kind != reactor::EndKind::tls_error || r.detail.find("malloc failure") == std::string::npos) {
                std::fprintf(stderr, "reason: %s\n", r.to_string().c_str());
                code = 5;
                return;
            }
            code = tls_pair.end(sched) ? 0 : 6;
        }).join();
        return code;
    });
    BOOST_TEST(status == 0, describe(status));
}
