// SPDX-License-Identifier: MIT
// reactor::LineReader: line mode on a Connection, over real sockets (a
// socketpair played by hand, and 127.0.0.1), on every backend. The input is
// split at every byte boundary, each part reaching the reader as a read of
// its own; over-long lines, the end of input mid-line, empty lines, LF and
// CRLF, other delimiters, pause, resume and detach.
#include <boost/test/unit_test.hpp>

#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <reactor/net/connection.hpp>
#include <reactor/net/connector.hpp>
#include <reactor/net/line_reader.hpp>
#include <reactor/net/listener.hpp>
#include <reactor/scheduler.hpp>

#include "support/backends.hpp"
#include "support/check_empty.hpp"
#include "support/framing_util.hpp"
#include "support/futures_util.hpp"
#include "support/net_util.hpp"

using reactor::CloseKind;
using reactor::Connection;
using reactor::LineReader;
using reactor_test::SocketPair;

namespace {

// One adopted end with a LineReader recording every line and the close reason.
struct Reading {
    reactor::Scheduler& sched;
    SocketPair pair;
    reactor::ConnectionPtr conn;
    std::shared_ptr<LineReader> reader;
    std::vector<std::string> lines;
    std::optional<reactor::CloseReason> closed;

    explicit Reading(reactor::Scheduler& s, reactor::LineOptions options = {}) : sched(s) {
        conn = Connection::adopt(sched, pair.ours);
        reader = LineReader::attach(
            conn, [this](Connection&, std::string_view line) { lines.emplace_back(line); }, std::move(options));
        conn->set_close_callback([this](Connection&, const reactor::CloseReason& r) { closed = r; });
    }
    int fd() const { return conn->fd(); }
    void feed(std::string_view part) {
        reactor_test::feed(sched, pair, part, [this] { return conn->fd(); });
    }
    // Ends the input and runs until the close callback has run.
    void finish() {
        pair.end_input();
        BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return closed.has_value(); }));
    }
};

const std::string kInput = "alpha\n\nbeta\r\ngamma\n\r\nlast one\n";
const std::vector<std::string> kLines = {"alpha", "", "beta", "gamma", "", "last one"};

}  // namespace

BOOST_AUTO_TEST_CASE(lines_split_at_every_byte_boundary_read_the_same) {
    for (std::size_t split = 0; split <= kInput.size(); ++split) {
        BOOST_TEST_CONTEXT("split at " << split) {
            reactor::Scheduler sched(reactor_test::on(reactor_test::backend_under_test()));
            {
                Reading r(sched);
                r.feed(kInput.substr(0, split));
                r.feed(kInput.substr(split));
                r.finish();
                BOOST_TEST(r.lines == kLines, boost::test_tools::per_element());
                BOOST_TEST(r.closed->kind == CloseKind::eof);
            }
            sched.run();
            CHECK_EMPTY(sched);
        }
    }
}

BOOST_AUTO_TEST_CASE(one_byte_per_read_reads_the_same_lines) {
    reactor::Scheduler sched(reactor_test::on(reactor_test::backend_under_test()));
    {
        Reading r(sched);
        for (char c : kInput) r.feed(std::string_view(&c, 1));
        r.finish();
        BOOST_TEST(r.lines == kLines, boost::test_tools::per_element());
        BOOST_TEST(r.closed->kind == CloseKind::eof);
    }
    sched.run();
    CHECK_EMPTY(sched);
}

BOOST_AUTO_TEST_CASE(a_line_of_the_maximum_length_is_read_and_one_byte_more_closes_line_too_long) {
    reactor::Scheduler sched(reactor_test::on(reactor_test::backend_under_test()));
    {
        Reading r(sched, {.max_length = 8});
        r.feed("12345678\n12345678\r\n");  // the end is not counted, "\r\n" neither
        BOOST_TEST(r.lines == (std::vector<std::string>{"12345678", "12345678"}), boost::test_tools::per_element());
        r.feed("123456789\nnever\n");
        BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return r.closed.has_value(); }));
        BOOST_TEST(r.closed->kind == CloseKind::line_too_long);
        BOOST_TEST(r.closed->to_string() == "line too long");
        BOOST_TEST(r.lines.size() == 2u);  // nothing after the long line
    }
    sched.run();
    CHECK_EMPTY(sched);
}

