// SPDX-License-Identifier: MIT
// reactor::tls::LineReader and reactor::tls::FrameReader (reactor/tls/readers.hpp):
// the plain readers' contract over a real TLS connection on 127.0.0.1, the
// library's client against the library's server on one loop, on every
// backend: lines split across records and reads, a line or a frame prefix
// over the maximum (the server closes with close_notify and the reason of
// the reader), frames written with reactor::write_frame over TLS, the
// peer's close_notify inside a line (the EOF callback's partial, or
// truncated), pause, resume and detach; and tls::Connection::close(EndKind),
// whose reason the readers give, also asked during the handshake. Ordering
// comes from callbacks and the loop's state, never from sleeps; every wait
// is bounded.
#include <boost/test/unit_test.hpp>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include <reactor/net/frame.hpp>
#include <reactor/net/listener.hpp>
#include <reactor/tls/connection.hpp>
#include <reactor/tls/listen.hpp>
#include <reactor/tls/readers.hpp>

#include "support/backends.hpp"
#include "support/check_empty.hpp"
#include "support/framing_util.hpp"
#include "support/net_util.hpp"
#include "support/tls_fixtures.hpp"

namespace tls = reactor::tls;
using reactor::EndKind;
using reactor_test::on;
using Strings = std::vector<std::string>;

namespace {

// The typed readers are the plain ones' template over tls::Connection.
static_assert(std::is_same_v<tls::LineReader, reactor::BasicLineReader<tls::Connection>>);
static_assert(std::is_same_v<tls::LineReader::LineCallback,
                             std::function<void(tls::Connection&, std::string_view)>>);
static_assert(std::is_same_v<tls::FrameReader::EofCallback,
                             std::function<void(tls::Connection&, std::string_view)>>);

// A TLS server on 127.0.0.1: each accepted connection goes to `setup`
// (which attaches a reader), and its close reason is recorded.
struct Server {
    reactor::ListenerPtr listener;
    std::vector<reactor::End> closes;
    tls::ConnectionPtr last;

    Server(reactor::Scheduler& sched, std::function<void(const tls::ConnectionPtr&)> setup) {
        listener = tls::listen(sched, reactor_test::any_loopback(), reactor_test::server_context(),
                               [this, setup = std::move(setup)](const tls::ConnectionPtr& c) {
                                   last = c;
                                   setup(c);
                                   c->set_close_callback(
                                       [this](tls::Connection&, const reactor::End& r) { closes.push_back(r); });
                               });
    }
    reactor::Address address() const { return listener->address(); }
};

// A TLS client recording what it receives and how it ended.
struct Client {
    tls::ConnectionPtr conn;
    bool handshaken = false;
    std::string received;
    std::optional<reactor::End> reason;

    Client(reactor::Scheduler& sched, const reactor::Address& to,
           std::function<void(tls::Connection&)> on_connect = {}) {
        tls::connect(sched, to, reactor_test::client_context(), "localhost",
                     [this, on_connect = std::move(on_connect)](tls::ConnectionPtr c, std::error_code ec) {
                         BOOST_REQUIRE(!ec);
                         conn = c;
                         c->set_handshake_callback([this](tls::Connection&) { handshaken = true; });
                         c->set_data_callback([this](tls::Connection&, std::string_view d) { received += d; });
                         c->set_close_callback([this](tls::Connection&, const reactor::End& r) { reason = r; });
                         if (on_connect) on_connect(*c);
                     });
    }
};

void finish(reactor::Scheduler& sched, Server& server) {
    server.listener->close();
    server.last = nullptr;
    sched.run();
    CHECK_EMPTY(sched);
}

}  // namespace

BOOST_AUTO_TEST_CASE(lines_split_across_records_and_reads_are_read_whole) {
    reactor::Scheduler sched(on(reactor_test::backend_under_test()));
    Strings lines;
    std::shared_ptr<tls::LineReader> reader;
    Server server(sched, [&](const tls::ConnectionPtr& c) {
        reader = tls::LineReader::attach(c, [&](tls::Connection& conn, std::string_view line) {
            lines.emplace_back(line);
            conn.write(fmt::format("Got: {}\n", line));
        });
    });
    Client client(sched, server.address());
    BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return client.handshaken && reader; }));
    // Each part is a record of its own, and a read of its own: the next one
    // is written once the server's reader has taken the last.
    BOOST_TEST(client.conn->write("ab"));
    BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return reader->buffered() == 2; }));
    BOOST_TEST(lines.empty());
    BOOST_TEST(client.conn->write("c\r\nde"));
    BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return lines.size() == 1 && reader->buffered() == 2; }));
    BOOST_TEST(client.conn->write("f\n\n"));
    BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return lines.size() == 3; }));
    BOOST_TEST(lines == (Strings{"abc", "def", ""}), boost::test_tools::per_element());
    BOOST_TEST(reader->buffered() == 0u);
    BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return client.received.size() == 24; }));
    BOOST_TEST(client.received == "Got: abc\nGot: def\nGot: \n");
    // The client's close_notify at a line boundary: the reader, without an
    // EOF callback, closes the server cleanly (eof).
    client.conn->close();
    BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return client.reason && server.closes.size() == 1; }));
    BOOST_TEST(server.closes[0].kind == EndKind::eof);
    BOOST_TEST(client.reason->kind == EndKind::local);
    BOOST_TEST(reader->options().max_length == reactor::LineOptions{}.max_length);
    finish(sched, server);
}

