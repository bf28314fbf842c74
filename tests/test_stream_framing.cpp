// SPDX-License-Identifier: MIT
// futures::Stream's framed reads: read_line (an empty optional at a clean
// end of input), lines(), read_frame and write_frame (u16 and u32
// big-endian length prefixes), over real sockets (a socketpair played by
// hand, and 127.0.0.1), on every backend. Input split at every byte
// boundary, over-long lines and frames, the end of input mid-line and
// mid-frame, empty lines, LF and CRLF, zero-length frames.
#include <boost/test/unit_test.hpp>

#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <futures/futures.hpp>
#include <futures/stream.hpp>
#include <reactor/net/frame.hpp>

#include "support/backends.hpp"
#include "support/check_empty.hpp"
#include "support/framing_util.hpp"
#include "support/futures_util.hpp"
#include "support/net_util.hpp"

using futures::Future;
using futures::Stream;
using reactor::FrameFormat;
using reactor::LengthPrefix;
using reactor_test::frame_bytes;
using reactor_test::SocketPair;

namespace {

using Next = std::function<Future<std::optional<std::string>>(Stream&)>;

// Reads with `next` until an empty optional or an error, always with a read
// pending, so that each part fed meets a waiting read (or the buffer).
// Returned by value only once done: no callback refers to it any more.
struct Collect {
    Collect(Stream s, Next n) : stream(std::move(s)), next(std::move(n)) {}
    Stream stream;
    Next next;
    std::vector<std::string> got;
    bool ended = false;
    std::exception_ptr error;

    void start() {
        next(stream).add_done_callback([this](Future<std::optional<std::string>>& f) {
            try {
                std::optional<std::string> item = f.result();
                if (!item) {
                    ended = true;
                    return;
                }
                got.push_back(std::move(*item));
                start();
            } catch (...) {
                error = std::current_exception();
            }
        });
    }
    bool done() const { return ended || error; }
};

Next read_lines = [](Stream& s) { return s.read_line(); };
Next frames_of(FrameFormat format) {
    return [format](Stream& s) { return s.read_frame(format); };
}

// Feeds `parts` to a stream over a socketpair, ends the input and collects.
Collect collect(reactor::Scheduler& sched, SocketPair& pair, Next next, const std::vector<std::string>& parts,
                futures::StreamOptions options = {}) {
    Collect c{Stream::adopt(sched, pair.ours, options), std::move(next)};
    c.start();
    for (const auto& part : parts)
        reactor_test::feed(sched, pair, part, [&] { return c.stream.is_closing() ? -1 : pair.ours; });
    pair.end_input();
    BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return c.done(); }));
    return c;
}

const std::string kInput = "alpha\n\nbeta\r\ngamma\n\r\nlast one\n";
const std::vector<std::string> kLines = {"alpha", "", "beta", "gamma", "", "last one"};
const std::vector<std::string> kPayloads = {"hello", "", std::string(300, 'x'), std::string("\0\1\n", 3), ""};

template <class E>
E error_as(const std::exception_ptr& e) {
    try {
        std::rethrow_exception(e);
    } catch (const E& error) {
        return error;
    } catch (const std::exception& other) {
        BOOST_FAIL("another error: " << other.what());
    }
    throw std::logic_error("not reached");
}

}  // namespace

BOOST_AUTO_TEST_CASE(read_line_split_at_every_byte_boundary_then_an_empty_optional) {
    for (std::size_t split = 0; split <= kInput.size(); ++split) {
        BOOST_TEST_CONTEXT("split at " << split) {
            reactor::Scheduler sched(reactor_test::on(reactor_test::backend_under_test()));
            {
                SocketPair pair;
                Collect c = collect(sched, pair, read_lines, {kInput.substr(0, split), kInput.substr(split)});
                BOOST_TEST(!c.error);
                BOOST_TEST(c.ended);
                BOOST_TEST(c.got == kLines, boost::test_tools::per_element());
            }
            sched.run();
            CHECK_EMPTY(sched);
        }
    }
}

