// SPDX-License-Identifier: MIT
// tls_echo.hpp: tls_echo_server's logic, apart from its main so that a test
// can run it on any Scheduler (a simulated host's: tests/test_sim_tls.cpp).
// The listener, the echo, the water marks that give it backpressure and the
// counts the summary line prints. Loop thread only, like the connections.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string_view>

#include <reactor/tls/listen.hpp>

namespace examples {

// What tls_echo_server's summary line prints; must outlive the connections.
struct TlsEchoCounts {
    std::uint64_t echoed = 0;  // bytes written back
    long handshakes = 0;       // finished
    long failed = 0;           // connections that ended before their handshake finished
};

// Called when a connection ends, once it is counted: the server's main says
// why the first few handshakes failed; a test checks every reason.
using TlsEchoEnd = std::function<void(reactor::tls::Connection&, const reactor::End&)>;

// TLS echo on `address`: every byte a client sends comes back unchanged, in
// order. A client that sends without reading its echoes stops being read
// from above the high-water mark (ciphertext the kernel has not taken:
// docs/tls.md), so TCP holds it back, until its echoes drain to the low one.
// The options are main's: --exit-after and --idle-timeout in `listen_options`,
// --handshake-timeout and --max-handshakes in `tls_options`.
inline reactor::ListenerPtr listen_tls_echo(reactor::Scheduler& sched, const reactor::Address& address,
                                            std::shared_ptr<reactor::tls::Context> context, TlsEchoCounts& counts,
                                            TlsEchoEnd on_end, reactor::Listener::Options listen_options,
                                            reactor::tls::Options tls_options) {
    namespace tls = reactor::tls;
    auto on_accept = [&counts, on_end = std::move(on_end)](const tls::ConnectionPtr& c) {
        c->set_handshake_callback([&counts](tls::Connection&) { ++counts.handshakes; });
        c->set_data_callback([&counts](tls::Connection& c, std::string_view data) {
            counts.echoed += data.size();
            c.write(data);
        });
        c->set_high_water_callback([](tls::Connection& c) { c.pause_reading(); });
        c->set_low_water_callback([](tls::Connection& c) { c.resume_reading(); });
        c->set_close_callback([&counts, on_end](tls::Connection& c, const reactor::End& reason) {
            if (!c.handshake_done()) ++counts.failed;
            if (on_end) on_end(c, reason);
        });
    };
    return tls::listen(sched, address, std::move(context), on_accept, std::move(listen_options), tls_options);
}

}  // namespace examples
