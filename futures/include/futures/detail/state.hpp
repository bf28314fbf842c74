// SPDX-License-Identifier: MIT
// futures::detail::StateBase and State<T>: the one shared result slot behind a Future<T>.
//
// One heap allocation per future, from the per-thread pool: status, value or
// error, waiters and (in subclasses) the links to what it waits on and the
// continuation or task machine. Reference counted without atomics: loop thread
// only. Never wakes a waiter synchronously: completing only schedules them.
// Part of futures/future.hpp (which defines Status first): include that.
#pragma once
#ifndef FUTURES_FUTURE_HPP_BODY_DONE
#error "futures/detail/*.hpp are parts of futures/future.hpp: include that instead"
#endif

#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <new>
#include <optional>
#include <source_location>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include <reactor/callback.hpp>
#include <reactor/export.hpp>
#include <reactor/scheduler.hpp>

#include "futures/detail/ref.hpp"
#include "futures/detail/state_pool.hpp"
#include "futures/detail/waiters.hpp"
#include "futures/errors.hpp"

namespace futures::detail {

// What a State<T> stores: T itself, or an empty marker for void.
template <class T>
using Stored = std::conditional_t<std::is_void_v<T>, std::monostate, T>;

// Hands an error that no future can carry any more to `sched`'s exception
// handler, naming `where`. Never throws.
REACTOR_API void report_error(reactor::Scheduler& sched, std::string_view message, std::exception_ptr error,
                  std::source_location where) noexcept;

class REACTOR_API StateBase {
public:
    StateBase(const StateBase&) = delete;
    StateBase& operator=(const StateBase&) = delete;

    // Every state's memory comes from the per-thread pool. The destructor is
    // virtual, so `delete` passes the size of the most derived state. Over-aligned
    // states (a T with alignas beyond 16) bypass the pool.
    static void* operator new(std::size_t size) { return allocate_state(size); }
    static void operator delete(void* block, std::size_t size) noexcept { free_state(block, size); }
    static void* operator new(std::size_t size, std::align_val_t align) { return ::operator new(size, align); }
    static void operator delete(void* block, std::size_t size, std::align_val_t align) noexcept {
        ::operator delete(block, size, align);
    }

    // ---- reference counts (Ref and Weak) ----
    void add_ref() noexcept { ++strong_; }
    void release() noexcept {
        if (--strong_ == 0) die(this);
    }
    void add_weak() noexcept { ++weak_; }
    void release_weak() noexcept {
        if (--weak_ == 0 && strong_ == 0) delete this;
    }
    bool alive() const noexcept { return strong_ > 0; }
    std::uint32_t use_count() const noexcept { return strong_; }

    // ---- observers ----
    Status status() const noexcept { return status_; }
    bool pending() const noexcept { return status_ == Status::pending; }
    reactor::Scheduler& scheduler() const noexcept { return *sched_; }
    std::source_location origin() const noexcept { return origin_; }
    const std::exception_ptr& error() const noexcept { return error_; }
    // "Future" or "Task": for messages.
    virtual std::string_view kind() const noexcept { return "Future"; }
    void mark_retrieved() noexcept { retrieved_ = true; }

    // ---- user callbacks: scheduled with call_soon when the state completes (at
    //      once if it already has), in registration order with the links
    //      waiting on it; `where` is named if one throws ----
    template <class F>
    CallbackId add_callback(F&& f, std::source_location where) {
        using Fn = std::decay_t<F>;
        if constexpr (std::is_pointer_v<Fn> || requires(const Fn& g) { g.operator bool(); }) {
            if (!static_cast<bool>(f)) throw std::invalid_argument("futures: empty done-callback");
        }
        return add_user_callback(new UserCallbackOf<Fn>(std::forward<F>(f), where));
    }
    // True if the callback had not started yet; it will not run.
    bool remove_callback(CallbackId id) noexcept;
    // add_callback's half that is not a template: takes `box` over (disposes
    // of it if it throws).
    CallbackId add_user_callback(UserCallback* box);
    // The library's own observers (a futures::Scope's children): `w` is run
    // inside the call that completes this state, after that call has
    // scheduled the other waiters; no loop turn and no ready-queue entry of
    // its own. So it must not run user code: it notes the end, and anything
    // more goes through the loop. Once run it is not disposed of (dispose()
    // means removed, with remove_callback, or dropped unrun). Precondition:
    // pending() (std::logic_error otherwise). Throws as push does (then `w`
    // is not registered and not disposed of).
    CallbackId add_inline_waiter(UserCallback* w) {
        if (!pending()) [[unlikely]]
            throw_complete("add_inline_waiter");
        const std::uint32_t index = waiters_.push(Waiter::inline_user(w));
        inline_waiters_ = true;
        return CallbackId{index};
    }

