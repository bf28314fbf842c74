// SPDX-License-Identifier: MIT
// futures::Scope: a structured lifetime for futures (asyncio's TaskGroup,
// Trio's nursery, Seastar's gate), without coroutines.
//
// A scope owns the children spawned into it: futures, whole then-chains (spawn
// the chain's last future), state-machine tasks and nested scopes. close()
// returns a Future<void> that settles only once every child has settled, and
// one loop turn later, so the continuations a child's completion scheduled
// (those attached to it before it settled) have run before close()'s own
// waiters do:
//
//     futures::Scope scope(sched);                   // fail-fast (the default)
//     scope.spawn(fetch(a));                         // a future
//     scope.spawn([&] { return fetch(b); });         // a callable returning one
//     scope.spawn(Crawler{sched, url});              // a task (a machine)
//     return scope.close();                          // settles after all three
//
//   open --close()--> closing --last child settled, + one loop turn--> settled
//     |                  |
//     |  spawn: a child  |  spawn: ScopeClosedError (naming the creation and close lines)
//
// Policies. fail_fast (default): the first child that fails cancels its
// siblings and close() fails with that error; later errors are kept, in
// order, in errors() (the first one first): all count as retrieved, none is
// reported as "never retrieved". supervise: a child fails alone; its error goes
// to ScopeOptions::on_error (or, without one, to the loop's exception handler,
// naming the child's spawn line), and close() succeeds. A child that ends
// cancelled is never an error.
//
// Cancellation. cancel() cancels every child, and with it what each waits on,
// through the library's cancellation (then chains, when_all/when_any,
// with_timeout, retry, loops; a task is asked, and resumes with
// CancelledError); a child spawned afterwards is cancelled at once. close()
// then succeeds (the scope's own cancel is not an error, as in Trio). A
// scope cancelled from outside (its close() future cancelled, its parent
// cancelled, a with_timeout around close()) ends cancelled instead. A deadline
// (ScopeOptions::deadline, set_deadline, with_deadline) on the loop's clock
// (virtual time too) cancels the children when it passes, and close() fails
// with TimeoutError. spawn_shielded() adds a child that no cancellation of the
// scope reaches (close() still waits for it).
//
// Nesting: Scope(parent) makes a scope that is its parent's child: the parent's
// close() waits for it, and cancelling the parent cancels it, and so every leaf.
//
// Lifetime. The Scope object is a movable handle. Destroying it after close()
// is fine: the close() future carries the lifetime on (and an error nobody
// reads from it is reported as never retrieved). Destroying an open scope with
// live children is a bug: in debug mode (Scheduler::debug()) the program
// aborts, naming the scope's creation line and each child's spawn line;
// otherwise the children are cancelled and the same lines are reported through
// the loop's exception handler (so too in debug mode while an exception
// unwinds through the scope's owner: leaving early on purpose, as an
// exception out of asyncio's `async with TaskGroup()` cancels its tasks). Scheduler::live() lists every unsettled scope
// and its live children (Kind::scope, parents first). Loop thread only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <optional>
#include <source_location>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <reactor/clock.hpp>
#include <reactor/export.hpp>
#include <reactor/scheduler.hpp>

#include "futures/errors.hpp"
#include "futures/future.hpp"
#include "futures/leaves.hpp"
#include "futures/task.hpp"

namespace futures {

enum class ScopePolicy : std::uint8_t {
    fail_fast,  // the first error cancels the siblings; close() fails with it
    supervise,  // children fail alone; errors go to on_error
};

// One child's error, with the line that spawned the child.
struct REACTOR_API ScopeError {
    std::exception_ptr error;
    std::source_location spawned_at;
    // what() of the error ("unknown exception" for one not derived from std::exception).
    std::string message() const;
};

using ScopeErrorHandler = std::function<void(const ScopeError&)>;

struct ScopeOptions {
    ScopePolicy policy = ScopePolicy::fail_fast;
    // supervise: called from the loop with each failed child's error (what it
    // throws goes to the loop's exception handler). Empty: the error goes to
    // the loop's exception handler, naming the child's spawn line.
    ScopeErrorHandler on_error = {};
    // When the scope's children are cancelled and close() fails with TimeoutError.
    std::optional<reactor::TimePoint> deadline = std::nullopt;
};

// spawn() (or a nested Scope) on a closed scope.
class REACTOR_API ScopeClosedError : public InvalidStateError {
public:
    using InvalidStateError::InvalidStateError;
};

namespace detail {
class ScopeState;
class ServerCore;
class ServerScopeCore;
}

class REACTOR_API Scope {
public:
    explicit Scope(reactor::Scheduler& sched, ScopeOptions options = {},
                   std::source_location where = std::source_location::current());
    // A scope that is a child of `parent` (same loop): parent.close() waits for
    // it, cancelling the parent cancels it. ScopeClosedError if parent is closed.
    explicit Scope(Scope& parent, ScopeOptions options = {},
                   std::source_location where = std::source_location::current());
    Scope(Scope&& other) noexcept;
    Scope& operator=(Scope&& other) noexcept;
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;
    // See "Lifetime" above.
    ~Scope();

