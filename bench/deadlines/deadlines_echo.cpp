// SPDX-License-Identifier: MIT
// bench/deadlines: the callback echo server (epoll) with or without
// connection deadlines, for bench/deadlines/compare: the cost of read, write
// and idle timeouts on the echo path, measured A/B in the same run.
//
//   deadlines_echo none|deadlines [PORT]    prints "listening on 127.0.0.1:PORT (epoll)"
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include <reactor/net/listener.hpp>

int main(int argc, char** argv) {
    const std::string_view mode = argc > 1 ? argv[1] : "";
    if (mode != "none" && mode != "deadlines") {
        std::fprintf(stderr, "usage: deadlines_echo none|deadlines [PORT]\n");
        return 2;
    }
    reactor::Scheduler::Options options;
    options.backend = reactor::Backend::epoll;
    reactor::Scheduler sched(std::move(options));
    reactor::Listener::Options lopt;
    if (mode == "deadlines") {  // long enough never to fire during a run: only their upkeep is measured
        lopt.connection.read_timeout = std::chrono::minutes(10);
        lopt.connection.write_timeout = std::chrono::minutes(10);
        lopt.connection.idle_timeout = std::chrono::minutes(10);
    }
    const auto port = static_cast<std::uint16_t>(argc > 2 ? std::atoi(argv[2]) : 0);
    auto listener = reactor::Listener::listen(sched, reactor::Address::loopback_v4(port), [](const reactor::ConnectionPtr& c) {
        c->set_data_callback([](reactor::Connection& c, std::string_view d) { c.write(d); });
    }, lopt);
    std::printf("listening on 127.0.0.1:%u (epoll)\n", listener->address().port());
    std::fflush(stdout);
    sched.run();
}