BOOST_AUTO_TEST_CASE(a_line_over_the_maximum_closes_the_server_with_line_too_long_after_close_notify) {
    reactor::Scheduler sched(on(reactor_test::backend_under_test()));
    Strings lines;
    Server server(sched, [&](const tls::ConnectionPtr& c) {
        tls::LineReader::attach(
            c,
            [&](tls::Connection& conn, std::string_view line) {
                lines.emplace_back(line);
                conn.write("ok\n");  // written before the long line: still goes out
            },
            {.max_length = 8});
    });
    Client client(sched, server.address(), [](tls::Connection& c) { c.write("12345678\n"); });
    BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return lines.size() == 1; }));
    // Too long before its end has come: closed as soon as the excess is seen.
    BOOST_TEST(client.conn->write("0123456789abc"));
    BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return client.reason && server.closes.size() == 1; }));
    BOOST_TEST(lines == (Strings{"12345678"}), boost::test_tools::per_element());
    BOOST_TEST(server.closes[0].kind == EndKind::line_too_long);
    BOOST_TEST(server.closes[0].to_string() == "line too long");
    BOOST_TEST(server.last->end()->kind == EndKind::line_too_long);
    // The client read the answer, then the server's close_notify: a clean
    // end (a TCP FIN without it would have been truncated).
    BOOST_TEST(client.received == "ok\n");
    BOOST_TEST(client.reason->kind == EndKind::eof);
    BOOST_TEST(client.conn->at_eof());
    finish(sched, server);
}

BOOST_AUTO_TEST_CASE(frames_written_with_write_frame_over_tls_both_ways_and_a_prefix_over_the_maximum) {
    for (const reactor::LengthPrefix prefix : {reactor::LengthPrefix::u16, reactor::LengthPrefix::u32}) {
        reactor::Scheduler sched(on(reactor_test::backend_under_test()));
        const reactor::FrameFormat format{.prefix = prefix, .max_size = 50'000};
        Strings frames;
        Server server(sched, [&](const tls::ConnectionPtr& c) {
            tls::FrameReader::attach(
                c,
                [&](tls::Connection& conn, std::string_view payload) {
                    frames.emplace_back(payload);
                    BOOST_TEST(reactor::write_frame(conn, fmt::format("{} bytes", payload.size()), format));
                },
                format);
        });
        Strings answers;
        std::shared_ptr<tls::FrameReader> answer_reader;
        // A frame larger than a record (16 KiB) comes in several records and reads.
        const std::string big = reactor_test::random_bytes(40'000, 7);
        Client client(sched, server.address(), [&](tls::Connection& c) {
            answer_reader = tls::FrameReader::attach(
                c.shared_from_this(), [&](tls::Connection&, std::string_view a) { answers.emplace_back(a); }, format);
            for (const std::string& p : {std::string("x"), std::string(), big})
                BOOST_TEST(reactor::write_frame(c, p, format));  // kept as plaintext until the handshake is done
        });
        BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return answers.size() == 3; }));
        BOOST_REQUIRE(frames.size() == 3u);
        BOOST_TEST(frames[0] == "x");
        BOOST_TEST(frames[1] == "");
        BOOST_TEST((frames[2] == big));
        BOOST_TEST(answers == (Strings{"1 bytes", "0 bytes", "40000 bytes"}), boost::test_tools::per_element());
        BOOST_TEST(answer_reader->format().max_size == 50'000u);
        // A prefix announcing one byte more than the maximum, and no payload:
        // closed as soon as the prefix is read.
        std::string over = reactor::make_frame("", {.prefix = prefix});
        over.back() = static_cast<char>(0x51);  // 50'001 = 0xC351
        over[over.size() - 2] = static_cast<char>(0xC3);
        BOOST_TEST(reactor::decode_frame_length(prefix, over.data()) == 50'001u);
        BOOST_TEST(client.conn->write(over));
        BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return client.reason && server.closes.size() == 1; }));
        BOOST_TEST(server.closes[0].kind == EndKind::frame_too_large);
        BOOST_TEST(client.reason->kind == EndKind::eof);  // the server's close_notify came
        BOOST_TEST(frames.size() == 3u);
        finish(sched, server);
    }
}

