// SPDX-License-Identifier: MIT
// EchoSession: one echo_server_streams client's conversation, a hand-written
// state-machine task (what a coroutine would generate), resumed by spawn().
#pragma once

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <system_error>
#include <utility>

#include <fmt/format.h>
#include <futures/futures.hpp>
#include <futures/stream.hpp>

namespace examples {

// What the server's summary line reports. A conversation that ends early is
// counted by why: the client reset it, it passed --idle-timeout, or the
// connection failed on our side (an error of recv or send, say).
struct EchoCounts {
    std::uint64_t echoed = 0;  // bytes
    std::uint64_t resets = 0;
    std::uint64_t timeouts = 0;
    std::uint64_t failures = 0;
};

// One client's conversation:
//
//   reading --(data)--> draining --(drained)--> reading ...
//      '--(EOF: "")--> finished (the server then closes the stream)
class EchoSession {
public:
    enum class State { reading, draining };

    EchoSession(futures::Stream stream, EchoCounts& counts) : stream_(std::move(stream)), counts_(counts) {}

    futures::Step<void> resume() {
        for (;;) {
            switch (state_) {
            case State::reading: {
                if (!read_.valid()) return read_ = stream_.read(kReadMax);
                std::string data;
                try {
                    // Taken out of the member (std::exchange), so the finished
                    // future's state goes now: kept, it would stay allocated
                    // for as long as the next wait lasts, an idle client's
                    // whole life (see members below).
                    data = std::exchange(read_, {}).result();
                } catch (const std::system_error& e) {
                    return gone(e);
                }
                if (data.empty()) return futures::finished;  // EOF
                counts_.echoed += data.size();
                stream_.write(data);
                state_ = State::draining;
                return drain_ = stream_.drain();
            }
            case State::draining:
                try {
                    std::exchange(drain_, {}).result();
                } catch (const std::system_error& e) {
                    return gone(e);  // typically a client that sent a lot, read nothing and reset
                }
                state_ = State::reading;
                return read_ = stream_.read(kReadMax);
            }
            throw std::logic_error("echo_server_streams: unknown state");
        }
    }

private:
    // As much as one recv() brings (reactor::ConnectionOptions::read_size),
    // so a chunk goes whole to the read that waits for it, as the callback
    // echo_server writes each chunk whole. With read()'s default of 64 KiB,
    // the rest of a 256 KiB chunk waited in the stream's buffer: while a
    // client does not read its echoes (the conversation waits in drain()),
    // that was up to 192 KiB more per client than echo_server holds (issue
    // 49). A short message still takes a string of its own size.
    static constexpr std::size_t kReadMax = 256 * 1024;

    // A client that vanishes (a reset, while we read or wait for drain()) or
    // passes --idle-timeout is an ordinary outcome of talking to a network,
    // not a server failure: counted, and the conversation ends without an
    // error, so nothing is reported as "never retrieved". Any other error is
    // the connection failing on our side: counted apart, and said on stderr.
    // An abort of ours (a shutdown whose drain ran out) is not an error:
    // reads see EOF.
    futures::Step<void> gone(const std::system_error& e) {
        const std::error_code code = e.code();
        if (code == std::errc::connection_reset || code == std::errc::broken_pipe ||
            code == std::errc::connection_aborted) {
            ++counts_.resets;
        } else if (code == std::errc::timed_out) {
            ++counts_.timeouts;
        } else {
            ++counts_.failures;
            fmt::print(stderr, "echo_server_streams: client {}: {}\n", stream_.peer_address().to_string(), e.what());
        }
        return futures::finished;
    }

    futures::Stream stream_;
    EchoCounts& counts_;
    State state_ = State::reading;
    // The wait in progress: at most one of the two is valid at a time. A
    // future holds its state (a heap block) until it is reset or replaced,
    // result taken or not; resume() lets each go as it takes its result.
    futures::Future<std::string> read_;
    futures::Future<void> drain_;
};

}  // namespace examples
