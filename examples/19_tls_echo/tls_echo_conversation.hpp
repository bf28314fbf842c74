// SPDX-License-Identifier: MIT
// TlsEchoConversation: one connection of tls_echo_client, the component
// beside it: step 09's EchoConversation over TLS. It connects, waits for the
// handshake (the server verified, unless --insecure), keeps --window
// messages of random sizes in flight, checks that every byte comes back
// unchanged and in order, and closes (close_notify) after the last one.
// A failed handshake is reported with its reason ("certificate verify
// failed: ..."). Loop thread only.
//
// Ownership: owned by tls_echo_client's main; the connection's callbacks
// point back here and are dropped when it closes, before main destroys this.
#pragma once

#include <cstdint>
#include <cstring>
#include <deque>
#include <random>
#include <string>

#include <fmt/format.h>
#include <reactor/tls/listen.hpp>

namespace tls_echo_client {

// What every conversation is told to do; messages are slices of one random
// pool, so generating them costs nothing.
struct Plan {
    int messages;
    std::size_t max_size;
    int window;
    std::string pool;
};

// What all the conversations did, for the summary line.
struct Totals {
    long expected = 0;
    int finished = 0;  // verified every message and closed
    int failed = 0;
    std::uint64_t bytes = 0;
    std::string protocol;      // of the last handshake: "TLSv1.3"
    reactor::Handle deadline;  // cancelled when the last conversation ends, so run() returns

    void ended() {
        if (finished + failed == expected) deadline.cancel();
    }
};

class TlsEchoConversation {
public:
    TlsEchoConversation(reactor::Scheduler& sched, const reactor::Address& server, const reactor::tls::ContextPtr& context,
                        const std::string& server_name, std::uint32_t seed, const Plan& plan, Totals& totals)
        : rng_(seed), plan_(plan), totals_(totals) {
        reactor::tls::connect(sched, server, context, server_name, [this](reactor::tls::ConnectionPtr c, std::error_code ec) {
            if (ec) return fail(fmt::format("connect: {}", ec.message()));
            conn_ = std::move(c);
            conn_->set_handshake_callback([this](reactor::tls::Connection& c) { on_handshake(c); });
            conn_->set_data_callback([this](reactor::tls::Connection& c, std::string_view d) { on_data(c, d); });
            conn_->set_close_callback(
                [this](reactor::tls::Connection&, const reactor::End& r) { on_close(r); });
        });
    }

    void abort() {
        if (conn_) conn_->abort();
    }

private:
    void on_handshake(reactor::tls::Connection& c) {
        totals_.protocol = c.protocol_version();
        for (int i = 0; i < plan_.window; ++i) send_one();
    }

    void send_one() {
        if (sent_ == plan_.messages) return;
        std::size_t size = 1 + rng_() % plan_.max_size;
        std::string_view msg(plan_.pool.data() + rng_() % (plan_.pool.size() - size), size);
        expected_.append(msg);
        ends_.push_back(sent_bytes_ += size);
        ++sent_;
        conn_->write(msg);
    }

    void on_data(reactor::tls::Connection& c, std::string_view d) {
        if (d.size() > expected_.size() || std::memcmp(d.data(), expected_.data(), d.size()) != 0) {
            error_ = fmt::format("byte {} differs from what was sent", echoed_);
            return c.abort();
        }
        expected_.consume(d.size());
        echoed_ += d.size();
        totals_.bytes += d.size();
        for (; !ends_.empty() && ends_.front() <= echoed_; ends_.pop_front()) {
            ++completed_;
            send_one();
        }
        if (completed_ == plan_.messages) c.close();
    }

    void on_close(const reactor::End& r) {
        conn_.reset();
        if (error_.empty() && completed_ != plan_.messages)
            error_ = fmt::format("closed ({}) after {} of {} messages", r.to_string(), completed_, plan_.messages);
        if (!error_.empty()) return fail(error_);
        ++totals_.finished;
        totals_.ended();
    }

    void fail(const std::string& why) {
        if (totals_.failed++ < 5) fmt::print(stderr, "tls_echo_client: {}\n", why);  // the first few are enough
        totals_.ended();
    }

    std::mt19937 rng_;
    const Plan& plan_;
    Totals& totals_;
    reactor::tls::ConnectionPtr conn_;
    reactor::ByteBuffer expected_;  // sent, not yet echoed
    std::deque<std::size_t> ends_;  // stream offset where each message in flight ends
    std::size_t sent_bytes_ = 0;
    std::size_t echoed_ = 0;
    int sent_ = 0;
    int completed_ = 0;
    std::string error_;
};

}  // namespace tls_echo_client
