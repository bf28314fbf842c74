// SPDX-License-Identifier: MIT
// http::Sessions: the HttpSession of each connection one listener accepted,
// plain or TLS (http_hello --tls-cert), from its accept callback until its
// close callback, which destroys it. Owned by http_hello's run(); the
// callbacks it sets point here, so it must outlive the loop's run. Loop
// thread only.
#pragma once

#include <string>
#include <string_view>
#include <unordered_map>

#include "http_session.hpp"

namespace http {

template <class Conn>
struct Sessions {
    const Limits& limits;
    const Timeouts& timeouts;
    std::unordered_map<Conn*, HttpSession<Conn>> live;
    std::string out;             // responses of one read, reused
    long failed_handshakes = 0;  // TLS: connections that closed before their handshake was done

    // From the accept callback: the session, and the connection's callbacks.
    void start(Conn& c) {
        live.try_emplace(&c, c, limits, timeouts);
        c.set_data_callback([this](Conn& c, std::string_view data) { live.at(&c).on_data(data, out); });
        c.set_high_water_callback([](Conn& c) { c.pause_reading(); });
        c.set_low_water_callback([this](Conn& c) { live.at(&c).on_low_water(out); });
        c.set_close_callback([this](Conn& c, const auto&) {
            if constexpr (requires { c.handshake_done(); })
                if (!c.handshake_done()) ++failed_handshakes;
            live.at(&c).closed();
            live.erase(&c);
        });
    }
};

}  // namespace http
