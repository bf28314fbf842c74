// futures::detail::StateBase and State<T>: the one shared result slot behind a Future<T>.
//
// One heap allocation per future: status, value or error, done-callbacks and (in
// subclasses) the continuation or task machine live in this one object, whose
// memory comes from a per-thread pool (futures/detail/state_pool.hpp). Reference
// counted without atomics, so loop thread only. Never runs a done-callback
// synchronously: completing a state only schedules them (Scheduler::call_soon).
#pragma once

#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <new>
#include <optional>
#include <source_location>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include <reactor/callback.hpp>
#include <reactor/scheduler.hpp>

#include "futures/detail/state_pool.hpp"
#include "futures/errors.hpp"

namespace futures {

// Where a future is in its life. A state leaves `pending` once and never again:
//
//                    set_result              +-----------+
//              +---------------------------> |   done    |  result() returns the value
//              |                             +-----------+
//   +---------+      set_exception           +-----------+
//   | pending | ---------------------------> |  failed   |  result() rethrows; if nobody ever
//   +---------+                              +-----------+  looks, reported when the state dies
//              |   cancel(), or completed    +-----------+
//              +---------------------------> | cancelled |  result() throws CancelledError
//                  with a CancelledError     +-----------+
//
// Every transition schedules the done-callbacks with call_soon, in registration
// order. A second transition is a contract violation (InvalidStateError).
enum class Status : std::uint8_t { pending, done, failed, cancelled };
std::string_view to_string(Status status) noexcept;

// Names one callback registered with add_done_callback, for remove_done_callback
// on the same future.
struct CallbackId {
    std::uint32_t index = UINT32_MAX;
};

template <class T>
class Future;

namespace detail {

// What a State<T> stores: T itself, or an empty marker for void.
template <class T>
using Stored = std::conditional_t<std::is_void_v<T>, std::monostate, T>;

class StateBase;

// Hands an error that no future can carry any more to `sched`'s exception
// handler, naming `where`. Never throws.
void report_error(reactor::Scheduler& sched, std::string_view message, std::exception_ptr error,
                  std::source_location where) noexcept;

// Intrusive strong reference: keeps the state and its payload alive.
template <class S>
class Ref {
public:
    Ref() noexcept = default;
    explicit Ref(S* s) noexcept : s_(s) {
        if (s_) s_->add_ref();
    }
    // Takes over a reference that is already counted (a freshly created state's).
    static Ref adopt(S* s) noexcept {
        Ref r;
        r.s_ = s;
        return r;
    }
    Ref(const Ref& other) noexcept : Ref(other.s_) {}
    Ref(Ref&& other) noexcept : s_(std::exchange(other.s_, nullptr)) {}
    template <class D>
        requires std::is_convertible_v<D*, S*>
    Ref(Ref<D> other) noexcept : s_(other.release_ownership()) {}  // NOLINT: upcast
    Ref& operator=(Ref other) noexcept {
        std::swap(s_, other.s_);
        return *this;
    }
    ~Ref() {
        if (s_) s_->release();
    }

    S* get() const noexcept { return s_; }
    S* operator->() const noexcept { return s_; }
    S& operator*() const noexcept { return *s_; }
    explicit operator bool() const noexcept { return s_ != nullptr; }
    S* release_ownership() noexcept { return std::exchange(s_, nullptr); }

private:
    S* s_ = nullptr;
};

// Weak reference: keeps only the memory, for "I am waiting on that state" links
// that must not keep it (and so a cycle) alive. get() is null once it died.
class WeakRef {
public:
    WeakRef() noexcept = default;
    explicit WeakRef(StateBase* s) noexcept;
    WeakRef(const WeakRef&) = delete;
    WeakRef& operator=(const WeakRef&) = delete;
    WeakRef(WeakRef&& other) noexcept : s_(std::exchange(other.s_, nullptr)) {}
    WeakRef& operator=(WeakRef&& other) noexcept;
    ~WeakRef() { reset(); }

