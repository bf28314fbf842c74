// EchoSession: one echo_server_streams client's conversation, a hand-written
// state-machine task (what a coroutine would generate), resumed by spawn().
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <system_error>

#include <futures/futures.hpp>
#include <futures/stream.hpp>

namespace examples {

// One client's conversation:
//
//   reading --(data)--> draining --(drained)--> reading ...
//      '--(EOF: "")--> finished (the server then closes the stream)
class EchoSession {
public:
    enum class State { reading, draining };

    EchoSession(futures::Stream stream, std::uint64_t& echoed, std::uint64_t& resets)
        : stream_(std::move(stream)), echoed_(echoed), resets_(resets) {}

    futures::Step<void> resume() {
        for (;;) {
            switch (state_) {
            case State::reading: {
                if (!read_.valid()) return read_ = stream_.read();
                std::string data;
                try {
                    data = read_.result();
                } catch (const std::system_error&) {
                    return gone();
                }
                if (data.empty()) return futures::finished;  // EOF
                echoed_ += data.size();
                stream_.write(data);
                state_ = State::draining;
                return drain_ = stream_.drain();
            }
            case State::draining:
                try {
                    drain_.result();
                } catch (const std::system_error&) {
                    return gone();  // typically a client that sent a lot, read nothing and reset
                }
                state_ = State::reading;
                return read_ = stream_.read();
            }
            throw std::logic_error("echo_server_streams: unknown state");
        }
    }

private:
    // A client that vanishes (a reset, while we read or wait for drain()) is
    // an ordinary outcome of talking to a network, not a server failure:
    // counted, and the conversation ends without an error, so nothing is
    // reported as "never retrieved". An abort of ours (a shutdown whose drain
    // ran out) is not an error: reads see EOF.
    futures::Step<void> gone() {
        ++resets_;
        return futures::finished;
    }

    futures::Stream stream_;
    std::uint64_t& echoed_;
    std::uint64_t& resets_;
    State state_ = State::reading;
    futures::Future<std::string> read_;
    futures::Future<void> drain_;
};


}  // namespace examples
