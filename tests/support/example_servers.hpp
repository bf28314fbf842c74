// SPDX-License-Identifier: MIT
// Test support for suites that run an example server and talk to it: the
// port of its first line, and curl (loopback URLs only, bounded in time).
//   Child server(example_path("http_hello"), {"--port", "0"});
//   const std::uint16_t port = reactor_test::listening_port(server);
//   auto [body, status] = reactor_test::curl({"--cacert", ca, url});
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <boost/test/unit_test.hpp>

#include "support/outside_program.hpp"
#include "support/process.hpp"
#include "support/text_match.hpp"

namespace reactor_test {

// The port of a server's first line, "listening on 127.0.0.1:PORT (backend)".
inline std::uint16_t listening_port(Child& server) {
    using namespace std::chrono_literals;
    auto line = server.read_line(20s);
    BOOST_REQUIRE(line);
    const auto m = partial_match_groups(*line, "^listening on 127\\.0\\.0\\.1:([0-9]+) \\((select|poll|epoll)\\)$");
    BOOST_REQUIRE_MESSAGE(m.has_value(), *line);
    return static_cast<std::uint16_t>(std::stoi((*m)[1]));
}

// curl's stdout for `args` (with --noproxy and a time limit), and its exit
// code. The caller checks needs_program("curl").
inline std::pair<std::string, int> curl(std::vector<std::string> args) {
    using namespace std::chrono_literals;
    args.insert(args.begin(), {"-sS", "--noproxy", "*", "--max-time", "20"});
    Child c(*find_program("curl"), args);
    c.close_stdin();
    std::string out = c.read_all(25s);
    return {out, c.wait(10s)};
}

}  // namespace reactor_test