BOOST_AUTO_TEST_CASE(read_line_one_byte_per_read) {
    reactor::Scheduler sched(reactor_test::on(reactor_test::backend_under_test()));
    {
        SocketPair pair;
        std::vector<std::string> parts;
        for (char ch : kInput) parts.emplace_back(1, ch);
        Collect c = collect(sched, pair, read_lines, parts);
        BOOST_TEST(c.ended);
        BOOST_TEST(c.got == kLines, boost::test_tools::per_element());
    }
    sched.run();
    CHECK_EMPTY(sched);
}

BOOST_AUTO_TEST_CASE(the_end_of_input_mid_line_fails_with_the_partial_line_and_a_clean_end_stays_empty) {
    reactor::Scheduler sched(reactor_test::on(reactor_test::backend_under_test()));
    {
        SocketPair pair;
        Collect c = collect(sched, pair, read_lines, {"one\r\ntwo\nthre"});
        BOOST_TEST(c.got == (std::vector<std::string>{"one", "two"}), boost::test_tools::per_element());
        BOOST_REQUIRE(c.error);
        const auto e = error_as<futures::IncompleteReadError>(c.error);
        BOOST_TEST(e.partial == "thre");
        BOOST_TEST(!e.expected.has_value());
        // Consumed: the stream is at its end, and says so again and again.
        BOOST_TEST(c.stream.at_eof());
        BOOST_TEST(!futures::run_until_complete(sched, c.stream.read_line()).has_value());
        BOOST_TEST(!futures::run_until_complete(sched, c.stream.read_line()).has_value());
    }
    {
        SocketPair pair;  // nothing at all before the end
        Collect c = collect(sched, pair, read_lines, {});
        BOOST_TEST(c.ended);
        BOOST_TEST(c.got.empty());
    }
    sched.run();
    CHECK_EMPTY(sched);
}

BOOST_AUTO_TEST_CASE(a_line_longer_than_the_limit_fails_with_limit_overrun) {
    reactor::Scheduler sched(reactor_test::on(reactor_test::backend_under_test()));
    {
        SocketPair pair;
        futures::StreamOptions options;
        options.limit = 8;  // the line end counted, as read_until
        Collect c = collect(sched, pair, read_lines, {"1234567\n123456\r\n12345678\n"}, options);
        BOOST_TEST(c.got == (std::vector<std::string>{"1234567", "123456"}), boost::test_tools::per_element());
        BOOST_REQUIRE(c.error);
        BOOST_TEST(error_as<futures::LimitOverrunError>(c.error).consumed == 9u);
        BOOST_TEST(c.stream.buffered() == 9u);  // left in the buffer, as read_until leaves it
    }
    {
        SocketPair pair;  // no end in sight: fails once past the limit, without waiting for the end
        futures::StreamOptions options;
        options.limit = 8;
        Stream s = Stream::adopt(sched, pair.ours, options);
        Future<std::optional<std::string>> line = s.read_line();
        reactor_test::feed(sched, pair, "123456789", [&] { return pair.ours; });
        BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return line.done(); }));
        BOOST_CHECK_THROW(line.result(), futures::LimitOverrunError);
    }
    sched.run();
    CHECK_EMPTY(sched);
}

BOOST_AUTO_TEST_CASE(read_line_and_read_until_share_the_buffer) {
    reactor::Scheduler sched(reactor_test::on(reactor_test::backend_under_test()));
    {
        SocketPair pair;
        Stream s = Stream::adopt(sched, pair.ours);
        BOOST_REQUIRE(reactor_test::send_all(pair.raw, "a\r\nb;c\n"));
        BOOST_TEST(futures::run_until_complete(sched, s.read_line()).value() == "a");
        BOOST_TEST(futures::run_until_complete(sched, s.read_until(";")) == "b;");
        BOOST_TEST(futures::run_until_complete(sched, s.lines().next()).value() == "c");
        pair.end_input();
        BOOST_TEST(!futures::run_until_complete(sched, s.lines().next()).has_value());
        // read_until still fails at the end, as it always did.
        BOOST_CHECK_THROW(futures::run_until_complete(sched, s.read_until("\n")), futures::IncompleteReadError);
    }
    sched.run();
    CHECK_EMPTY(sched);
}