    // ---- children (ScopeClosedError once closed; std::invalid_argument for
    //      a future of another loop or an empty one) ----
    // Adds `child` and returns it (read its value as usual).
    template <class T>
    Future<T> spawn(Future<T> child, std::source_location where = std::source_location::current()) {
        adopt(detail::Access::base(child), where, false);
        return child;
    }
    // Starts a machine as a task (futures::spawn), a child of this scope.
    template <class M>
        requires Machine<std::decay_t<M>>
    auto spawn(M&& machine, std::source_location where = std::source_location::current()) {
        check_open(where);
        return spawn(futures::spawn(scheduler(), std::forward<M>(machine), where), where);
    }
    // Calls f() now and adds the future it returns; an exception f throws
    // becomes that child's error (fail-fast: the scope's first error).
    template <class F>
        requires(!Machine<std::decay_t<F>> && std::is_invocable_v<std::decay_t<F>&> &&
                 is_future_v<std::invoke_result_t<std::decay_t<F>&>>)
    auto spawn(F&& f, std::source_location where = std::source_location::current()) {
        using R = std::remove_cvref_t<std::invoke_result_t<std::decay_t<F>&>>;
        check_open(where);
        R child;
        try {
            child = std::invoke(f);
        } catch (...) {
            child = make_exception_future<typename R::value_type>(scheduler(), std::current_exception(), where);
        }
        return spawn(std::move(child), where);
    }
    // A child that the scope's cancellation (cancel(), a deadline, a sibling's
    // error, the parent's cancellation) does not reach; close() still waits for it.
    template <class T>
    Future<T> spawn_shielded(Future<T> child, std::source_location where = std::source_location::current()) {
        adopt(detail::Access::base(child), where, true);
        return child;
    }

    // ---- the end ----
    // Refuses new children from now on; the future settles once every child
    // has, one loop turn later (see the top of this file). Every call returns
    // the same future. Cancelling that future cancels the scope from outside.
    Future<void> close(std::source_location where = std::source_location::current());
    // Cancels every child but the shielded ones; later children are cancelled at once.
    void cancel();
    // Cancels the children when the loop's clock reaches `deadline`; replaces
    // an earlier deadline. Does nothing once the scope has settled.
    void set_deadline(reactor::TimePoint deadline);

    // ---- observers ----
    bool valid() const noexcept { return static_cast<bool>(state_); }  // false once moved from
    bool closed() const;
    bool settled() const;                       // close()'s future is complete
    std::size_t live_children() const;          // spawned and not yet settled
    const std::vector<ScopeError>& errors() const;  // fail-fast: every child's error, in order
    // The same, from the future close() returned (the handle may be gone by
    // then): the errors attached to the one it fails with. std::invalid_argument
    // for a future that is not a scope's.
    static const std::vector<ScopeError>& errors_of(const Future<void>& closed);
    std::source_location origin() const;        // the line that made the scope
    reactor::Scheduler& scheduler() const;

private:
    friend class detail::ServerCore;  // its conversations are counted children (ScopeState::adopt_counted)
    friend class detail::ServerScopeCore;  // the same, for a reactor listener's server (server_scope.hpp)

    void check_open(std::source_location where) const;
    void adopt(detail::Ref<detail::StateBase> child, std::source_location where, bool shielded);
    detail::ScopeState& state() const {
        if (!state_) [[unlikely]]
            throw_moved_from();
        return *state_;
    }
    [[noreturn]] static void throw_moved_from();

    detail::ScopeState* state_ = nullptr;  // one strong reference (a Ref<ScopeState>, kept by hand)
};

// Sets `scope`'s deadline (a deadline scope, Trio's fail_at): returns `scope`.
REACTOR_API Scope& with_deadline(Scope& scope, reactor::TimePoint deadline);

}  // namespace futures