    // ---- completing (callers have checked pending()) ----
    void finish_done();                           // the subclass stored the value first
    void finish_failed(std::exception_ptr e);     // failed, as is
    void finish_exception(std::exception_ptr e);  // failed, or cancelled for a CancelledError
    void finish_cancelled(std::exception_ptr e = nullptr);
    // Completes like `src`, which failed or was cancelled; src's error now counts as retrieved.
    void finish_like(StateBase& src);
    // Completes a leaf whose producer (a timer, an fd wait) the Scheduler dropped
    // unrun: it is destroyed, the fd was closed, or the waiter was replaced. The
    // state is cancelled (with `why`), so whatever waits on it is released.
    void abandon(const char* why) noexcept;
    // The wake-up this state waited for was destroyed unrun (the Scheduler is
    // being destroyed): its payload (machine, function) is destroyed unrun and
    // it is abandoned, which passes the news on to what waits on it.
    void wakeup_lost() noexcept;

    // ---- the public API's checks ----
    // Throws InvalidStateError unless this state may be completed by hand now.
    void require_settable(const char* operation) const;
    // For result(): returns if done; pending -> InvalidStateError; failed ->
    // rethrows (and counts as retrieved); cancelled -> CancelledError.
    void check_result() {
        if (status_ != Status::done) [[unlikely]]
            throw_not_done();
    }
    std::exception_ptr exception();
    // Debug mode: a member of a Future or Promise on this state called from
    // a thread other than the one running its loop is reported, naming
    // `where` (else this state's origin) and refused: std::logic_error
    // (reactor::Scheduler::check_owner_thread). Outside debug mode one branch.
    void check_thread(const char* member, const std::source_location* where, const char* what = "future") const {
        sched_->check_owner_thread(member, where, &origin_, what);
    }

    // ---- cancellation: it travels along links, upstream ----
    // Cancels this state and, step by step, what it waits on (iteratively: a
    // million-long chain does not recurse). True if this state took the request.
    bool cancel();
    // Cuts every link of this state and cancels what they led to: for a state
    // that has decided (a combinator's first error) and no longer needs its inputs.
    void cancel_upstream();

    // ---- what the loop's registry of tasks and hand-made futures shows
    //      (futures/src/task_registry.cpp); a task overrides them ----
    virtual bool is_task() const noexcept { return false; }
    virtual bool task_started() const noexcept { return false; }  // resume() has run
    // The machine's state_name(), or empty if its class has none.
    virtual std::string_view task_machine_state() const { return {}; }
    virtual bool task_names_its_state() const noexcept { return false; }
    // What the task waits on now, or null.
    virtual StateBase* task_awaited() const noexcept { return nullptr; }

    // ---- what Scheduler::live() says it waits on (a scope's children,
    //      futures/src/scope_registry.cpp), from what the state keeps anyway ----
    // A leaf that waits on the loop itself says on what: "a timer due in
    // 0.250 s", "fd 7 to become readable", "a stream read". Empty for the
    // others: a state that waits through links (awaited()) or by hand.
    virtual std::string waits_on() const { return {}; }
    // What this state waits on now through its links: a continuation's
    // upstream, a combinator's inputs not complete yet, a task's awaited
    // future. Loop thread only.
    std::vector<StateBase*> awaited() const;

    // ---- what a futures::Scope waits on after this state ended cancelled
    //      while the work it started goes on elsewhere (a thread pool job, a
    //      submit_to function on another loop: futures/detail/remote_end.hpp) ----
    // A state that settles once that work has ended, or null if none runs on.
    virtual Ref<StateBase> drain() { return {}; }

protected:
    StateBase(reactor::Scheduler& sched, std::source_location origin, bool settable) noexcept
        : sched_(&sched), origin_(origin), settable_(settable) {}
    virtual ~StateBase() = default;

    // The loop's registry of tasks and hand-made futures lists a state (a
    // task when it starts, a hand-made future when it is made) until it is
    // destroyed. Where it is listed is an index every state has room for
    // (registry_index_, in what would be padding): not list links in every
    // task (a task lives as long as its conversation, an idle one included).
    static constexpr std::uint32_t kNotListed = UINT32_MAX;  // not, or no longer (the loop went)
    void join_registry();                 // may throw std::bad_alloc
    void leave_registry() noexcept;       // from the subclass's destructor

    // The links this state waits through (its members): cancel() travels along
    // them and death cuts them. A state that waits on nothing has none.
    virtual std::span<Link> links() noexcept;
    // One step of cancel(): take the request (or not: `accepted`) and return the
    // state it travels to next, or null. Default: a pending state becomes
    // cancelled and passes the request along its links (the last one is
    // returned, the others cancelled on the spot).
    virtual Ref<StateBase> cancel_step(bool& accepted);
    // Destroying what a state holds when its last strong reference goes but
    // links still point at it (its memory stays for them; otherwise the
    // destructor does all this at once): State<T> destroys the value, the most
    // derived class what it holds itself (a function, a machine), leaving its
    // members destructible. Neither has a base to call.
    virtual void destroy_value() noexcept = 0;
    virtual void destroy_payload() noexcept {}

private:
    friend class Link;
    friend class TaskRegistry;

