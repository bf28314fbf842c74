// SPDX-License-Identifier: MIT
// docs/networking.md, "Lines and frames": a line server over callbacks
// (reactor::LineReader), length-prefixed frames over callbacks
// (reactor::FrameReader, reactor::write_frame), and the same on streams
// (read_line, lines(), read_frame, write_frame). Loopback and pipes only;
// every case ends by itself.
#include <unistd.h>

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include <boost/test/unit_test.hpp>
#include <fmt/format.h>
#include <futures/futures.hpp>
#include <reactor/net/connector.hpp>
#include <reactor/net/frame.hpp>
#include <reactor/net/frame_reader.hpp>
#include <reactor/net/line_reader.hpp>
#include <reactor/net/listener.hpp>
#include <reactor/scheduler.hpp>

using namespace std::chrono_literals;

namespace {

// A blocking-free client: sends `request`, ends its output, and collects
// everything the server answers until it closes.
struct Client {
    std::string answer;
    bool closed = false;
    Client(reactor::Scheduler& sched, const reactor::Address& address, std::string request) {
        reactor::connect(sched, address, [this, request](reactor::ConnectionPtr c, std::error_code error) {
            BOOST_REQUIRE(!error);
            c->set_data_callback([this](reactor::Connection&, std::string_view d) { answer.append(d); });
            c->set_close_callback([this](reactor::Connection&, const reactor::End&) { closed = true; });
            c->write(request);
            c->write_eof();
        });
    }
};

// Runs the loop until `done()`, for at most five seconds.
template <class Pred>
bool run_until(reactor::Scheduler& sched, Pred done) {
    bool expired = false;
    reactor::Handle watchdog = sched.call_later(5s, [&] { expired = true; });
    while (!done() && !expired) sched.run_once();
    watchdog.cancel();
    return done();
}

}  // namespace

BOOST_AUTO_TEST_CASE(line_server_over_callbacks) {
    reactor::Scheduler sched;
    std::vector<reactor::End> reasons;
    // [snippet:line_reader]
    auto listener = reactor::Listener::listen(sched, reactor::Address::loopback_v4(0), [&](const reactor::ConnectionPtr& conn) {
        reactor::LineReader::attach(
            conn,
            [](reactor::Connection& c, std::string_view line) {  // "hello", without its "\n" or "\r\n"
                if (line == "quit") return c.close();
                c.write(fmt::format("Got: {}\n", line));
            },
            {.max_length = 1024});  // a longer line closes the connection: EndKind::line_too_long
        conn->set_close_callback([&](reactor::Connection&, const reactor::End& why) { reasons.push_back(why); });
    });
    // [end-snippet:line_reader]
    Client polite(sched, listener->address(), "hello\r\nworld\nquit\nignored\n");
    Client rude(sched, listener->address(), std::string(2000, 'x'));
    BOOST_REQUIRE(run_until(sched, [&] { return polite.closed && rude.closed; }));
    BOOST_TEST(polite.answer == "Got: hello\nGot: world\n");
    BOOST_TEST(rude.answer == "");
    BOOST_REQUIRE(reasons.size() == 2u);
    BOOST_TEST((reasons[0].kind == reactor::EndKind::local || reasons[1].kind == reactor::EndKind::local));
    BOOST_TEST((reasons[0].kind == reactor::EndKind::line_too_long ||
                reasons[1].kind == reactor::EndKind::line_too_long));
    listener->close();
    sched.run();
    BOOST_TEST(sched.empty());
}

BOOST_AUTO_TEST_CASE(frames_over_callbacks) {
    reactor::Scheduler sched;
    // [snippet:frame_reader]
    const reactor::FrameFormat format{.prefix = reactor::LengthPrefix::u16, .max_size = 4096};
    auto listener = reactor::Listener::listen(sched, reactor::Address::loopback_v4(0), [format](const reactor::ConnectionPtr& conn) {
        reactor::FrameReader::attach(
            conn,
            [format](reactor::Connection& c, std::string_view payload) {  // the prefix removed; "" is a frame too
                reactor::write_frame(c, fmt::format("{} bytes", payload.size()), format);
            },
            format);
    });
    // [end-snippet:frame_reader]
    Client client(sched, listener->address(), reactor::make_frame("hello", format) + reactor::make_frame("", format));
    BOOST_REQUIRE(run_until(sched, [&] { return client.closed; }));
    BOOST_TEST(client.answer == reactor::make_frame("5 bytes", format) + reactor::make_frame("0 bytes", format));
    listener->close();
    sched.run();
    BOOST_TEST(sched.empty());
}

