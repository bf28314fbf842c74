// SPDX-License-Identifier: MIT
// A futures::Scope's children: adopting one (a record of the scope's, an
// inline waiter of the child's), reaping those that ended (once per loop
// turn), their errors by policy, cancelling them; the children a stream
// server counts (futures/scope.hpp says what; scope_state.hpp how).
#include <exception>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "scope_state.hpp"

namespace futures::detail {

void ScopeState::throw_closed(std::source_location where) const {
    throw ScopeClosedError(fmt::format(
        "futures::Scope: spawn at {}:{} refused: {} is closed (closed at {}:{}); a closed scope takes no new children",
        where.file_name(), where.line(), where_text(), closed_at_.file_name(), closed_at_.line()));
}

void ScopeState::adopt(Ref<StateBase>&& child, std::source_location where, bool shielded, bool is_scope) {
    check_thread("futures::Scope::spawn", &where, "scope");
    if (closed_ || !child || &child->scheduler() != &scheduler() || (registry_ == nullptr && !pending()))
        [[unlikely]] refuse(child.get(), where);
    add_entry(std::move(child), where, shielded, is_scope, false);
}

void ScopeState::refuse(const StateBase* child, std::source_location where) const {
    check_open(where);
    if (!child) throw std::invalid_argument("futures::Scope::spawn: an empty Future");
    if (&child->scheduler() != &scheduler()) {
        throw std::invalid_argument(
            fmt::format("futures::Scope::spawn at {}:{}: the future belongs to another Scheduler than {}",
                        where.file_name(), where.line(), where_text()));
    }
    throw ScopeClosedError(where_text() + " has ended with its loop");
}

// A record for `child`, linked to it as an inline waiter (or, for a child
// that has completed already, put straight on the list of ended children);
// the record is given back if that throws.
void ScopeState::add_entry(Ref<StateBase>&& child, std::source_location where, bool shielded, bool is_scope,
                           bool drain) {
    Child& c = take_record();
    if (records_++ == 0) add_ref();  // the records' reference (free_record drops it)
    StateBase& s = *child;
    if (s.pending()) {
        try {
            c.entry = s.add_inline_waiter(&c).index;
        } catch (...) {
            free_record(c);
            throw;
        }
        c.linked = true;
    }
    c.scope = this;
    c.state = std::move(child);
    c.spawned_at = where;
    c.shielded = shielded;
    c.is_scope = is_scope;
    c.drain = drain;
    ++live_;
    if (!c.linked) {
        ended(c);  // reaped next turn, as a done-callback would have run
    } else if (!shielded && cancelling()) {
        s.cancel();  // a child of a cancelled scope is cancelled at once
    }
}

ScopeState::Child& ScopeState::new_block() {
    const std::uint32_t n = block_size(blocks_.size());
    blocks_.push_back(std::make_unique<Child[]>(n));
    next_ = blocks_.back().get();
    end_ = next_ + n;
    return *next_++;
}

void ScopeState::schedule_reap(const Child& c) noexcept {
    try {
        scheduler().call_soon([self = Ref<ScopeState>(this)] { self->reap(); }, origin());
        reaping_ = true;
    } catch (...) {  // out of memory: the next child to end tries again
        report_error(scheduler(), fmt::format("{} could not note a child's end", where_text()), std::current_exception(),
                     c.spawned_at);
    }
}

// The children that ended since the last call, in order (those that end
// meanwhile, cancelled by a sibling's error, too). A scope whose loop ended
// (loop_ended) dropped its records: a late call finds the list empty (the
// loop may be run again after Scheduler::close()).
void ScopeState::reap() {
    while (Child* c = ended_first_) {
        ended_first_ = c->next;
        if (!ended_first_) ended_last_ = nullptr;
        c->next = nullptr;
        try {
            on_child(*c);
        } catch (...) {
            report_error(scheduler(), fmt::format("a child of {} could not be reaped", where_text()),
                         std::current_exception(), c->spawned_at);
        }
    }
    reaping_ = false;
}

void ScopeState::on_child(Child& c) {
    // Destroyed last, when this state is consistent again: the child's state
    // may die with it, and what it held with it (the records' reference to
    // this scope may go too: reap()'s call holds one).
    Ref<StateBase> child = std::move(c.state);
    const std::source_location where = c.spawned_at;
    const bool drain = c.drain, is_scope = c.is_scope;
    free_record(c);
    --live_;
    StateBase& s = *child;
    if (s.status() == Status::failed) {
        if (drain) {
            s.mark_retrieved();  // cannot happen (a drain state ends done or cancelled); never an error
        } else {
            s.mark_retrieved();  // the scope answers for it from now on
            on_error(where, s.error());
        }
    } else if (s.status() == Status::cancelled && !drain && !is_scope) {
        // Cancelled while its work goes on elsewhere (a thread pool job, a
        // submit_to function on another loop): the scope waits for that work
        // too, as a shielded child that is never an error.
        Ref<StateBase> rest;
        try {
            rest = s.drain();
            if (rest && rest->pending()) adopt_drain(std::move(rest), where);
        } catch (...) {
            // Out of memory: the scope does not wait for that work.
        }
    }
    maybe_settle();
}

void ScopeState::adopt_counted(std::source_location where) {
    check_open(where);
    if (registry_ == nullptr && !pending()) throw ScopeClosedError(where_text() + " has ended with its loop");
    ++counted_;
    ++live_;
}

void ScopeState::counted_done(StateBase* child, std::source_location where) noexcept {
    if (counted_ == 0) return;  // dropped with the loop (loop_ended)
    --counted_;
    --live_;
    if (child && child->status() == Status::failed) {
        child->mark_retrieved();  // the scope answers for it from now on
        try {
            on_error(where, child->error());
        } catch (...) {
            report_error(scheduler(), fmt::format("a child of {} failed", where_text()), std::current_exception(),
                         where);
        }
    }
    try {
        maybe_settle();
    } catch (...) {  // no memory for the call_soon that settles it
        report_error(scheduler(), fmt::format("{} could not settle", where_text()), std::current_exception(),
                     origin());
    }
}

void ScopeState::adopt_drain(Ref<StateBase> rest, std::source_location where) {
    add_entry(std::move(rest), where, true, false, true);
}

void ScopeState::on_error(std::source_location spawned_at, std::exception_ptr error) {
    if (options_.policy == ScopePolicy::supervise) {
        ScopeError e{std::move(error), spawned_at};
        if (options_.on_error) {
            try {
                options_.on_error(e);
            } catch (...) {
                report_error(scheduler(), "exception in a futures::Scope error handler", std::current_exception(),
                             origin());
            }
        } else {
            report_error(scheduler(), fmt::format("a child of {} failed", where_text()), std::move(e.error),
                         spawned_at);
        }
        return;
    }
    errors_.push_back(ScopeError{error, spawned_at});
    if (!first_error_) {
        first_error_ = std::move(error);
        cancel_children(false);
    }
}

void ScopeState::cancel_children(bool shielded_too) {
    // Refs first: a cancellation may free states, and nothing below runs user
    // code that could spawn here meanwhile, but the vector must not move under us.
    std::vector<Ref<StateBase>> targets;
    targets.reserve(live_);
    for_each_child([&](const Child& c) {
        if (c.state->pending() && (shielded_too || !c.shielded)) targets.push_back(c.state);
    });
    for (Ref<StateBase>& t : targets) t->cancel();
}

}  // namespace futures::detail