    StateBase* get() const noexcept;  // null if empty or if the state died
    void reset() noexcept;

private:
    StateBase* s_ = nullptr;
};

// A user's done-callback, boxed: most waiters are continuations, which need no box.
struct UserCallback {
    reactor::Callback cb;
    std::source_location where;
};

// One waiter of a state: a continuation state to notify (owning one strong
// reference to it), or a boxed user callback (owned). 16 bytes.
struct Waiter {
    enum class Kind : std::uint8_t { empty, state, user };
    void* target = nullptr;
    std::uint32_t tag = 0;  // passed back to the continuation: which of its inputs this is
    Kind kind = Kind::empty;
};

// The waiters of one state, in registration order. The first lives inline (most
// futures have exactly one consumer), the rest in a vector made for the second
// (so a state carries one pointer for them, not a whole vector). An entry is
// emptied when it starts running or is removed; indexes are stable.
class WaiterList {
public:
    WaiterList() = default;
    WaiterList(const WaiterList&) = delete;
    WaiterList& operator=(const WaiterList&) = delete;
    ~WaiterList() {
        if (size_ != 0) clear();  // a dead state's list was cleared already
    }

    std::uint32_t size() const noexcept { return size_; }
    Waiter& operator[](std::uint32_t i) noexcept { return i == 0 ? first_ : (*rest_)[i - 1]; }
    std::uint32_t push(Waiter w);
    // Takes entry i out (leaving it empty); the caller now owns what it held.
    Waiter take(std::uint32_t i) noexcept { return std::exchange((*this)[i], Waiter{}); }
    static void drop(Waiter w) noexcept;  // releases what a taken entry held
    void clear() noexcept;

private:
    Waiter first_;
    std::unique_ptr<WaiterVector> rest_;  // from take_waiter_vector()
    std::uint32_t size_ = 0;
};

class StateBase {
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

    // ---- reference counts (loop thread only) ----
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

    // ---- waiters: scheduled with call_soon when the state completes (at once
    //      if it already has), in registration order; those registered before
    //      the completion share one call_soon, which runs them one after another ----
    // A user callback; `where` is named if it throws.
    CallbackId add_callback(reactor::Callback cb, std::source_location where);
    // A continuation: `waiter->on_ready(*this, tag)` will be called from the loop.
    // The list holds a strong reference to it until then.
    CallbackId add_waiter(StateBase* waiter, std::uint32_t tag);
    // True if the callback had not started yet; it will not run.
    bool remove_callback(CallbackId id) noexcept;
    // Completes a leaf whose producer (a timer, an fd wait) the Scheduler dropped
    // unrun: it is destroyed, the fd was closed, or the waiter was replaced. The
    // state is cancelled (with `why`), so whatever waits on it is released.
    void abandon(const char* why) noexcept;

    // ---- completing (callers have checked pending()) ----
    void finish_done();                           // the subclass stored the value first
    void finish_failed(std::exception_ptr e);     // failed, as is
    void finish_exception(std::exception_ptr e);  // failed, or cancelled for a CancelledError
    void finish_cancelled(std::exception_ptr e = nullptr);
    // Completes like `src`, which failed or was cancelled; src's error now counts as retrieved.
    void finish_like(StateBase& src);

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
    // Cancels this state and, step by step, what it waits on (iteratively:
    // a million-long chain does not recurse). True if this state took the request.
    bool cancel();

    // ---- the one state this one waits on (for cancel propagation) ----
    void wait_on(StateBase* s) noexcept { link_ = WeakRef(s); }
    void clear_wait() noexcept { link_.reset(); }
    StateBase* waiting_on() const noexcept { return link_.get(); }

protected:
    StateBase(reactor::Scheduler& sched, std::source_location origin, bool settable) noexcept
        : sched_(&sched), settable_(settable), origin_(origin) {}
    virtual ~StateBase() = default;

