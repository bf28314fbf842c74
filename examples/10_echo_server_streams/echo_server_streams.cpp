// echo_server_streams: the echo server again, written with futures streams and
// one hand-written state-machine task per client (minio's server, desugared).
// Same behaviour and options as echo_server: every byte comes back unchanged;
// drain() after each write is the backpressure (a client that does not read
// its echoes stops being read from until they drain).
//
// Step 10 of the series (examples/README.md). New here: streams:
// read/write/drain futures, one task per connection.
//
//   $ echo_server_streams                  (then, elsewhere: echo_client)
//   listening on 127.0.0.1:7000 (epoll)
#include <cstdint>
#include <stdexcept>
#include <string_view>
#include <system_error>

#include <fmt/format.h>
#include <futures/futures.hpp>
#include <futures/stream.hpp>

#include "cli.hpp"
#include "server_support.hpp"

namespace {

// One client's conversation:
//
//   reading --(data)--> draining --(drained)--> reading ...
//      '--(EOF: "")--> finished (the server then closes the stream)
class EchoSession {
public:
    enum class State { reading, draining };

    EchoSession(futures::Stream stream, std::uint64_t& echoed) : stream_(std::move(stream)), echoed_(echoed) {}

    futures::Step<void> resume() {
        for (;;) {
            switch (state_) {
            case State::reading: {
                if (!read_.valid()) return read_ = stream_.read();
                std::string data;
                try {
                    data = read_.result();
                } catch (const std::system_error&) {
                    return futures::finished;  // the client reset: nothing to answer
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
                    return futures::finished;
                }
                state_ = State::reading;
                return read_ = stream_.read();
            }
            throw std::logic_error("echo_server_streams: unknown state");
        }
    }

private:
    futures::Stream stream_;
    std::uint64_t& echoed_;
    State state_ = State::reading;
    futures::Future<std::string> read_;
    futures::Future<void> drain_;
};

}  // namespace

int main(int argc, char** argv) {
    examples::Cli cli("echo_server_streams", "Echo server written with futures streams and state-machine tasks.");
    examples::ServerOptions options(7000);  // the same port as echo_server: echo_client's default
    examples::add_server_options(cli, options);
    cli.parse_or_exit(argc, argv);
    reactor::Scheduler sched(examples::on(options.backend));
    std::uint64_t echoed = 0;
    long accepted = 0, live = 0;
    futures::StreamServer server;
    reactor::Handle deadline;

    auto finished_if_idle = [&] {
        if (!server.is_serving() && live == 0) deadline.cancel();  // nothing left: run() returns
    };
    try {
        server = futures::start_server(sched, examples::listen_address(cli, options), [&](futures::Stream stream) {
            ++live;
            if (options.exit_after > 0 && ++accepted >= options.exit_after) server.close();
            return futures::spawn(sched, EchoSession(std::move(stream), echoed)).finally([&] {
                --live;
                finished_if_idle();
            });
        });
    } catch (const std::exception& e) {
        fmt::print(stderr, "{}\n", e.what());
        return 1;
    }
    if (options.max_seconds > 0)
        deadline = sched.call_later(std::chrono::duration<double>(options.max_seconds), [&] {
            server.close();
            server.abort_clients();
        });
    examples::announce(sched, server.address());

    sched.run();
    fmt::print("echo_server_streams: {} connections, {} bytes echoed\n", server.accepted(), echoed);
    return 0;
}