BOOST_AUTO_TEST_CASE(a_long_line_without_its_end_closes_as_soon_as_it_is_too_long_holding_bounded_memory) {
    reactor::Scheduler sched(reactor_test::on(reactor_test::backend_under_test()));
    {
        Reading r(sched, {.max_length = 16});
        // Byte by byte: the reader holds the line so far, and gives up at the
        // first byte that makes it longer than 16 plus a possible "\r".
        std::size_t most_held = 0;
        std::size_t sent = 0;
        while (r.conn->is_open() && sent < 100) {
            const char c = 'x';
            reactor_test::send_all(r.pair.raw, std::string_view(&c, 1));
            ++sent;
            BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return reactor_test::unread(r.conn->fd()) == 0; }));
            most_held = std::max(most_held, r.reader->buffered());
        }
        BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return r.closed.has_value(); }));
        BOOST_TEST(r.closed->kind == CloseKind::line_too_long);
        BOOST_TEST(sent == 18u);        // 16 bytes, a '\r' that might have come, and the one too many
        BOOST_TEST(most_held <= 17u);
        BOOST_TEST(r.lines.empty());
    }
    sched.run();
    CHECK_EMPTY(sched);
}

BOOST_AUTO_TEST_CASE(output_written_before_the_long_line_still_reaches_the_peer) {
    reactor::Scheduler sched(reactor_test::on(reactor_test::backend_under_test()));
    {
        SocketPair pair;
        auto conn = Connection::adopt(sched, pair.ours);
        std::optional<reactor::CloseReason> closed;
        LineReader::attach(
            conn, [](Connection& c, std::string_view line) { c.write(std::string("ok ") + std::string(line) + "\n"); },
            {.max_length = 4});
        conn->set_close_callback([&](Connection&, const reactor::CloseReason& r) { closed = r; });
        BOOST_REQUIRE(reactor_test::send_all(pair.raw, "one\ntoo long\n"));
        BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return closed.has_value(); }));
        BOOST_TEST(closed->kind == CloseKind::line_too_long);
        BOOST_TEST(reactor_test::recv_all(pair.raw) == "ok one\n");  // then EOF: a graceful close
    }
    sched.run();
    CHECK_EMPTY(sched);
}

BOOST_AUTO_TEST_CASE(end_of_input_mid_line_goes_to_the_eof_callback_or_closes_truncated) {
    reactor::Scheduler sched(reactor_test::on(reactor_test::backend_under_test()));
    {
        // With an EOF callback: the partial line, and the connection stays open for writing.
        Reading r(sched);
        std::optional<std::string> partial;
        r.reader->set_eof_callback([&](Connection& c, std::string_view p) {
            partial = std::string(p);
            c.write("bye\n");
            c.close();
        });
        r.feed("first\nsecond without end");
        r.finish();
        BOOST_TEST(r.lines == std::vector<std::string>{"first"}, boost::test_tools::per_element());
        BOOST_TEST(partial.value_or("none") == "second without end");
        BOOST_TEST(r.closed->kind == CloseKind::local);
        BOOST_TEST(reactor_test::recv_all(r.pair.raw) == "bye\n");
    }
    {
        // Without: the close reason says the input was cut.
        Reading r(sched);
        r.feed("first\nsec");
        r.finish();
        BOOST_TEST(r.lines == std::vector<std::string>{"first"}, boost::test_tools::per_element());
        BOOST_TEST(r.closed->kind == CloseKind::truncated);
    }
    {
        // A clean end reaches the EOF callback with "".
        Reading r(sched);
        std::optional<std::string> partial;
        r.reader->set_eof_callback([&](Connection& c, std::string_view p) {
            partial = std::string(p);
            c.close();
        });
        r.feed("first\n");
        r.finish();
        BOOST_TEST(partial.value_or("none") == "");
    }
    sched.run();
    CHECK_EMPTY(sched);
}

