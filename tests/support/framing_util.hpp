// SPDX-License-Identifier: MIT
// Test support for the framing suites (test_line_reader, test_frame_reader,
// test_stream_framing): a socketpair with one end adopted by the loop and
// the other played by hand, fed in pieces so that every split of the input
// reaches the reader as its own read, and big-endian frame bytes made
// without the library's encoder.
#pragma once

#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstddef>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <boost/test/unit_test.hpp>

#include <reactor/net/connection.hpp>
#include <reactor/scheduler.hpp>

#include "support/net_util.hpp"

namespace reactor_test {

// A connected pair of Unix stream sockets: `ours` for the loop (adopt it),
// `raw` stays blocking and is written by the test. send() on a socketpair
// queues the bytes at the other end before it returns, so "everything sent
// was read" is exact (unread() below), with no timing involved.
struct SocketPair {
    int ours = -1;
    int raw = -1;
    SocketPair() {
        int fds[2];
        BOOST_REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) == 0);
        ours = fds[0];
        raw = fds[1];
    }
    ~SocketPair() {
        if (raw >= 0) ::close(raw);
    }
    SocketPair(const SocketPair&) = delete;
    SocketPair& operator=(const SocketPair&) = delete;
    void end_input() const { ::shutdown(raw, SHUT_WR); }
};

// Bytes queued on `fd` and not read yet (0 for a closed fd).
inline int unread(int fd) {
    if (fd < 0) return 0;
    int n = 0;
    if (::ioctl(fd, FIONREAD, &n) != 0) return 0;
    return n;
}

// Sends `part` from the raw end and runs the loop until the adopted end
// (whose fd `fd_now` returns, -1 once closed) has read all of it: each call
// is one read for the reader (or a few, never merged with the next part).
template <class FdNow>
void feed(reactor::Scheduler& sched, const SocketPair& pair, std::string_view part, FdNow fd_now) {
    BOOST_REQUIRE(send_all(pair.raw, part));
    BOOST_REQUIRE(run_until(sched, [&] { return unread(fd_now()) == 0; }));
}

// Runs `n` loop iterations that may poll I/O but never block: each waits
// only for a callback posted with call_soon (run_once alone would block on
// a loop with nothing ready).
inline void spin(reactor::Scheduler& sched, int n) {
    for (int i = 0; i < n; ++i) {
        bool ran = false;
        sched.call_soon([&] { ran = true; });
        BOOST_REQUIRE(run_until(sched, [&] { return ran; }));
    }
}

// A frame made by hand: big-endian length of `prefix_bytes` bytes, then the payload.
inline std::string frame_bytes(std::string_view payload, std::size_t prefix_bytes) {
    std::string out;
    for (std::size_t i = prefix_bytes; i-- > 0;) out.push_back(static_cast<char>((payload.size() >> (8 * i)) & 0xff));
    out.append(payload);
    return out;
}

}  // namespace reactor_test

namespace reactor {
// So that BOOST_TEST(reason.kind == CloseKind::eof) prints the kinds it compares.
inline std::ostream& operator<<(std::ostream& os, CloseKind kind) { return os << to_string(kind); }
}  // namespace reactor
