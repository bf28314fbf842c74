// SPDX-License-Identifier: MIT
// echo.hpp: echo_server's logic, apart from its main so that a test can run
// it on any Scheduler (a simulated host's: tests/test_sim_examples.cpp).
// The echo itself, and the connection options that give it backpressure;
// the same on one loop or many. Loop thread only, like the connection.
#pragma once

#include <cstdint>
#include <string_view>

#include <reactor/net/connection.hpp>

namespace examples {

// Every byte `c` brings is written back to it, and counted in `echoed`
// (which must outlive the connection's callbacks).
inline void echo(const reactor::ConnectionPtr& c, std::uint64_t& echoed) {
    c->set_data_callback([&echoed](reactor::Connection& c, std::string_view data) {
        echoed += data.size();
        c.write(data);
    });
}

// Backpressure: a client that sends without reading its echoes stops being
// read from above the high-water mark, until its output drains to the low
// one (see the top of echo_server.cpp). `connection`: the deadlines.
inline reactor::ConnectionOptions echo_connection_options(reactor::ConnectionOptions connection) {
    connection.pause_reading_above_high_water = true;
    return connection;
}

}  // namespace examples
