// SPDX-License-Identifier: MIT
// reactor::FrameReader and reactor::write_frame: length-prefixed frames (u16
// and u32, big-endian) on a Connection, over real sockets (a socketpair
// played by hand), on every backend. Frames split at every byte boundary,
// over-size frames, the end of input inside a prefix and inside a payload,
// zero-length frames, and the writer's bytes and refusals.
#include <boost/test/unit_test.hpp>

#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <reactor/net/connection.hpp>
#include <reactor/net/frame.hpp>
#include <reactor/net/frame_reader.hpp>
#include <reactor/scheduler.hpp>

#include "support/backends.hpp"
#include "support/check_empty.hpp"
#include "support/framing_util.hpp"
#include "support/net_util.hpp"

using reactor::CloseKind;
using reactor::Connection;
using reactor::FrameFormat;
using reactor::FrameReader;
using reactor::LengthPrefix;
using reactor_test::frame_bytes;
using reactor_test::SocketPair;

namespace {

struct Reading {
    reactor::Scheduler& sched;
    SocketPair pair;
    reactor::ConnectionPtr conn;
    std::shared_ptr<FrameReader> reader;
    std::vector<std::string> frames;
    std::optional<reactor::CloseReason> closed;

    Reading(reactor::Scheduler& s, FrameFormat format) : sched(s) {
        conn = Connection::adopt(sched, pair.ours);
        reader = FrameReader::attach(
            conn, [this](Connection&, std::string_view payload) { frames.emplace_back(payload); }, format);
        conn->set_close_callback([this](Connection&, const reactor::CloseReason& r) { closed = r; });
    }
    void feed(std::string_view part) {
        reactor_test::feed(sched, pair, part, [this] { return conn->fd(); });
    }
    void finish() {
        pair.end_input();
        BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return closed.has_value(); }));
    }
};

const std::vector<std::string> kPayloads = {"hello", "", std::string(300, 'x'), std::string("\0\1\n", 3), ""};

std::string all_frames(std::size_t prefix_bytes) {
    std::string out;
    for (const auto& p : kPayloads) out += frame_bytes(p, prefix_bytes);
    return out;
}

}  // namespace

BOOST_AUTO_TEST_CASE(frames_split_at_every_byte_boundary_read_the_same_u16_and_u32) {
    for (LengthPrefix prefix : {LengthPrefix::u16, LengthPrefix::u32}) {
        const std::string input = all_frames(reactor::prefix_size(prefix));
        for (std::size_t split = 0; split <= input.size(); ++split) {
            BOOST_TEST_CONTEXT("prefix " << reactor::prefix_size(prefix) << " bytes, split at " << split) {
                reactor::Scheduler sched(reactor_test::on(reactor_test::backend_under_test()));
                {
                    Reading r(sched, {.prefix = prefix, .max_size = 1000});
                    r.feed(input.substr(0, split));
                    r.feed(input.substr(split));
                    r.finish();
                    BOOST_TEST(r.frames == kPayloads, boost::test_tools::per_element());
                    BOOST_TEST(r.closed->kind == CloseKind::eof);
                }
                sched.run();
                CHECK_EMPTY(sched);
            }
        }
    }
}

BOOST_AUTO_TEST_CASE(one_byte_per_read_reads_the_same_frames) {
    reactor::Scheduler sched(reactor_test::on(reactor_test::backend_under_test()));
    {
        Reading r(sched, {.prefix = LengthPrefix::u32, .max_size = 1000});
        for (char c : all_frames(4)) r.feed(std::string_view(&c, 1));
        r.finish();
        BOOST_TEST(r.frames == kPayloads, boost::test_tools::per_element());
    }
    sched.run();
    CHECK_EMPTY(sched);
}

BOOST_AUTO_TEST_CASE(a_frame_of_the_maximum_is_read_and_a_prefix_above_it_closes_before_the_payload) {
    reactor::Scheduler sched(reactor_test::on(reactor_test::backend_under_test()));
    {
        Reading r(sched, {.prefix = LengthPrefix::u32, .max_size = 64});
        r.feed(frame_bytes(std::string(64, 'a'), 4));
        BOOST_TEST(r.frames.size() == 1u);
        // Only the prefix of a frame of 65 bytes: the reader ends at once,
        // without waiting for (or keeping) its payload.
        BOOST_REQUIRE(reactor_test::send_all(r.pair.raw, std::string("\0\0\0\x41", 4)));
        BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return r.closed.has_value(); }));
        BOOST_TEST(r.closed->kind == CloseKind::frame_too_large);
        BOOST_TEST(r.closed->to_string() == "frame too large");
        BOOST_TEST(r.reader->buffered() == 0u);
    }
    {
        // A huge announced length (4 GiB - 1) costs nothing either.
        Reading r(sched, {.prefix = LengthPrefix::u32, .max_size = 1 << 20});
        BOOST_REQUIRE(reactor_test::send_all(r.pair.raw, "\xff\xff\xff\xff" "abc"));
        BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return r.closed.has_value(); }));
        BOOST_TEST(r.closed->kind == CloseKind::frame_too_large);
        BOOST_TEST(r.frames.empty());
    }
    sched.run();
    CHECK_EMPTY(sched);
}

