// SPDX-License-Identifier: MIT
// libFuzzer target for the server side of reactor::tls (reactor/src/tls):
// arbitrary bytes from a client, as a hostile one would send them instead of
// (or inside) a ClientHello. Build and run it with fuzz/run.sh (a clang
// build of the libraries with ASan + UBSan: fuzz/CMakeLists.txt).
//
// Each input is written to a Unix socket pair whose other end is a
// tls::Connection::start_server over a reactor::Connection, in two pieces
// with loop iterations between them (the cut depends on the input, so the
// search moves it: records split across reads), then the client end says EOF.
// Besides crashes, leaks and undefined behaviour, it checks the layer's
// promise: whatever arrived, the connection ends after the client's EOF,
// once, with a close reason that is not ours (no local close was asked for),
// and leaves the loop with nothing to do.
#include <sys/socket.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string_view>

#include <reactor/net/connection.hpp>
#include <reactor/scheduler.hpp>
#include <reactor/tls/certificate_maker.hpp>
#include <reactor/tls/connection.hpp>
#include <reactor/tls/context.hpp>

namespace {

const std::shared_ptr<reactor::tls::Context>& server_context() {
    static const auto context = [] {
        reactor::tls::ServerOptions options;
        options.identity = reactor::tls::self_signed({"localhost"}).identity();
        options.alpn = {"h2", "http/1.1"};
        return reactor::tls::Context::server(options);
    }();
    return context;
}

[[noreturn]] void fail(const char* what, std::size_t size) {
    std::fprintf(stderr, "tls handshake fuzz: %s (input %zu bytes)\n", what, size);
    std::abort();
}

void send_all(int fd, const std::uint8_t* data, std::size_t size) {
    while (size > 0) {
        const ssize_t n = ::send(fd, data, size, MSG_NOSIGNAL);
        if (n <= 0) return;  // the server closed (an alert, then its close): the rest is moot
        data += n;
        size -= static_cast<std::size_t>(n);
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    int fds[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) fail("socketpair failed", size);
    // Room for any input in the client's direction, so send_all never blocks.
    const int room = 1 << 20;
    ::setsockopt(fds[1], SOL_SOCKET, SO_SNDBUF, &room, sizeof room);
    {
        reactor::Scheduler sched;
        std::optional<reactor::End> closed;
        int close_calls = 0;
        auto tls = reactor::tls::Connection::start_server(reactor::Connection::adopt(sched, fds[0]), server_context());
        tls->set_data_callback([](reactor::tls::Connection&, std::string_view) {});
        tls->set_close_callback([&](reactor::tls::Connection&, const reactor::End& why) {
            ++close_calls;
            closed = why;
        });
        tls.reset();  // an open connection owns itself

        const std::size_t cut = size == 0 ? 0 : (data[0] * 257u + data[size - 1]) % (size + 1);
        send_all(fds[1], data, cut);
        sched.run_for(std::chrono::milliseconds(0));  // what is ready now: the first piece
        send_all(fds[1], data + cut, size - cut);
        ::shutdown(fds[1], SHUT_WR);
        // The client's EOF ends the connection at once, not at the 60 s
        // handshake timeout: 5 s of loop time is a generous bound.
        if (sched.run_for(std::chrono::seconds(5)) != reactor::RunStatus::idle)
            fail("the loop still had work 5 s after the client's EOF", size);
        if (close_calls != 1) fail("the close callback did not run exactly once", size);
        if (closed->kind == reactor::EndKind::local) fail("closed as if this side had asked", size);
    }
    ::close(fds[1]);
    return 0;
}
