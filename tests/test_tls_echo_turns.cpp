// SPDX-License-Identifier: MIT
// What a TLS echo costs its loop: each side's socket turning readable, and
// nothing more. The plain connection's drain (told a loop turn after each
// write) is asked for by a tls::Connection only while someone needs it: a
// drain callback, or a high-water mark to come back down from; a drain
// callback set or cleared on an open connection is heard. And the records
// that arrive together are all read, one data callback each, with no engine
// call that could only say "want read" between them.
// Unix socket pairs; on every selector backend.
#include <boost/test/unit_test.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <reactor/net/connection.hpp>
#include <reactor/tls/connection.hpp>

#include "support/backends.hpp"
#include "support/net_util.hpp"
#include "support/tls_fixtures.hpp"

namespace tls = reactor::tls;
using reactor_test::on;

namespace {

// A TLS server that echoes and a client, over one AF_UNIX stream socket
// pair, handshake done. The client sends `size` bytes, waits for them to
// come back, and sends again while `rounds` is above zero.
struct EchoPair {
    tls::ConnectionPtr server, client;
    std::string client_got;
    int rounds = 0;
    std::uint64_t echoes = 0;
    std::size_t size = 64;
    std::optional<reactor::End> server_reason, client_reason;

    bool start(reactor::Scheduler& sched) {
        if (!reactor_test::start_over_socketpair(sched, server, client)) return false;
        bool client_done = false;
        server->set_data_callback([](tls::Connection& c, std::string_view d) { c.write(d); });
        server->set_close_callback([this](tls::Connection&, const reactor::End& r) { server_reason = r; });
        client->set_handshake_callback([&client_done](tls::Connection&) { client_done = true; });
        client->set_data_callback([this](tls::Connection& c, std::string_view d) {
            client_got += d;
            if (client_got.size() < size) return;
            client_got.clear();
            ++echoes;
            if (--rounds > 0) c.write(std::string(size, 'x'));
        });
        client->set_close_callback([this](tls::Connection&, const reactor::End& r) { client_reason = r; });
        return reactor_test::run_until(sched, [&] { return client_done; });
    }
    // Runs `n` round trips; the loop's callbacks they took.
    std::uint64_t echo(reactor::Scheduler& sched, int n) {
        const std::uint64_t before = sched.stats().callbacks_run;
        const std::uint64_t echoes_before = echoes;
        rounds = n;
        client->write(std::string(size, 'x'));
        BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return echoes == echoes_before + std::uint64_t(n); }));
        return sched.stats().callbacks_run - before;
    }
    bool end(reactor::Scheduler& sched) {
        client->abort();
        return reactor_test::run_until(sched, [&] { return server_reason && client_reason; });
    }
};

}  // namespace

BOOST_AUTO_TEST_CASE(an_echo_costs_each_side_one_turn_and_a_drain_only_when_asked_for) {
    reactor::Scheduler sched(on(reactor_test::backend_under_test()));
    EchoPair pair;
    BOOST_REQUIRE(pair.start(sched));
    pair.echo(sched, 2);  // the session tickets and their reading are behind us

    // Per round trip: the server's socket readable, then the client's. (A
    // drain nobody wanted made it four: each side's write, a turn later.)
    constexpr int kRounds = 50;
    const std::uint64_t plain = pair.echo(sched, kRounds);
    BOOST_TEST(plain >= std::uint64_t(2 * kRounds));
    BOOST_TEST(plain <= std::uint64_t(2 * kRounds + 2));

    // A drain callback set on the open connection is heard: one per echo
    // the server wrote, its buffer empty by then.
    std::vector<std::size_t> drains;
    pair.server->set_drain_callback([&](tls::Connection& c) { drains.push_back(c.buffered()); });
    pair.echo(sched, 3);
    BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return drains.size() >= 3; }));
    BOOST_TEST((drains == std::vector<std::size_t>{0, 0, 0}));

    // Cleared, it is asked for no more: two turns per round trip again.
    pair.server->set_drain_callback(nullptr);
    const std::uint64_t cleared = pair.echo(sched, kRounds);
    BOOST_TEST(cleared <= std::uint64_t(2 * kRounds + 2));
    BOOST_TEST(drains.size() == 3u);
    BOOST_TEST(pair.end(sched));
}

BOOST_AUTO_TEST_CASE(records_that_arrive_together_are_all_read_whole_or_in_pieces) {
    reactor::Scheduler sched(on(reactor_test::backend_under_test()));
    EchoPair pair;
    BOOST_REQUIRE(pair.start(sched));
    pair.echo(sched, 1);
    std::vector<std::string> got;
    pair.server->set_data_callback([&](tls::Connection&, std::string_view d) { got.emplace_back(d); });

    // Three records written before the server reads: its one read holds them
    // all, and each is its own data callback.
    pair.client->write("one");
    pair.client->write("two");
    pair.client->write("three");
    BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return got.size() >= 3; }));
    BOOST_TEST((got == std::vector<std::string>{"one", "two", "three"}));

    // More than the socket holds at once arrives over many reads, records
    // cut anywhere between them; a small record follows, read whole.
    got.clear();
    const std::string big(200 * 1024, 'b');
    pair.client->write(big);
    pair.client->write("after");
    std::size_t big_got = 0;
    BOOST_REQUIRE(reactor_test::run_until(sched, [&] {
        big_got = 0;
        for (const auto& g : got) big_got += g == "after" ? 0 : g.size();
        return !got.empty() && got.back() == "after";
    }));
    BOOST_TEST(big_got == big.size());
    BOOST_TEST(pair.end(sched));
}