BOOST_AUTO_TEST_CASE(end_of_input_mid_prefix_and_mid_payload) {
    reactor::Scheduler sched(reactor_test::on(reactor_test::backend_under_test()));
    const std::string whole = frame_bytes("payload", 2);
    for (std::size_t cut = 1; cut < whole.size(); ++cut) {
        BOOST_TEST_CONTEXT("input ends after " << cut << " bytes of the second frame") {
            // With an EOF callback: the bytes of the frame begun, prefix included.
            Reading r(sched, {.prefix = LengthPrefix::u16, .max_size = 100});
            std::optional<std::string> partial;
            r.reader->set_eof_callback([&](Connection& c, std::string_view p) {
                partial = std::string(p);
                c.close();
            });
            r.feed(frame_bytes("first", 2) + whole.substr(0, cut));
            r.finish();
            BOOST_TEST(r.frames == std::vector<std::string>{"first"}, boost::test_tools::per_element());
            BOOST_TEST(partial.value_or("none") == whole.substr(0, cut));
        }
    }
    {
        // Without one: CloseKind::truncated.
        Reading r(sched, {.prefix = LengthPrefix::u16, .max_size = 100});
        r.feed(whole.substr(0, 5));
        r.finish();
        BOOST_TEST(r.closed->kind == CloseKind::truncated);
        BOOST_TEST(r.frames.empty());
    }
    sched.run();
    CHECK_EMPTY(sched);
}

BOOST_AUTO_TEST_CASE(make_frame_writes_big_endian_prefixes_and_refuses_what_the_peer_would) {
    BOOST_TEST(reactor::make_frame("abc", {.prefix = LengthPrefix::u16}) == std::string("\0\3abc", 5));
    BOOST_TEST(reactor::make_frame("", {.prefix = LengthPrefix::u32}) == std::string("\0\0\0\0", 4));
    const std::string big(0x10203, 'z');
    BOOST_TEST(reactor::make_frame(big, {.prefix = LengthPrefix::u32, .max_size = big.size()}).substr(0, 4) ==
               std::string("\0\1\2\3", 4));
    // Over the maximum, or over what a u16 can say: refused, with the sizes.
    BOOST_CHECK_EXCEPTION((void)reactor::make_frame("12345", {.prefix = LengthPrefix::u32, .max_size = 4}),
                          std::length_error, [](const std::length_error& e) {
                              return std::string(e.what()).find("5 bytes is over the maximum of 4") != std::string::npos;
                          });
    BOOST_CHECK_THROW((void)reactor::make_frame(std::string(70000, 'a'), {.prefix = LengthPrefix::u16, .max_size = 1 << 20}),
                      std::length_error);
    BOOST_TEST(reactor::make_frame(std::string(65535, 'a'), {.prefix = LengthPrefix::u16, .max_size = 1 << 20}).size() ==
               65537u);
}

BOOST_AUTO_TEST_CASE(write_frame_to_a_frame_reader_round_trip_both_prefixes) {
    reactor::Scheduler sched(reactor_test::on(reactor_test::backend_under_test()));
    {
        for (LengthPrefix prefix : {LengthPrefix::u16, LengthPrefix::u32}) {
            SocketPair pair;
            auto writer = Connection::adopt(sched, pair.raw);
            pair.raw = -1;  // the writer owns it now
            auto reader_conn = Connection::adopt(sched, pair.ours);
            const FrameFormat format{.prefix = prefix, .max_size = 70000};
            std::vector<std::string> got;
            FrameReader::attach(reader_conn, [&](Connection&, std::string_view p) { got.emplace_back(p); }, format);
            const std::vector<std::string> sent = {"", "one", std::string(65535, 'q'), ""};
            for (const auto& p : sent) BOOST_TEST(reactor::write_frame(*writer, p, format));
            BOOST_CHECK_THROW(reactor::write_frame(*writer, std::string(70001, 'x'), format), std::length_error);
            writer->close();
            BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return !reader_conn->is_open() || got.size() == sent.size(); }));
            BOOST_TEST(got == sent, boost::test_tools::per_element());
            reader_conn->abort();
        }
    }
    sched.run();
    CHECK_EMPTY(sched);
}

BOOST_AUTO_TEST_CASE(pause_and_resume_keep_the_order_of_frames) {
    reactor::Scheduler sched(reactor_test::on(reactor_test::backend_under_test()));
    {
        SocketPair pair;
        auto conn = Connection::adopt(sched, pair.ours);
        std::vector<std::string> got;
        std::shared_ptr<FrameReader> reader;
        reader = FrameReader::attach(conn, [&](Connection&, std::string_view p) {
            got.emplace_back(p);
            if (got.size() == 1) reader->pause();
        }, {.prefix = LengthPrefix::u16});
        BOOST_REQUIRE(reactor_test::send_all(pair.raw, frame_bytes("a", 2) + frame_bytes("", 2) + frame_bytes("c", 2)));
        BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return got.size() == 1; }));
        reactor_test::spin(sched, 5);
        BOOST_TEST(got.size() == 1u);
        reader->resume();
        BOOST_REQUIRE(reactor_test::run_until(sched, [&] { return got.size() == 3; }));
        BOOST_TEST(got == (std::vector<std::string>{"a", "", "c"}), boost::test_tools::per_element());
        conn->abort();
    }
    sched.run();
    CHECK_EMPTY(sched);
}