BOOST_AUTO_TEST_CASE(read_frame_split_at_every_byte_boundary_u16_and_u32_with_zero_length_frames) {
    for (LengthPrefix prefix : {LengthPrefix::u16, LengthPrefix::u32}) {
        std::string input;
        for (const auto& p : kPayloads) input += frame_bytes(p, reactor::prefix_size(prefix));
        for (std::size_t split = 0; split <= input.size(); ++split) {
            BOOST_TEST_CONTEXT("prefix " << reactor::prefix_size(prefix) << " bytes, split at " << split) {
                reactor::Scheduler sched(reactor_test::on(reactor_test::backend_under_test()));
                {
                    SocketPair pair;
                    Collect c = collect(sched, pair, frames_of({.prefix = prefix, .max_size = 1000}),
                                        {input.substr(0, split), input.substr(split)});
                    BOOST_TEST(!c.error);
                    BOOST_TEST(c.ended);
                    BOOST_TEST(c.got == kPayloads, boost::test_tools::per_element());
                }
                sched.run();
                CHECK_EMPTY(sched);
            }
        }
    }
}

BOOST_AUTO_TEST_CASE(the_end_of_input_mid_prefix_and_mid_payload_fails_with_what_came) {
    reactor::Scheduler sched(reactor_test::on(reactor_test::backend_under_test()));
    const std::string whole = frame_bytes("payload", 4);
    for (std::size_t cut = 1; cut < whole.size(); ++cut) {
        BOOST_TEST_CONTEXT("input ends after " << cut << " bytes of the frame") {
            SocketPair pair;
            Collect c = collect(sched, pair, frames_of({}), {frame_bytes("first", 4) + whole.substr(0, cut)});
            BOOST_TEST(c.got == std::vector<std::string>{"first"}, boost::test_tools::per_element());
            BOOST_REQUIRE(c.error);
            const auto e = error_as<futures::IncompleteReadError>(c.error);
            BOOST_TEST(e.partial == whole.substr(0, cut));
            BOOST_TEST(e.expected.value() == (cut < 4 ? 4u : whole.size()));
        }
    }
    sched.run();
    CHECK_EMPTY(sched);
}

BOOST_AUTO_TEST_CASE(a_frame_over_the_maximum_fails_before_its_payload_and_consumes_nothing) {
    reactor::Scheduler sched(reactor_test::on(reactor_test::backend_under_test()));
    {
        SocketPair pair;
        Stream s = Stream::adopt(sched, pair.ours);
        const FrameFormat format{.prefix = LengthPrefix::u16, .max_size = 10};
        BOOST_REQUIRE(reactor_test::send_all(pair.raw, frame_bytes(std::string(10, 'm'), 2) + std::string("\0\x0b", 2)));
        BOOST_TEST(futures::run_until_complete(sched, s.read_frame(format)).value() == std::string(10, 'm'));
        Future<std::optional<std::string>> big = s.read_frame(format);
        BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return big.done(); }));
        const auto e = error_as<futures::FrameTooLargeError>(reactor_test::error_of(big));
        BOOST_TEST(e.size == 11u);
        BOOST_TEST(e.max_size == 10u);
        BOOST_TEST(e.consumed == 13u);
        BOOST_TEST(std::string(e.what()) == "stream: a frame of 11 bytes is announced, over the maximum of 10");
        BOOST_TEST(s.buffered() == 2u);  // the prefix stays
        s.abort();
    }
    sched.run();
    CHECK_EMPTY(sched);
}

BOOST_AUTO_TEST_CASE(a_frame_larger_than_the_stream_limit_is_read_whole) {
    reactor::Scheduler sched(reactor_test::on(reactor_test::backend_under_test()));
    {
        SocketPair pair;
        futures::StreamOptions options;
        options.limit = 16;
        Collect c = collect(sched, pair, frames_of({.prefix = LengthPrefix::u32, .max_size = 100000}),
                            {frame_bytes(std::string(50000, 'L'), 4)}, options);
        BOOST_TEST(c.ended);
        BOOST_REQUIRE(c.got.size() == 1u);
        BOOST_TEST(c.got[0] == std::string(50000, 'L'));
    }
    sched.run();
    CHECK_EMPTY(sched);
}

