// SPDX-License-Identifier: MIT
#include "reactor/net/server_gate.hpp"

#include <stdexcept>

#include "reactor/error_context.hpp"

namespace reactor {

void ServerGate::enter() {
    if (ended_) throw std::logic_error("reactor: ServerGate::hold after the server's end");
    ++held_;
}

void ServerGate::on_close(std::function<void()> hook) {
    if (!closing_) return close_hooks_.push_back(std::move(hook));
    sched_.call_soon([hook = std::move(hook)] { hook(); });
}

void ServerGate::close(std::function<void()> done) {
    if (done) done_.push_back(std::move(done));
    if (!closing_) {
        closing_ = true;
        // A hook may release a hold, or take one: each runs once, in order.
        for (auto& hook : std::exchange(close_hooks_, {})) hook();
    }
    end_if_idle();
}

void ServerGate::leave() noexcept {
    --held_;
    if (!closing_ || held_ > 0) return;
    try {
        end_if_idle();
    } catch (...) {  // no memory for the call_soon: the end is reported, not lost silently
        ErrorContext ctx;
        ctx.message = "reactor: a server's gate could not end";
        ctx.exception = std::current_exception();
        sched_.call_exception_handler(ctx);
    }
}

// The end runs on a later iteration, never inside close() or a release: a
// hold released from a callback returns before the server's end is told.
void ServerGate::end_if_idle() {
    if (held_ > 0 || end_scheduled_ || !closing_) return;
    end_scheduled_ = true;
    sched_.call_soon([self = shared_from_this()] {
        self->end_scheduled_ = false;
        if (self->held_ > 0) return;  // taken again meanwhile: the last release ends it
        self->ended_ = true;
        for (auto& done : std::exchange(self->done_, {})) done();
    });
}

}  // namespace reactor
