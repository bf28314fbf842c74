// SPDX-License-Identifier: MIT
// Streams from the installed headers: a StreamServer on 127.0.0.1 answers a
// line from open_connection.
#include <cstdio>
#include <string>

#include <futures/futures.hpp>
#include <reactor/scheduler.hpp>

int main() {
    reactor::Scheduler sched;
    futures::StreamServer server =
        futures::start_server(sched, reactor::Address::parse("127.0.0.1", 0), [](futures::Stream s) {
            return s.read_until("\n").then([s](std::string line) mutable {
                s.write("echo: " + line);
                s.close();
            });
        });
    futures::Future<std::string> reply =
        futures::open_connection(sched, server.address()).then([](futures::Stream s) {
            s.write("hello\n");
            return s.read_until("\n").then([s](std::string line) mutable {
                s.close();
                return line;
            });
        });
    const std::string line = futures::run_until_complete(sched, reply);
    server.close();
    sched.run();
    std::printf("streams: %s", line.c_str());
    return line == "echo: hello\n" ? 0 : 1;
}