BOOST_AUTO_TEST_CASE(the_peers_close_notify_mid_line_goes_to_the_eof_callback_or_closes_truncated) {
    for (const bool with_eof_callback : {true, false}) {
        BOOST_TEST_CONTEXT("with an EOF callback: " << with_eof_callback) {
            reactor::Scheduler sched(on(reactor_test::backend_under_test()));
            Strings lines;
            std::optional<std::string> partial;
            Server server(sched, [&](const tls::ConnectionPtr& c) {
                auto reader = tls::LineReader::attach(
                    c, [&](tls::Connection&, std::string_view line) { lines.emplace_back(line); });
                if (with_eof_callback) {
                    reader->set_eof_callback([&](tls::Connection& conn, std::string_view rest) {
                        partial = std::string(rest);
                        conn.write("bye\n");  // open for writing after the peer's close_notify
                        conn.close();
                    });
                }
            });
            // The client ends its sending with close_notify (write_eof) and
            // reads on until the server's.
            Client client(sched, server.address(), [](tls::Connection& c) {
                c.write("whole\npart");
                c.write_eof();
            });
            BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return client.reason && server.closes.size() == 1; }));
            BOOST_TEST(lines == (Strings{"whole"}), boost::test_tools::per_element());
            BOOST_TEST(client.reason->kind == EndKind::eof);
            if (with_eof_callback) {
                BOOST_REQUIRE(partial.has_value());
                BOOST_TEST(*partial == "part");
                BOOST_TEST(client.received == "bye\n");
                BOOST_TEST(server.closes[0].kind == EndKind::local);
            } else {
                BOOST_TEST(!partial.has_value());
                BOOST_TEST(client.received == "");
                BOOST_TEST(server.closes[0].kind == EndKind::truncated);
            }
            finish(sched, server);
        }
    }
}

BOOST_AUTO_TEST_CASE(pause_resume_and_detach_over_tls) {
    reactor::Scheduler sched(on(reactor_test::backend_under_test()));
    Strings lines;
    std::string raw;
    std::shared_ptr<tls::LineReader> reader;
    Server server(sched, [&](const tls::ConnectionPtr& c) {
        reader = tls::LineReader::attach(c, [&](tls::Connection& conn, std::string_view line) {
            lines.emplace_back(line);
            if (line == "pause") reader->pause();
            if (line == "BODY") {
                raw = reader->detach();  // the rest of this read, the reader's no more
                conn.set_data_callback([&](tls::Connection&, std::string_view d) { raw.append(d); });
            }
        });
    });
    Client client(sched, server.address(), [](tls::Connection& c) { c.write("one\npause\nthree\nfour"); });
    BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return lines.size() == 2; }));
    BOOST_TEST(reader->buffered() == 10u);  // "three\nfour": the rest of the record waits in the reader
    BOOST_TEST(client.conn->write("\nfive\n"));
    reactor_test::spin(sched, 10);  // nothing more while paused
    BOOST_TEST(lines.size() == 2u);
    reader->resume();
    BOOST_TEST(lines.size() == 2u);  // never from inside resume()
    BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return lines.size() == 5; }));
    BOOST_TEST(lines == (Strings{"one", "pause", "three", "four", "five"}), boost::test_tools::per_element());
    // Detached from a line callback: the bytes after BODY are plain reads.
    BOOST_TEST(client.conn->write("BODY\nnot\na line"));
    BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return raw.size() == 10; }));
    BOOST_TEST(client.conn->write("\nmore"));
    BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return raw.size() == 15; }));
    BOOST_TEST(raw == "not\na line\nmore");
    BOOST_TEST(lines.size() == 6u);
    BOOST_TEST(!reader->attached());
    BOOST_TEST(reader->detach().empty());  // idempotent
    client.conn->close();
    BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return client.reason && server.closes.size() == 1; }));
    BOOST_TEST(server.closes[0].kind == EndKind::eof);  // the connection's own EOF handling is back
    finish(sched, server);
}

BOOST_AUTO_TEST_CASE(close_with_a_reason_reports_it_also_when_asked_during_the_handshake) {
    reactor::Scheduler sched(on(reactor_test::backend_under_test()));
    Strings lines;
    std::optional<std::string> partial;
    Server server(sched, [&](const tls::ConnectionPtr& c) {
        tls::LineReader::attach(c, [&](tls::Connection&, std::string_view line) { lines.emplace_back(line); })
            ->set_eof_callback([&](tls::Connection& conn, std::string_view rest) {
                partial = std::string(rest);
                conn.close();
            });
    });
    // Asked before the handshake is done, with plaintext waiting: the
    // plaintext goes first, then close_notify, and the reason is kept.
    Client client(sched, server.address(), [](tls::Connection& c) {
        BOOST_TEST(c.write("last\n"));
        c.close(EndKind::truncated);
        BOOST_TEST((c.phase() == tls::Connection::Phase::handshaking_then_close));
        c.close(EndKind::line_too_long);  // once closing, a later reason changes nothing
    });
    BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return client.reason && server.closes.size() == 1; }));
    BOOST_TEST(client.handshaken);
    BOOST_TEST(client.reason->kind == EndKind::truncated);
    BOOST_TEST(client.conn->end()->kind == EndKind::truncated);
    BOOST_TEST(lines == (Strings{"last"}), boost::test_tools::per_element());
    BOOST_REQUIRE(partial.has_value());  // the client's close_notify
    BOOST_TEST(*partial == "");
    BOOST_TEST(server.closes[0].kind == EndKind::local);
    finish(sched, server);
}