BOOST_AUTO_TEST_CASE(other_delimiters_are_matched_exactly_even_split) {
    reactor::Scheduler sched(reactor_test::on(reactor_test::backend_under_test()));
    const std::string input = "a\rb\r\n\n\r\nc\r\n";  // with "\r\n", a lone '\r' or '\n' is part of the line
    for (std::size_t split = 0; split <= input.size(); ++split) {
        BOOST_TEST_CONTEXT("split at " << split) {
            Reading r(sched, {.max_length = 100, .delimiter = "\r\n"});
            r.feed(input.substr(0, split));
            r.feed(input.substr(split));
            r.finish();
            BOOST_TEST(r.lines == (std::vector<std::string>{"a\rb", "\n", "c"}), boost::test_tools::per_element());
        }
    }
    {
        Reading r(sched, {.max_length = 100, .delimiter = std::string(1, '\0')});
        r.feed(std::string("one\r\0two\n\0", 10));
        r.finish();
        BOOST_TEST(r.lines == (std::vector<std::string>{"one\r", "two\n"}), boost::test_tools::per_element());
    }
    sched.run();
    CHECK_EMPTY(sched);
}

BOOST_AUTO_TEST_CASE(pause_holds_the_lines_already_received_until_resume_in_order) {
    reactor::Scheduler sched(reactor_test::on(reactor_test::backend_under_test()));
    {
        SocketPair pair;
        auto conn = Connection::adopt(sched, pair.ours);
        std::vector<std::string> lines;
        std::shared_ptr<LineReader> reader;
        reader = LineReader::attach(conn, [&](Connection&, std::string_view line) {
            lines.emplace_back(line);
            if (line == "pause") reader->pause();
        });
        BOOST_REQUIRE(reactor_test::send_all(pair.raw, "one\npause\nthree\nfour"));
        BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return lines.size() == 2; }));
        reactor_test::spin(sched, 5);  // nothing more while paused
        BOOST_TEST(lines.size() == 2u);
        BOOST_TEST(!conn->is_reading());
        BOOST_TEST(reader->buffered() == 10u);  // "three\nfour"
        BOOST_REQUIRE(reactor_test::send_all(pair.raw, "\nfive\n"));
        reader->resume();
        BOOST_TEST(lines.size() == 2u);  // never from inside resume()
        BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return lines.size() == 5; }));
        BOOST_TEST(lines == (std::vector<std::string>{"one", "pause", "three", "four", "five"}),
                   boost::test_tools::per_element());
        conn->abort();
    }
    sched.run();
    CHECK_EMPTY(sched);
}

BOOST_AUTO_TEST_CASE(detach_from_a_line_callback_gives_back_the_rest_and_plain_reads_follow) {
    reactor::Scheduler sched(reactor_test::on(reactor_test::backend_under_test()));
    {
        SocketPair pair;
        auto conn = Connection::adopt(sched, pair.ours);
        std::vector<std::string> lines;
        std::string raw;
        std::shared_ptr<LineReader> reader;
        reader = LineReader::attach(conn, [&](Connection& c, std::string_view line) {
            lines.emplace_back(line);
            if (line == "BODY") {
                raw = reader->detach();
                c.set_data_callback([&](Connection&, std::string_view d) { raw.append(d); });
            }
        });
        BOOST_REQUIRE(reactor_test::send_all(pair.raw, "HEAD\nBODY\nnot\na line"));
        BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return raw.size() == 10; }));
        BOOST_REQUIRE(reactor_test::send_all(pair.raw, "\nmore"));
        BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return raw.size() == 15; }));
        BOOST_TEST(lines == (std::vector<std::string>{"HEAD", "BODY"}), boost::test_tools::per_element());
        BOOST_TEST(raw == "not\na line\nmore");
        BOOST_TEST(!reader->attached());
        BOOST_TEST(reader->detach().empty());  // idempotent
        conn->abort();
    }
    sched.run();
    CHECK_EMPTY(sched);
}