    // A state this one waits on (registered with add_waiter(this, tag)) has
    // completed. Called from the loop, on a fresh stack; `src` stays alive
    // throughout. Continuations override it.
    virtual void on_ready(StateBase& src, std::uint32_t tag);

    // One step of cancel(): take the request (or not: `accepted`) and return the
    // state it travels to next, or null. Default: a pending state becomes
    // cancelled and passes the request on to what it waits on.
    virtual StateBase* cancel_step(bool& accepted);
    // Destroys what a subclass holds (value, continuation, machine) when the last
    // strong reference goes; the memory itself may stay for weak references.
    // Overrides call their base's.
    virtual void destroy_payload() noexcept {}

private:
    friend class WeakRef;

    static void die(StateBase* s) noexcept;  // queues s for dispose(), never recursively
    void dispose() noexcept;
    void report_unretrieved() noexcept;
    struct Trampoline;
    void schedule(std::uint32_t first, std::uint32_t end);
    void schedule_all();
    void run_waiter(std::uint32_t index) noexcept;
    [[noreturn]] void throw_not_done();

    reactor::Scheduler* sched_;
    std::uint32_t strong_ = 1;  // handles, its scheduled trampolines, waiter lists of states it waits on
    std::uint32_t weak_ = 0;    // WeakRefs (+1 while disposing)
    Status status_ = Status::pending;
    bool retrieved_ = false;  // the error was seen by result()/exception() or passed on
    bool settable_;           // created by Future(sched): may be completed by hand
    std::exception_ptr error_;
    std::source_location origin_;
    WeakRef link_;
    StateBase* next_dead_ = nullptr;  // the dispose queue (see die())
    WaiterList callbacks_;
};

inline WeakRef::WeakRef(StateBase* s) noexcept : s_(s) {
    if (s_) s_->add_weak();
}
inline WeakRef& WeakRef::operator=(WeakRef&& other) noexcept {
    if (this != &other) {
        reset();
        s_ = std::exchange(other.s_, nullptr);
    }
    return *this;
}
inline StateBase* WeakRef::get() const noexcept { return s_ && s_->alive() ? s_ : nullptr; }
inline void WeakRef::reset() noexcept {
    if (s_) std::exchange(s_, nullptr)->release_weak();
}

// A state holding a T (or nothing, for void).
template <class T>
class State : public StateBase {
public:
    State(reactor::Scheduler& sched, std::source_location origin, bool settable) noexcept
        : StateBase(sched, origin, settable) {}

    template <class... A>
    void finish_value(A&&... args) {
        value_.emplace(std::forward<A>(args)...);
        finish_done();
    }

    // Precondition: status() == done.
    Stored<T>& value() noexcept { return *value_; }

    // The value handed to a consumer: moved out when nobody else can see this
    // state any more (the running callback holds the only reference), copied
    // otherwise. Move-only values are always moved.
    Stored<T> take_value() {
        if constexpr (std::is_copy_constructible_v<Stored<T>>) {
            if (use_count() > 1) return *value_;
        }
        return std::move(*value_);
    }

    // Completes like `src` completed (precondition: src is done and this is pending).
    void finish_from(State& src) {
        if (src.status() == Status::done) {
            finish_value(src.take_value());
        } else {
            finish_like(src);
        }
    }

    // The tag with which follow() waits; a continuation's on_ready passes it to adopt().
    static constexpr std::uint32_t kFollowed = UINT32_MAX;

    // Completes like `inner` once it completes (the subclass's on_ready calls
    // adopt() for kFollowed); cancelling this cancels `inner`.
    void follow(State& inner) {
        wait_on(&inner);
        inner.add_waiter(this, kFollowed);
    }

protected:
    void destroy_payload() noexcept override { value_.reset(); }

    void adopt(State& src) {
        if (!pending()) return;  // cancelled meanwhile
        clear_wait();
        finish_from(src);
    }

private:
    std::optional<Stored<T>> value_;
};

}  // namespace detail
}  // namespace futures
