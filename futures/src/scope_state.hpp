// SPDX-License-Identifier: MIT
// futures::detail::ScopeState: what a futures::Scope is (futures/scope.hpp).
//
// The scope's close() future is this state itself: a State<void> that holds a
// strong reference to each live child and is told of its end by a done-callback
// on it (registered at spawn, so it runs in the child's batch of waiters, in
// registration order). Once closed and without live children it settles one
// call_soon later: the waiters the last child's completion scheduled have run
// by then. A cancel() of this state (from outside: its close() future, the
// parent scope, a with_timeout) cancels the children. The loop's registry of
// scopes (scope_registry.cpp) lists the unsettled ones for Scheduler::live()
// and ends them with the loop. Loop thread only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <exception>
#include <source_location>
#include <string>
#include <vector>

#include <reactor/handle.hpp>
#include <reactor/live_item.hpp>

#include "futures/future.hpp"
#include "futures/scope.hpp"

namespace futures::detail {

class ScopeRegistry;

class ScopeState final : public State<void> {
public:
    ScopeState(reactor::Scheduler& sched, std::source_location where, ScopeOptions options);
    ~ScopeState() override;

    std::string_view kind() const noexcept override { return "Scope"; }

    // ---- what Scope does ----
    void check_open(std::source_location where) const;  // ScopeClosedError
    void adopt(Ref<StateBase> child, std::source_location where, bool shielded, bool is_scope);
    // A child the scope keeps no entry for, because a waiter of its own
    // already follows it and tells the scope of its end (a stream server's
    // conversation: its stream waits on it, StreamCore::follow): counted in
    // live_children() and waited for by close(), for no byte per child.
    // cancel() does not reach it (its follower ends it: the server aborts
    // its stream), and live() shows the count only. ScopeClosedError once
    // closed, as spawn.
    void adopt_counted(std::source_location where);
    // Its end: `child` is the state that completed (its error, if it failed,
    // goes where a spawned child's would), or null if the follower was
    // dropped unrun (the loop ended).
    void counted_done(StateBase* child, std::source_location where) noexcept;
    void close(std::source_location where);
    void cancel_own();
    void set_deadline(reactor::TimePoint deadline);
    void handle_dropped() noexcept;  // ~Scope: see "Lifetime" in futures/scope.hpp

    bool closed() const noexcept { return closed_; }
    std::size_t live_children() const noexcept { return live_; }
    const std::vector<ScopeError>& errors() const noexcept { return errors_; }

    // ---- the registry's ----
    void mark_nested() noexcept { nested_ = true; }
    bool nested() const noexcept { return nested_; }
    // Scheduler::live(): this scope, then its live children, nested scopes in turn.
    void describe(std::vector<reactor::LiveItem>& out, const ScopeState* parent) const;
    // Scheduler::close() and ~Scheduler: nothing of the children may run any
    // more; the scope is dropped from the registry and ends cancelled.
    void loop_ended() noexcept;
    ScopeRegistry* registry_ = nullptr;  // null once it left (settled, or the loop went)
    std::size_t registry_index_ = 0;

private:
    struct Child {
        Ref<StateBase> state;  // null: a free slot
        std::source_location where;
        bool shielded = false;
        bool is_scope = false;
        // What a cancelled child's work elsewhere still does (StateBase::drain):
        // shielded, never an error.
        bool drain = false;
    };
    void adopt_drain(Ref<StateBase> rest, std::source_location where);

    Ref<StateBase> cancel_step(bool& accepted) override;

    void add_entry(Child child);
    void on_child(std::uint32_t slot);
    void on_error(std::source_location spawned_at, std::exception_ptr error);
    void cancel_children(bool shielded_too);
    bool cancelling() const noexcept { return own_cancel_ || outside_cancel_ || timed_out_ || first_error_; }
    void maybe_settle();
    void settle();
    void leave_registry() noexcept;
    std::string where_text() const;         // "the scope created at x.cpp:3"
    std::string children_text() const;      // "spawned at a.cpp:1, b.cpp:2"

    ScopeOptions options_;
    std::vector<Child> children_;       // slots; a done-callback names its child by slot
    std::vector<std::uint32_t> free_;   // free slots of children_
    std::size_t live_ = 0;
    std::size_t counted_ = 0;           // of live_: adopt_counted's, which have no entry
    std::vector<ScopeError> errors_;    // fail-fast: every child's error, the first one first
    std::exception_ptr first_error_;
    reactor::Handle deadline_timer_;
    std::source_location closed_at_;
    bool closed_ = false;
    bool settling_ = false;       // the call_soon that settles it is scheduled
    bool own_cancel_ = false;     // cancel()
    bool outside_cancel_ = false; // this state was cancelled
    bool timed_out_ = false;      // the deadline passed
    bool abandoned_ = false;      // the handle went with live children, unclosed
    bool nested_ = false;         // a child of another scope
};

}  // namespace futures::detail