BOOST_AUTO_TEST_CASE(a_line_callback_that_closes_gets_no_more_lines) {
    reactor::Scheduler sched(reactor_test::on(reactor_test::backend_under_test()));
    {
        Reading r(sched);
        r.conn->set_close_callback([&](Connection&, const reactor::CloseReason& reason) { r.closed = reason; });
        LineReader::attach(r.conn, [&](Connection& c, std::string_view line) {
            r.lines.emplace_back(line);
            if (line == "quit") c.close();
        });
        BOOST_REQUIRE(reactor_test::send_all(r.pair.raw, "a\nquit\nb\n"));
        BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return r.closed.has_value(); }));
        BOOST_TEST(r.lines == (std::vector<std::string>{"a", "quit"}), boost::test_tools::per_element());
        BOOST_TEST(r.closed->kind == CloseKind::local);
    }
    sched.run();
    CHECK_EMPTY(sched);
}

BOOST_AUTO_TEST_CASE(a_line_callback_that_throws_is_reported_and_the_lines_after_it_are_kept) {
    reactor::Scheduler sched(reactor_test::on(reactor_test::backend_under_test()));
    reactor_test::Reports reports(sched);
    {
        SocketPair pair;
        auto conn = Connection::adopt(sched, pair.ours);
        std::vector<std::string> lines;
        LineReader::attach(conn, [&](Connection&, std::string_view line) {
            lines.emplace_back(line);
            if (line == "boom") throw std::runtime_error("bad line");
        });
        reactor_test::feed(sched, pair, "a\nboom\nb\nhal", [&] { return conn->fd(); });
        BOOST_TEST(reports.size() == 1u);
        BOOST_TEST(lines == (std::vector<std::string>{"a", "boom"}), boost::test_tools::per_element());
        // "b" and "hal" were kept: the next read delivers them first.
        reactor_test::feed(sched, pair, "f\n", [&] { return conn->fd(); });
        BOOST_TEST(lines == (std::vector<std::string>{"a", "boom", "b", "half"}), boost::test_tools::per_element());
        BOOST_TEST(conn->is_open());
        conn->abort();
    }
    sched.run();
    CHECK_EMPTY(sched);
}

BOOST_AUTO_TEST_CASE(bad_arguments_are_refused) {
    reactor::Scheduler sched(reactor_test::on(reactor_test::backend_under_test()));
    {
        SocketPair pair;
        auto conn = Connection::adopt(sched, pair.ours);
        auto ignore = [](Connection&, std::string_view) {};
        BOOST_CHECK_THROW(LineReader::attach(nullptr, ignore), std::invalid_argument);
        BOOST_CHECK_THROW(LineReader::attach(conn, nullptr), std::invalid_argument);
        BOOST_CHECK_THROW(LineReader::attach(conn, ignore, {.max_length = 10, .delimiter = ""}), std::invalid_argument);
        conn->abort();
    }
    sched.run();
    CHECK_EMPTY(sched);
}

// A line server on 127.0.0.1, with a client that mixes LF and CRLF and sends
// each line in two writes.
BOOST_AUTO_TEST_CASE(a_line_server_on_loopback_answers_each_line) {
    reactor::Scheduler sched(reactor_test::on(reactor_test::backend_under_test()));
    {
        auto listener = reactor::Listener::listen(sched, reactor::Address::loopback_v4(0), [](const reactor::ConnectionPtr& c) {
            LineReader::attach(c, [](Connection& conn, std::string_view line) {
                conn.write("Got: " + std::string(line) + "\n");
            });
        });
        int fd = reactor_test::connect_blocking(listener->address().port());
        BOOST_REQUIRE(fd >= 0);
        BOOST_REQUIRE(reactor_test::send_all(fd, "hel"));
        BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return listener->connections().size() == 1; }));
        BOOST_REQUIRE(reactor_test::send_all(fd, "lo\r\nwor"));
        BOOST_REQUIRE(reactor_test::send_all(fd, "ld\n"));
        ::shutdown(fd, SHUT_WR);
        BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return listener->connections().empty(); }));
        BOOST_TEST(reactor_test::recv_all(fd) == "Got: hello\nGot: world\n");
        ::close(fd);
        listener->close();
    }
    sched.run();
    CHECK_EMPTY(sched);
}