BOOST_AUTO_TEST_CASE(cancelling_a_frame_read_after_its_prefix_leaves_the_bytes_for_the_next_read) {
    reactor::Scheduler sched(reactor_test::on(reactor_test::backend_under_test()));
    {
        SocketPair pair;
        Stream s = Stream::adopt(sched, pair.ours);
        Future<std::optional<std::string>> first = s.read_frame();
        reactor_test::feed(sched, pair, frame_bytes("whole", 4).substr(0, 6), [&] { return pair.ours; });
        BOOST_TEST(!first.done());
        first.cancel();
        reactor_test::feed(sched, pair, frame_bytes("whole", 4).substr(6), [&] { return pair.ours; });
        BOOST_TEST(futures::run_until_complete(sched, s.read_frame()).value() == "whole");
        s.abort();
    }
    sched.run();
    CHECK_EMPTY(sched);
}

// write_frame to read_frame over 127.0.0.1, and a line server whose
// conversation is a loop over lines().
BOOST_AUTO_TEST_CASE(frames_and_lines_over_loopback_tcp) {
    reactor::Scheduler sched(reactor_test::on(reactor_test::backend_under_test()));
    {
        struct Echo {
            futures::Lines lines;
            futures::Promise<void> done;
            void next() {
                lines.next().add_done_callback([this](Future<std::optional<std::string>>& f) {
                    std::optional<std::string> line = f.result();
                    if (!line) return (void)done.set_value();
                    lines.stream().write("Got: " + *line + "\n");
                    next();
                });
            }
        };
        std::vector<std::unique_ptr<Echo>> sessions;
        auto server = futures::start_server(sched, reactor::Address::loopback_v4(0), [&](Stream s) {
            sessions.push_back(std::make_unique<Echo>(Echo{s.lines(), futures::Promise<void>(sched)}));
            sessions.back()->next();
            return sessions.back()->done.get_future();
        });
        Stream client = futures::run_until_complete(sched, futures::open_connection(sched, server.address()));
        client.write("one\r\ntwo\n\nthree\n");
        client.write_eof();
        std::vector<std::string> answers;
        for (;;) {
            std::optional<std::string> line = futures::run_until_complete(sched, client.read_line());
            if (!line) break;
            answers.push_back(*line);
        }
        BOOST_TEST(answers == (std::vector<std::string>{"Got: one", "Got: two", "Got: ", "Got: three"}),
                   boost::test_tools::per_element());

        auto frames = futures::start_server(sched, reactor::Address::loopback_v4(0), [](Stream s) {
            return s.read_frame({.prefix = LengthPrefix::u16}).then([s](std::optional<std::string> f) mutable {
                s.write_frame("re: " + f.value(), {.prefix = LengthPrefix::u16});
            });
        });
        Stream fc = futures::run_until_complete(sched, futures::open_connection(sched, frames.address()));
        BOOST_CHECK_THROW(fc.write_frame(std::string(70000, 'x'), {.prefix = LengthPrefix::u16, .max_size = 1 << 20}),
                          std::length_error);
        BOOST_TEST(fc.write_frame("ping", {.prefix = LengthPrefix::u16}));
        BOOST_TEST(futures::run_until_complete(sched, fc.read_frame({.prefix = LengthPrefix::u16})).value() == "re: ping");
        BOOST_TEST(!futures::run_until_complete(sched, fc.read_frame({.prefix = LengthPrefix::u16})).has_value());
        client.close();
        fc.close();
        server.close();
        frames.close();
        futures::run_until_complete(sched, server.wait_closed());
        futures::run_until_complete(sched, frames.wait_closed());
        sessions.clear();
    }
    sched.run();
    CHECK_EMPTY(sched);
}
