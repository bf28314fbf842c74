// SPDX-License-Identifier: MIT
// futures::detail::ScopeState: what a futures::Scope is (futures/scope.hpp).
//
// The scope's close() future is this state itself: a State<void> that holds a
// strong reference to each live child in a record of its own (a Child: no
// allocation per child, records come from the scope's blocks and are reused).
// The record is also the child's waiter: an inline one
// (StateBase::add_inline_waiter), which the child's completion runs on the
// spot to put the record on the scope's list of ended children, without a
// loop turn of its own. One call_soon per scope and loop turn (reap) then
// deals with each, in the order they ended: errors, drains, the count. Once
// closed and without live children it settles one call_soon later: the
// waiters the last child's completion scheduled have run by then. A cancel()
// of this state (from outside: its close() future, the parent scope, a
// with_timeout) cancels the children. The loop's registry of scopes
// (scope_registry.cpp) lists the unsettled ones for Scheduler::live() and
// ends them with the loop. Loop thread only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
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
    void check_open(std::source_location where) const {  // ScopeClosedError
        if (closed_) [[unlikely]]
            throw_closed(where);
    }
    void adopt(Ref<StateBase>&& child, std::source_location where, bool shielded, bool is_scope);
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
    // One live child: its state, the spawn line, and its place in the
    // child's waiter list. In a block of the scope's (stable address: the
    // child's waiter list points here) from spawn until reap() has dealt with
    // it; a free record has no state.
    struct Child final : UserCallback {
        ScopeState* scope = nullptr;  // while in use (records_ keeps the scope alive)
        Ref<StateBase> state;    // null: free
        std::source_location spawned_at;
        Child* next = nullptr;   // the free list, or the list of ended children
        std::uint32_t entry = 0; // its index in state's waiter list
        bool linked = false;     // that entry is in the list (not yet run, removed or dropped)
        bool shielded = false;
        bool is_scope = false;
        // What a cancelled child's work elsewhere still does (StateBase::drain):
        // shielded, never an error.
        bool drain = false;

        Child() noexcept = default;
        ~Child() = default;
        // Inline: the child completed; the scope notes it (ScopeState::ended).
        void run(StateBase&) override { scope->ended(*this); }
        std::source_location where() const noexcept override { return spawned_at; }
        // Removed (loop_ended): the record stays the scope's.
        void dispose() noexcept override { linked = false; }
    };
    // Records come in blocks of kFirstBlock, then twice as many each time up to kLastBlock.
    static constexpr std::uint32_t kFirstBlock = 8;
    static constexpr std::uint32_t kLastBlock = 1024;
    static std::uint32_t block_size(std::size_t k) noexcept {
        return k >= 7 ? kLastBlock : kFirstBlock << k;
    }
    // Calls f(child) for each record in use (spawned, not yet reaped).
    template <class F>
    void for_each_child(F&& f) const {
        for (std::size_t k = 0; k < blocks_.size(); ++k) {
            Child* const end = k + 1 == blocks_.size() ? next_ : blocks_[k].get() + block_size(k);
            for (Child* c = blocks_[k].get(); c != end; ++c)
                if (c->state) f(*c);
        }
    }

    void adopt_drain(Ref<StateBase> rest, std::source_location where);
    Ref<StateBase> cancel_step(bool& accepted) override;

    void add_entry(Ref<StateBase>&& child, std::source_location where, bool shielded, bool is_scope, bool drain);
    Child& take_record() {
        if (Child* c = free_) {
            free_ = c->next;
            c->next = nullptr;
            return *c;
        }
        if (next_ != end_) return *next_++;
        return new_block();
    }
    Child& new_block();
    // Every caller holds a reference to this scope: the last record's goes here.
    void free_record(Child& c) noexcept {
        c.state = {};
        c.scope = nullptr;
        c.linked = false;
        c.next = free_;
        free_ = &c;
        if (--records_ == 0) release();
    }
    // Inline, from the child's completion: the record joins the list of
    // ended children, and (once per turn) reap() is scheduled.
    void ended(Child& c) noexcept {
        c.linked = false;
        c.next = nullptr;
        (ended_last_ ? ended_last_->next : ended_first_) = &c;
        ended_last_ = &c;
        if (!reaping_) schedule_reap(c);
    }
    void schedule_reap(const Child& c) noexcept;
    [[noreturn]] void throw_closed(std::source_location where) const;
    [[noreturn]] void refuse(const StateBase* child, std::source_location where) const;  // adopt's errors
    void reap();
    void on_child(Child& c);
    void on_error(std::source_location spawned_at, std::exception_ptr error);
    void cancel_children(bool shielded_too);
    bool cancelling() const noexcept { return own_cancel_ || outside_cancel_ || timed_out_ || first_error_; }
    void maybe_settle() {
        if (closed_ && live_ == 0) settle_soon();
    }
    void settle_soon();
    void settle();
    void leave_registry() noexcept;
    std::string where_text() const;         // "the scope created at x.cpp:3"
    std::string children_text() const;      // "spawned at a.cpp:1, b.cpp:2"

    ScopeOptions options_;
    std::vector<std::unique_ptr<Child[]>> blocks_;  // block k holds block_size(k) records
    Child* next_ = nullptr;             // the last block's first record never taken
    Child* end_ = nullptr;              // the last block's end
    std::size_t records_ = 0;           // in use; while any is, they hold one reference to this scope
    Child* free_ = nullptr;             // records given back, for the next children
    Child* ended_first_ = nullptr;      // children ended and not yet reaped, in order
    Child* ended_last_ = nullptr;
    std::size_t live_ = 0;
    std::size_t counted_ = 0;           // of live_: adopt_counted's, which have no entry
    std::vector<ScopeError> errors_;    // fail-fast: every child's error, the first one first
    std::exception_ptr first_error_;
    reactor::Handle deadline_timer_;
    std::source_location closed_at_;
    bool closed_ = false;
    bool settling_ = false;       // the call_soon that settles it is scheduled
    bool reaping_ = false;        // the call_soon of reap() is scheduled
    bool own_cancel_ = false;     // cancel()
    bool outside_cancel_ = false; // this state was cancelled
    bool timed_out_ = false;      // the deadline passed
    bool abandoned_ = false;      // the handle went with live children, unclosed
    bool nested_ = false;         // a child of another scope
};

}  // namespace futures::detail
