// SPDX-License-Identifier: MIT
// reactor::ServerGate: work that holds a server open (Seastar's gate and
// with_gate). A server's end waits for its connections to close; work a
// handler started and that outlives its connection (a reply computed on a
// pool, a log flushed after the close, a futures conversation's queued
// finally) takes a Hold, and the end waits for that too.
//
// One gate per loop of a server: a Listener's ConnectionSet has one
// (Listener::connections().gate(), GroupListener::connections_on(i).gate()).
// ServerLifetime closes it once the loop's listener is closed and its last
// connection is gone: the close hooks run then (a holder that would hold
// forever, such as a server's scope, lets go there), and the lifetime's end
// comes once nothing is held. Holds are counted, not listed: a hold costs
// the gate nothing but its count. Loop thread only; a Hold may be moved
// anywhere but is released on the loop thread.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "reactor/export.hpp"
#include "reactor/scheduler.hpp"

namespace reactor {

class REACTOR_API ServerGate : public std::enable_shared_from_this<ServerGate> {
    struct Passkey {};

public:
    static std::shared_ptr<ServerGate> create(Scheduler& sched) { return std::make_shared<ServerGate>(Passkey{}, sched); }
    ServerGate(Passkey, Scheduler& sched) : sched_(sched) {}
    ServerGate(const ServerGate&) = delete;
    ServerGate& operator=(const ServerGate&) = delete;

    // Holds the gate open until released or destroyed; keeps the gate alive.
    class Hold {
    public:
        Hold() = default;
        Hold(Hold&& other) noexcept : gate_(std::move(other.gate_)) {}
        Hold& operator=(Hold&& other) noexcept {
            if (this != &other) {
                release();
                gate_ = std::move(other.gate_);
            }
            return *this;
        }
        ~Hold() { release(); }
        void release() noexcept {
            if (auto g = std::move(gate_)) g->leave();
        }
        explicit operator bool() const noexcept { return gate_ != nullptr; }

    private:
        friend class ServerGate;
        explicit Hold(std::shared_ptr<ServerGate> g) noexcept : gate_(std::move(g)) {}
        std::shared_ptr<ServerGate> gate_;
    };

    // A hold, also while closing (work a close callback starts still counts).
    // std::logic_error once the gate has ended: the server's end came.
    [[nodiscard]] Hold hold() {
        enter();
        return Hold(shared_from_this());
    }
    // The same by hand (Seastar's enter/leave), for a holder that must not
    // keep the gate alive: one leave() for each enter().
    void enter();
    void leave() noexcept;
    std::size_t held() const noexcept { return held_; }
    bool closing() const noexcept { return closing_; }
    bool ended() const noexcept { return ended_; }

    // `hook` runs when close() is called (on a later iteration if the gate
    // is closing already). For a holder that holds until told to stop.
    void on_close(std::function<void()> hook);
    // Closes: the hooks run now, in order; `done` runs on a later iteration
    // once nothing is held (the gate has then ended). Again: `done` is added.
    void close(std::function<void()> done);

private:
    void end_if_idle();

    Scheduler& sched_;
    std::size_t held_ = 0;
    bool closing_ = false;
    bool ended_ = false;
    bool end_scheduled_ = false;
    std::vector<std::function<void()>> close_hooks_;
    std::vector<std::function<void()>> done_;
};

using ServerGatePtr = std::shared_ptr<ServerGate>;

}  // namespace reactor
