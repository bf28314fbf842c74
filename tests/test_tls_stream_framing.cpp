// SPDX-License-Identifier: MIT
// futures::Stream's framed reads over TLS (reactor::futures_tls): read_line,
// lines(), read_frame and write_frame work unchanged through the TLS
// transport, and the peer's close_notify is their clean end of input. Real
// sockets on 127.0.0.1, on every backend; certificates made in memory
// (support/tls_fixtures.hpp). A suite of its own: it links futures_tls.
#include <boost/test/unit_test.hpp>

#include <optional>
#include <string>
#include <vector>

#include <futures/futures.hpp>
#include <futures/stream.hpp>
#include <futures/tls/stream.hpp>
#include <reactor/net/frame.hpp>
#include <reactor/tls/connection.hpp>

#include "support/backends.hpp"
#include "support/check_empty.hpp"
#include "support/net_util.hpp"
#include "support/tls_fixtures.hpp"

using futures::Future;
using futures::Stream;
using reactor::LengthPrefix;

namespace {

constexpr reactor::FrameFormat kU16{.prefix = LengthPrefix::u16, .max_size = 1000};

// Server side: two lines, then frames until a clean end; answers each with a
// u16 frame "line: ..." or "frame: ...", and counts what it read.
struct Conversation {
    Stream stream;
    int lines_left = 2;
    std::vector<std::string> seen;
    futures::Promise<void> done;

    void next() {
        if (lines_left > 0) {
            stream.read_line().add_done_callback([this](Future<std::optional<std::string>>& f) {
                --lines_left;
                answer("line: ", f.result());
            });
        } else {
            stream.read_frame(kU16).add_done_callback(
                [this](Future<std::optional<std::string>>& f) { answer("frame: ", f.result()); });
        }
    }
    void answer(const char* what, std::optional<std::string> item) {
        if (!item) return (void)done.set_value();  // the client's close_notify
        seen.push_back(what + *item);
        stream.write_frame(what + *item, kU16);
        next();
    }
};

}  // namespace

BOOST_AUTO_TEST_CASE(lines_and_frames_over_tls_in_pieces_end_cleanly_at_close_notify) {
    reactor::Scheduler sched(reactor_test::on(reactor_test::backend_under_test()));
    {
        std::optional<Conversation> conversation;
        auto server = futures::start_server(
            sched, reactor::Address::loopback_v4(0),
            [&](Stream s) {
                conversation.emplace(Conversation{s, 2, {}, futures::Promise<void>(sched)});
                conversation->next();
                return conversation->done.get_future();
            },
            {}, reactor_test::server_context());
        Stream client = futures::run_until_complete(
            sched, futures::open_connection(sched, server.address(), reactor_test::client_context(), "localhost"));
        BOOST_REQUIRE(client.tls() != nullptr);
        // Each piece its own TLS record, split inside a line, a prefix and a payload.
        const std::string input = "hello\r\nworld\n" + std::string("\0\x07", 2) + "payload" + std::string("\0\0", 2);
        const std::vector<std::size_t> cuts = {3, 10, 14, 18, 23, input.size()};
        std::size_t from = 0;
        for (std::size_t cut : cuts) {
            client.write(std::string_view(input).substr(from, cut - from));
            futures::run_until_complete(sched, client.drain());
            from = cut;
        }
        std::vector<std::string> answers;
        for (int i = 0; i < 4; ++i) answers.push_back(futures::run_until_complete(sched, client.read_frame(kU16)).value());
        const std::vector<std::string> expected = {"line: hello", "line: world", "frame: payload", "frame: "};
        BOOST_TEST(answers == expected, boost::test_tools::per_element());
        client.close();  // close_notify: the server's read_frame ends with an empty optional
        BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return conversation && !conversation->done.is_pending(); }));
        BOOST_TEST(conversation->seen == expected, boost::test_tools::per_element());
        futures::run_until_complete(sched, client.wait_closed());
        server.close();
        futures::run_until_complete(sched, server.wait_closed());
        conversation.reset();
    }
    sched.run();
    CHECK_EMPTY(sched);
}

BOOST_AUTO_TEST_CASE(a_tls_peer_that_ends_mid_line_fails_read_line_with_the_partial_line) {
    reactor::Scheduler sched(reactor_test::on(reactor_test::backend_under_test()));
    {
        std::optional<Future<std::optional<std::string>>> second;
        Stream server_side;
        auto server = futures::start_server(
            sched, reactor::Address::loopback_v4(0),
            [&](Stream s) {
                server_side = s;
                return s.read_line().then([&, s](std::optional<std::string> first) mutable {
                    BOOST_TEST(first.value() == "whole");
                    second = s.read_line();
                });
            },
            {}, reactor_test::server_context());
        Stream client = futures::run_until_complete(
            sched, futures::open_connection(sched, server.address(), reactor_test::client_context(), "localhost"));
        client.write("whole\nhalf");
        client.close();
        BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return second && second->done(); }));
        try {
            second->result();
            BOOST_ERROR("read_line did not fail");
        } catch (const futures::IncompleteReadError& e) {
            BOOST_TEST(e.partial == "half");
        }
        futures::run_until_complete(sched, client.wait_closed());
        server.close();
        futures::run_until_complete(sched, server.wait_closed());
        second.reset();
        server_side = {};
    }
    sched.run();
    CHECK_EMPTY(sched);
}
