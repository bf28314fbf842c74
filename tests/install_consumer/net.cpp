// SPDX-License-Identifier: MIT
// Sockets from the installed headers: a listener on 127.0.0.1 echoes what a
// connection sends it.
#include <cstdio>
#include <string>
#include <string_view>
#include <system_error>

#include <reactor/net/connector.hpp>
#include <reactor/net/listener.hpp>
#include <reactor/scheduler.hpp>

int main() {
    reactor::Scheduler sched;
    auto listener = reactor::Listener::listen(sched, reactor::Address::parse("127.0.0.1", 0),
                                              [](const reactor::ConnectionPtr& c) {
                                                  c->set_data_callback([](reactor::Connection& c, std::string_view data) {
                                                      c.write(data);
                                                  });
                                              });
    std::string echoed;
    std::error_code failed;
    reactor::connect(sched, listener->address(), [&](reactor::ConnectionPtr c, std::error_code error) {
        if (error) {
            failed = error;
            return listener->close();
        }
        c->set_data_callback([&](reactor::Connection& c, std::string_view data) {
            echoed += data;
            if (echoed.size() == 4) c.close();
        });
        c->set_close_callback([&](reactor::Connection&, const reactor::CloseReason&) { listener->close(); });
        c->write("ping");
    });
    sched.run();
    std::printf("net: echoed \"%s\"%s\n", echoed.c_str(), failed ? " (connect failed)" : "");
    return echoed == "ping" && !failed ? 0 : 1;
}
