// SPDX-License-Identifier: MIT
// futures::Scope and its state: closing, cancellation, deadline and the end
// of an unclosed scope; its children are scope_children.cpp's
// (futures/scope.hpp says what; scope_state.hpp how).
#include "futures/scope.hpp"

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <stdexcept>
#include <string>
#include <utility>

#include <fmt/format.h>

#include "scope_state.hpp"

namespace futures {

std::string ScopeError::message() const {
    if (!error) return {};
    try {
        std::rethrow_exception(error);
    } catch (const std::exception& e) {
        return e.what();
    } catch (...) {
        return "unknown exception";
    }
}

namespace detail {

// The registry's half (scope_registry.cpp).
void register_scope(ScopeState& s);
void unregister_scope(ScopeState& s) noexcept;

ScopeState::ScopeState(reactor::Scheduler& sched, std::source_location where, ScopeOptions options)
    : State<void>(sched, where, false), options_(std::move(options)) {}

ScopeState::~ScopeState() { leave_registry(); }

void ScopeState::leave_registry() noexcept {
    if (registry_) unregister_scope(*this);
}

std::string ScopeState::where_text() const {
    return fmt::format("the scope created at {}:{}", origin().file_name(), origin().line());
}

std::string ScopeState::children_text() const {
    std::string out;
    for_each_child([&](const Child& c) {
        out += fmt::format("{}{}:{}", out.empty() ? "spawned at " : ", ", c.spawned_at.file_name(),
                           c.spawned_at.line());
    });
    return out;
}

// ---------------------------------------------------------------- the end

void ScopeState::close(std::source_location where) {
    check_thread("futures::Scope::close", &where, "scope");
    if (closed_) return;
    closed_ = true;
    closed_at_ = where;
    maybe_settle();
}

void ScopeState::settle_soon() {
    if (settling_ || !pending()) return;
    settling_ = true;
    // One loop turn: the waiters that the last child's completion scheduled
    // (its continuations, and theirs already queued) run before this settles,
    // so before close()'s own waiters are even scheduled.
    scheduler().call_soon([self = Ref<ScopeState>(this)] { self->settle(); }, origin());
}

void ScopeState::settle() {
    settling_ = false;
    if (!pending()) return;
    if (live_ != 0) return;  // cannot happen once closed; kept for safety
    deadline_timer_.cancel();
    leave_registry();
    if (first_error_) {
        finish_failed(first_error_);
    } else if (timed_out_) {
        finish_failed(std::make_exception_ptr(
            TimeoutError(fmt::format("futures::Scope: the deadline of {} passed", where_text()))));
    } else if (outside_cancel_ || abandoned_) {
        finish_cancelled(std::make_exception_ptr(CancelledError(fmt::format(
            "futures::Scope: {} was {}", where_text(),
            abandoned_ ? "destroyed with live children before it was closed" : "cancelled"))));
    } else {
        finish_done();
    }
}

void ScopeState::cancel_own() {
    check_thread("futures::Scope::cancel", nullptr, "scope");
    own_cancel_ = true;
    if (pending()) cancel_children(false);
}

Ref<StateBase> ScopeState::cancel_step(bool& accepted) {
    accepted = pending();
    if (accepted) {
        outside_cancel_ = true;
        cancel_children(false);
    }
    return {};  // a request, like a task's: the scope settles once its children have
}

void ScopeState::set_deadline(reactor::TimePoint deadline) {
    if (!pending() || registry_ == nullptr) return;
    deadline_timer_.cancel();
    deadline_timer_ = scheduler().call_at(
        deadline,
        [self = Ref<ScopeState>(this)] {
            if (!self->pending() || self->timed_out_) return;
            self->timed_out_ = true;
            self->cancel_children(false);
        },
        origin());
}

void ScopeState::handle_dropped() noexcept {
    if (closed_ || registry_ == nullptr) return;  // closed: the close() future carries on
    if (live_ != 0) {
        std::string message;
        try {
            message = fmt::format("futures::Scope: {} was destroyed with {} live {} before close(): {}", where_text(),
                                  live_, live_ == 1 ? "child" : "children", children_text());
        } catch (...) {
            message = "futures::Scope destroyed with live children before close()";
        }
        // An exception unwinding through the scope's owner is the one way to
        // leave it early on purpose (asyncio's TaskGroup cancels its tasks
        // then): cancelled and reported, not an abort, in debug mode too.
        if (scheduler().debug() && std::uncaught_exceptions() == 0) {
            std::fprintf(stderr, "reactor: %s (debug mode: aborting)\n", message.c_str());
            std::fflush(stderr);
            std::abort();
        }
        abandoned_ = true;
        report_error(scheduler(), message + "; they are cancelled", nullptr, origin());
        try {
            cancel_children(true);
        } catch (...) {
            // out of memory for the list: the children run on, the scope still waits for them
        }
    }
    closed_ = true;
    closed_at_ = origin();
    try {
        maybe_settle();
    } catch (...) {
        // out of memory for the call_soon: it settles with its next child, or never
    }
}

void ScopeState::loop_ended() noexcept {
    // The children's waiter lists let go of the records first; the records
    // (with their references) are dropped on return.
    for_each_child([](const Child& c) {
        if (c.linked) c.state->remove_callback(CallbackId{c.entry});
    });
    std::vector<std::unique_ptr<Child[]>> children = std::move(blocks_);
    blocks_.clear();
    next_ = end_ = nullptr;
    free_ = ended_first_ = ended_last_ = nullptr;
    if (std::exchange(records_, 0) != 0) release();  // the registry's call holds a reference
    live_ = 0;
    counted_ = 0;
    if (!closed_) closed_at_ = origin();
    closed_ = true;
    deadline_timer_.cancel();
    leave_registry();
    abandon("the Scheduler closed while this scope had unsettled children");
}

}  // namespace detail

// ---------------------------------------------------------------- Scope

Scope::Scope(reactor::Scheduler& sched, ScopeOptions options, std::source_location where) {
    std::optional<reactor::TimePoint> deadline = options.deadline;
    auto s = detail::Ref<detail::ScopeState>::adopt(new detail::ScopeState(sched, where, std::move(options)));
    detail::register_scope(*s);
    if (deadline) s->set_deadline(*deadline);
    state_ = s.leak();
}

Scope::Scope(Scope& parent, ScopeOptions options, std::source_location where)
    : Scope(parent.scheduler(), std::move(options), where) {
    try {
        state_->mark_nested();
        parent.state().adopt(detail::Ref<detail::StateBase>(state_), where, false, true);
    } catch (...) {
        state_->close(where);  // nothing spawned yet: it settles quietly
        detail::Ref<detail::ScopeState>::adopt(std::exchange(state_, nullptr));
        throw;
    }
}

Scope::Scope(Scope&& other) noexcept : state_(std::exchange(other.state_, nullptr)) {}

Scope& Scope::operator=(Scope&& other) noexcept {
    if (this != &other) {
        Scope old(std::move(*this));
        state_ = std::exchange(other.state_, nullptr);
    }
    return *this;
}

Scope::~Scope() {
    if (!state_) return;
    auto s = detail::Ref<detail::ScopeState>::adopt(state_);
    s->handle_dropped();
}

void Scope::throw_moved_from() { throw InvalidStateError("futures::Scope: moved from"); }

void Scope::check_open(std::source_location where) const { state().check_open(where); }

void Scope::adopt(detail::Ref<detail::StateBase> child, std::source_location where, bool shielded) {
    state().adopt(std::move(child), where, shielded, false);
}

Future<void> Scope::close(std::source_location where) {
    state().close(where);
    return detail::Access::share<void>(state_);
}

void Scope::cancel() { state().cancel_own(); }
void Scope::set_deadline(reactor::TimePoint deadline) { state().set_deadline(deadline); }
bool Scope::closed() const { return state().closed(); }
bool Scope::settled() const { return !state().pending(); }
std::size_t Scope::live_children() const { return state().live_children(); }
const std::vector<ScopeError>& Scope::errors() const { return state().errors(); }
const std::vector<ScopeError>& Scope::errors_of(const Future<void>& closed) {
    if (!closed.valid()) throw std::invalid_argument("futures::Scope::errors_of: an empty Future");
    detail::State<void>& s = detail::Access::state(closed);
    if (s.kind() != "Scope") {
        throw std::invalid_argument(fmt::format("futures::Scope::errors_of: the {} created at {}:{} is not a scope's",
                                                s.kind(), s.origin().file_name(), s.origin().line()));
    }
    return static_cast<detail::ScopeState&>(s).errors();
}
std::source_location Scope::origin() const { return state().origin(); }
reactor::Scheduler& Scope::scheduler() const { return state().scheduler(); }

Scope& with_deadline(Scope& scope, reactor::TimePoint deadline) {
    scope.set_deadline(deadline);
    return scope;
}

}  // namespace futures