    // Link::connect's half: wake `link` (and so its owner) once this completes.
    void add_waiter(Link& link);
    // The last link is cut and returned, to be cancelled by the caller.
    Ref<StateBase> cancel_links();

    static void die(StateBase* s) noexcept;  // queues s for dispose(), never recursively
    void dispose() noexcept;
    void report_unretrieved() noexcept;
    struct Trampoline;
    void schedule(std::uint32_t first, std::uint32_t end);
    void schedule_all();
    void schedule_all_and_run_inline();
    void run_inline_waiters() noexcept;
    void run_inline(UserCallback* w) noexcept;  // taken out already
    void run_waiter(std::uint32_t index) noexcept;
    [[noreturn]] void throw_not_done();
    [[noreturn]] static void throw_complete(const char* operation);

    reactor::Scheduler* sched_;
    std::uint32_t strong_ = 1;  // handles, scheduled trampolines, waiter entries of the links it waits through
    std::uint32_t weak_ = 0;    // Weak references (+1 while disposing)
    std::exception_ptr error_;
    std::source_location origin_;
    WaiterList waiters_;
    Status status_ = Status::pending;
    bool retrieved_ : 1 = false;  // the error was seen by result()/exception() or passed on
    bool settable_ : 1;           // created by Future(sched): may be completed by hand
    bool inline_waiters_ : 1 = false;  // add_inline_waiter has registered one (cleared on completion)

protected:
    // The subclasses' flags, beside the three above in one byte, and the
    // registry's index: they take the tail of the last word, which would
    // otherwise be padding, so a State<T> is its value past this base and a
    // task its link and machine (a task, its read's state and its stream
    // are what an idle conversation costs).
    bool has_value_ : 1 = false;    // State<T>: its slot holds a value
    bool has_machine_ : 1 = false;  // TaskState: its machine is constructed
    bool started_ : 1 = false;      // TaskState: resume() has run
    bool must_cancel_ : 1 = false;  // TaskState: a cancel request waits for the next future

private:
    std::uint32_t registry_index_ = kNotListed;  // see join_registry
};

// Where a State<T> keeps its T: raw storage, constructed by finish_value and
// destroyed with the state (or by destroy_value), StateBase's has_value_
// saying whether it holds one. Not a std::optional, whose flag would take a
// word of its own after the value: has_value_ is a bit of StateBase's last
// word instead, and a State<void> keeps no storage at all. Every future has a
// state, and an idle stream's pending read is one.
template <class V>
union ValueSlot {
    ValueSlot() noexcept {}
    ~ValueSlot() {}
    V value;
};

// A state holding a T (or nothing, for void).
template <class T>
class State : public StateBase {
public:
    using value_type = T;

    State(reactor::Scheduler& sched, std::source_location origin, bool settable) noexcept
        : StateBase(sched, origin, settable) {}
    ~State() override { destroy_value(); }

    template <class... A>
    void finish_value(A&&... args) {
        if constexpr (!std::is_void_v<T>) {
            destroy_value();
            std::construct_at(&slot_.value, std::forward<A>(args)...);
            has_value_ = true;
        }
        finish_done();
    }

    // Precondition: status() == done.
    Stored<T>& value() noexcept {
        if constexpr (std::is_void_v<T>) {
            static constinit std::monostate none{};
            return none;
        } else {
            return slot_.value;
        }
    }

    // The value handed to a consumer: moved out when nobody else can see this
    // state any more (the running callback holds the only reference), copied
    // otherwise. Move-only values are always moved.
    Stored<T> take_value() {
        if constexpr (std::is_copy_constructible_v<Stored<T>>) {
            if (use_count() > 1) return value();
        }
        return std::move(value());
    }

    // Completes like `src` completed (precondition: src is complete and this is pending).
    void finish_from(State& src) {
        if (src.status() == Status::done) {
            finish_value(src.take_value());
        } else {
            finish_like(src);
        }
    }

    // The wake-up of a state that follows another (a continuation whose
    // function returned a future): completes like `src`, unless this state was
    // completed meanwhile (cancelled).
    void adopt(State& src) {
        if (pending()) finish_from(src);
    }

private:
    struct NoValue {};
    using Slot = std::conditional_t<std::is_void_v<T>, NoValue, ValueSlot<Stored<T>>>;

    void destroy_value() noexcept final {
        if constexpr (!std::is_void_v<T>) {
            if (has_value_) {
                has_value_ = false;
                std::destroy_at(&slot_.value);
            }
        }
    }

    [[no_unique_address]] Slot slot_;  // has_value_ (StateBase's) says whether it holds one
};

}  // namespace futures::detail