BOOST_AUTO_TEST_CASE(read_line_until_the_end_of_input) {
    reactor::Scheduler sched;
    int fds[2];
    BOOST_REQUIRE(::pipe(fds) == 0);
    BOOST_REQUIRE(::write(fds[1], "one\r\ntwo\n", 9) == 9);
    ::close(fds[1]);  // then the end of input, right after a line end
    futures::Stream in = futures::Stream::adopt(sched, fds[0]);
    // [snippet:read_line]
    std::vector<std::string> lines;
    while (std::optional<std::string> line = futures::run_until_complete(sched, in.read_line()))
        lines.push_back(*line);  // "one", then "two": without "\r\n" or "\n"
    // lines == {"one", "two"}; the loop ends at the clean end of input
    // [end-snippet:read_line]
    BOOST_TEST(lines == (std::vector<std::string>{"one", "two"}), boost::test_tools::per_element());
    in.close();
    futures::run_until(sched, in.wait_closed(), 5s);
    BOOST_TEST(sched.empty());
}

namespace {

// [snippet:lines_loop]
// Answers each line until the client's clean end of input: a loop over
// lines() whose next step runs from the loop, never deeper on the stack.
struct LineEcho {
    futures::Lines lines;
    futures::Promise<void> done;

    void next() {
        lines.next().add_done_callback([this](futures::Future<std::optional<std::string>>& f) {
            try {
                std::optional<std::string> line = f.result();
                if (!line) return (void)done.set_value();  // the end: the conversation is over
                lines.stream().write("Got: " + *line + "\n");
                next();
            } catch (...) {  // a line over the limit, or the input cut mid-line
                done.set_exception(std::current_exception());
            }
        });
    }
};
// [end-snippet:lines_loop]

}  // namespace

BOOST_AUTO_TEST_CASE(a_conversation_over_lines) {
    reactor::Scheduler sched;
    std::optional<LineEcho> echo;
    futures::StreamServer server = futures::start_server(sched, reactor::Address::loopback_v4(0), [&](futures::Stream s) {
        echo.emplace(LineEcho{s.lines(), futures::Promise<void>(sched)});
        echo->next();
        return echo->done.get_future();
    });
    futures::Stream client = futures::run_until_complete(sched, futures::open_connection(sched, server.address()));
    client.write("a\nb\n");
    client.write_eof();
    BOOST_TEST(futures::run_until_complete(sched, client.read_line()).value() == "Got: a");
    BOOST_TEST(futures::run_until_complete(sched, client.read_line()).value() == "Got: b");
    BOOST_TEST(!futures::run_until_complete(sched, client.read_line()).has_value());
    client.close();
    server.close();
    futures::run_until(sched, server.wait_closed(), 5s);
    echo.reset();
    sched.run();
    BOOST_TEST(sched.empty());
}

BOOST_AUTO_TEST_CASE(frames_on_streams) {
    reactor::Scheduler sched;
    futures::PipeStreams pipe = futures::open_pipe(sched);
    futures::Stream out = pipe.write_end;
    futures::Stream in = pipe.read_end;
    // [snippet:read_frame]
    const reactor::FrameFormat format{.prefix = reactor::LengthPrefix::u32, .max_size = 1 << 20};
    out.write_frame("first", format);  // throws std::length_error past max_size
    out.write_frame("", format);
    out.write_eof();
    std::vector<std::string> frames;
    while (std::optional<std::string> frame = futures::run_until_complete(sched, in.read_frame(format)))
        frames.push_back(*frame);
    // frames == {"first", ""}; the end of input between two frames ends the loop
    // [end-snippet:read_frame]
    BOOST_TEST(frames == (std::vector<std::string>{"first", ""}), boost::test_tools::per_element());
    in.close();
    out.close();
    futures::run_until(sched, in.wait_closed(), 5s);
    futures::run_until(sched, out.wait_closed(), 5s);
    sched.run();
    BOOST_TEST(sched.empty());
}
