// SPDX-License-Identifier: MIT
// Test support for the TCP suites (test_listener, test_connection,
// test_connector, and test_net_examples against the example servers):
// Boost.Test printers for the reactor's values, the echo server these tests
// talk to, and a load-generating client.
#pragma once

#include <cstring>
#include <deque>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include <reactor/net/connector.hpp>
#include <reactor/net/connection.hpp>
#include <reactor/net/listener.hpp>

#include "support/backends.hpp"

namespace reactor {
// Boost.Test names values in failure messages through this (its log is an ostream).
inline std::ostream& boost_test_print_type(std::ostream& os, const Address& a) { return os << a.to_string(); }
inline std::ostream& boost_test_print_type(std::ostream& os, CloseKind k) { return os << to_string(k); }
inline std::ostream& boost_test_print_type(std::ostream& os, Connection::State s) { return os << to_string(s); }
}  // namespace reactor

namespace reactor_test {

inline reactor::Address any_loopback() { return reactor::Address::loopback_v4(0); }

// The echo server of these tests: bytes back unchanged; reading pauses while
// the echoes wait above the high mark and resumes at the low mark.
struct EchoServer {
    reactor::ListenerPtr listener;
    std::vector<reactor::CloseReason> closes;
    std::vector<std::string> events;  // "high", "low" in order
    std::size_t open = 0;

    EchoServer(reactor::Scheduler& sched, reactor::ConnectionOptions copt = {}) {
        reactor::Listener::Options lopt;
        lopt.connection = copt;
        listener = reactor::Listener::listen(
            sched, any_loopback(),
            [this](const reactor::ConnectionPtr& c) {
                ++open;
                c->set_data_callback([](reactor::Connection& c, std::string_view d) { c.write(d); });
                c->set_high_water_callback([this](reactor::Connection& c) {
                    events.push_back("high");
                    c.pause_reading();
                });
                c->set_low_water_callback([this](reactor::Connection& c) {
                    events.push_back("low");
                    c.resume_reading();
                });
                c->set_close_callback([this](reactor::Connection&, const reactor::CloseReason& r) {
                    --open;
                    closes.push_back(r);
                });
            },
            lopt);
    }
    std::uint16_t port() const { return listener->address().port(); }
};

// One load-generating client of an echo server on 127.0.0.1:port: keeps
// kWindow messages of random sizes (1..max_message bytes, slices of `pool`,
// which must outlive it and be longer than max_message) in flight, checks
// every echoed byte against what it sent, and closes after `messages` round
// trips. `closed` once it is over, with `failure` saying why if it failed.
class LoadClient {
public:
    LoadClient(reactor::Scheduler& sched, std::uint16_t port, std::uint32_t seed, int messages, const std::string& pool,
               std::size_t max_message = 512)
        : rng_(seed), messages_(messages), max_message_(max_message), pool_(pool) {
        const reactor::Address server = reactor::Address::loopback_v4(port);
        reactor::connect(sched, server, [this](reactor::ConnectionPtr c, std::error_code ec) {
            if (ec) {
                failure = "connect: " + ec.message();
                closed = true;
                return;
            }
            conn_ = c;
            c->set_data_callback([this](reactor::Connection& c, std::string_view d) { on_data(c, d); });
            c->set_close_callback([this](reactor::Connection&, const reactor::CloseReason& r) {
                reason = r;
                closed = true;
                conn_.reset();
            });
            for (int i = 0; i < kWindow; ++i) send_one();
        });
    }

    bool closed = false;
    reactor::CloseReason reason;
    std::string failure;
    std::size_t bytes_echoed = 0;
    int completed = 0;

private:
    static constexpr int kWindow = 4;

    void send_one() {
        if (sent_ == messages_) return;
        std::size_t size = 1 + rng_() % max_message_;
        std::size_t offset = rng_() % (pool_.size() - size);
        std::string_view msg(pool_.data() + offset, size);
        expected_.append(msg);
        ends_.push_back(sent_bytes_ += size);
        ++sent_;
        conn_->write(msg);
    }

    void on_data(reactor::Connection& c, std::string_view d) {
        if (d.size() > expected_.size() || std::memcmp(d.data(), expected_.data(), d.size()) != 0) {
            failure = "echoed bytes differ from the bytes sent";
            return c.abort();
        }
        expected_.consume(d.size());
        bytes_echoed += d.size();
        while (!ends_.empty() && ends_.front() <= bytes_echoed) {
            ends_.pop_front();
            ++completed;
            send_one();
        }
        if (completed == messages_) c.close();
    }

    std::mt19937 rng_;
    int messages_;
    std::size_t max_message_;
    const std::string& pool_;
    reactor::ConnectionPtr conn_;
    reactor::ByteBuffer expected_;
    std::deque<std::size_t> ends_;
    std::size_t sent_bytes_ = 0;
    int sent_ = 0;
};

}  // namespace reactor_test
