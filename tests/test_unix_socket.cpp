// SPDX-License-Identifier: MIT
// Unix domain stream sockets: the TCP classes reached by path, on every backend.
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <boost/test/unit_test.hpp>
#include <cstdlib>
#include <optional>
#include <string>

#include <fmt/format.h>
#include <reactor/net/unix_socket.hpp>

#include "support/backends.hpp"
#include "support/net_util.hpp"

using namespace std::chrono_literals;
using reactor::CloseReason;
using reactor::Connection;
using reactor::ConnectionPtr;

namespace {

using reactor_test::on;

// A fresh directory per test, removed afterwards.
struct TempDir {
    std::string path;
    TempDir() {
        char tmpl[] = "/tmp/reactor-unix-XXXXXX";
        path = ::mkdtemp(tmpl);
    }
    ~TempDir() { ::rmdir(path.c_str()); }
    std::string file(const char* name) const { return path + "/" + name; }
};

bool exists(const std::string& path) {
    struct stat st {};
    return ::lstat(path.c_str(), &st) == 0;
}

}  // namespace

BOOST_AUTO_TEST_CASE(round_trip_through_a_socket_file) {
    const reactor::Backend backend = reactor_test::backend_under_test();
    TempDir dir;
    const std::string path = dir.file("echo.sock");
    reactor::Scheduler sched(on(backend));
    auto listener = reactor::listen_unix(sched, path, [](const ConnectionPtr& c) {
        c->set_data_callback([](Connection& c, std::string_view d) { c.write(d); });
    });
    BOOST_TEST(listener->address().to_string() == "unix:" + path);
    BOOST_TEST(exists(path));

    const std::string payload = reactor_test::random_bytes(1 << 20, 5);
    std::string got;
    std::optional<CloseReason> reason;
    reactor::connect_unix(sched, path, [&](ConnectionPtr c, std::error_code ec) {
        BOOST_REQUIRE(!ec);
        c->set_data_callback([&](Connection& c, std::string_view d) {
            got += d;
            if (got.size() == payload.size()) c.close();
        });
        c->set_close_callback([&](Connection&, const CloseReason& r) { reason = r; });
        c->write(payload);
    });
    BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return reason.has_value(); }));
    BOOST_TEST((got == payload));
    BOOST_TEST(reason->to_string() == "local");
    listener->close();
    BOOST_TEST(!exists(path), "the listener removes its socket file");
    sched.run();
    BOOST_TEST(sched.empty());
}

BOOST_AUTO_TEST_CASE(abstract_socket_and_half_close) {
    const reactor::Backend backend = reactor_test::backend_under_test();
    reactor::Scheduler sched(on(backend));
    const std::string name = fmt::format("@reactor-test-{}-{}", ::getpid(), static_cast<int>(backend));
    std::string server_got;
    auto listener = reactor::listen_unix(sched, name, [&](const ConnectionPtr& c) {
        c->set_data_callback([&](Connection&, std::string_view d) { server_got += d; });
        c->set_eof_callback([&](Connection& c) {
            c.write(fmt::format("got {} bytes", server_got.size()));
            c.write_eof();
        });
    });
    BOOST_TEST(listener->address().host() == name);
    std::string reply;
    std::optional<CloseReason> reason;
    reactor::connect_unix(sched, name, [&](ConnectionPtr c, std::error_code ec) {
        BOOST_REQUIRE(!ec);
        c->set_data_callback([&](Connection&, std::string_view d) { reply += d; });
        c->set_close_callback([&](Connection&, const CloseReason& r) { reason = r; });
        c->write("hello");
        c->write_eof();
    });
    BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return reason.has_value(); }));
    BOOST_TEST(reply == "got 5 bytes");
    BOOST_TEST(reason->to_string() == "eof");
    listener.reset();
    sched.run();
    BOOST_TEST(sched.empty());
}

BOOST_AUTO_TEST_CASE(connect_without_a_listener_fails_in_the_callback) {
    const reactor::Backend backend = reactor_test::backend_under_test();
    TempDir dir;
    reactor::Scheduler sched(on(backend));
    std::vector<int> errors;
    auto record = [&](ConnectionPtr c, std::error_code ec) {
        BOOST_TEST(!c);
        errors.push_back(ec.value());
    };
    reactor::connect_unix(sched, dir.file("nobody.sock"), record);
    BOOST_TEST(errors.empty());  // never synchronous
    // A file left by a dead server: ECONNREFUSED. (A hard link to a live
    // listener's file outlives the listener, as after a crash.)
    {
        auto dead = reactor::listen_unix(sched, dir.file("dead.sock"), nullptr);
        BOOST_REQUIRE(::link(dir.file("dead.sock").c_str(), dir.file("kept.sock").c_str()) == 0);
    }
    BOOST_TEST(exists(dir.file("kept.sock")));
    reactor::connect_unix(sched, dir.file("kept.sock"), record);
    sched.run();
    BOOST_TEST(errors == (std::vector<int>{ENOENT, ECONNREFUSED}));

    // A new listener replaces a stale socket file, but not a live one.
    auto live = reactor::listen_unix(sched, dir.file("kept.sock"), nullptr);
    BOOST_CHECK_THROW((void)reactor::listen_unix(sched, dir.file("kept.sock"), nullptr), std::system_error);
    live.reset();
    BOOST_TEST(!exists(dir.file("kept.sock")));
    sched.run();
    BOOST_TEST(sched.empty());
}
