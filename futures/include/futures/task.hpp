// SPDX-License-Identifier: MIT
// futures/task.hpp: tasks written by hand as state machines (generators desugared),
// spawn(), and run_until_complete().
//
// The protocol. A *machine* is any movable class with
//
//     futures::Step<T> resume();
//
// resume() runs until the machine must wait, then returns the future it waits on
// (usually kept in a member, so the next resume() can read it):
//     return sleep_ = futures::sleep(sched_, 1s);
// or it returns its final value: `return 42;` (`return futures::finished;` for
// Step<void>). When the awaited future completes, however it completes, resume()
// is called again; it reads that future's result(), which rethrows its error (or
// CancelledError). Write it as one `enum class State`, one `switch`, a few lines
// per state (see docs/futures.md and examples/05_tasks/tasks.cpp).
//
// spawn(sched, machine) moves the machine into a task and returns the task's
// join handle, a Future<T>: tasks join tasks by returning it from resume().
//
//               spawn(sched, machine)
//                      |  call_soon: resume() never runs inside spawn()
//                      v
//      +-------> [ resume() ] --- returns a value -----------> done
//      |              |  |------- throws E ------------------> failed (E)
//      |              |  '------- throws CancelledError -----> cancelled
//      |              | returns future f
//      |              v
//      |       [ waiting on f ] <--- cancel(): f.cancel()
//      |              |
//      +--------------+  f completes (done, failed or cancelled): call_soon
//
// Cancelling a task (cancel() on its join handle) is a request: the future it
// waits on is cancelled, so it is resumed and its f.result() throws
// CancelledError. Letting that escape ends the task cancelled; catching it lets
// the machine clean up (even wait on more futures) and finish as it likes. A task
// cancelled before its first resume() ends cancelled without running. If f had
// already completed when the request came, the next future the task waits on is
// cancelled instead (a final value returned meanwhile ends it cancelled).
// Note that cancelling a task cancels the future it waits on even if others wait
// on that future too.
//
// The machine is destroyed as soon as the task completes. A task's error that
// nobody retrieves (a background task whose handle was dropped) is reported
// through the Scheduler's exception handler as "Task exception was never
// retrieved", naming where it was spawned. Loop thread only.
#pragma once

#include <concepts>
#include <cstdint>
#include <memory>
#include <optional>
#include <source_location>
#include <string_view>
#include <type_traits>
#include <utility>

#include <reactor/export.hpp>
#include <reactor/scheduler.hpp>

#include "futures/future.hpp"

namespace futures {

// The final "value" of a Step<void>: `return futures::finished;`.
struct Finished {
    explicit constexpr Finished() = default;
};
inline constexpr Finished finished{};

template <class T>
class Step;

namespace detail {
template <class M>
class TaskState;
template <class S>
struct IsStep : std::false_type {};
template <class T>
struct IsStep<Step<T>> : std::true_type {};
}  // namespace detail

// What resume() returns: "wait for this future" or "finished with this value".
template <class T>
class [[nodiscard]] Step {
public:
    using value_type = T;

    // Wait for `awaited`: resume() is called again once it is complete.
    template <class U>
    Step(const Future<U>& awaited) : awaited_(detail::Access::base(awaited)) {}  // NOLINT: implicit on purpose

    // Finish with `value`.
    template <class V = T>
        requires(!std::is_void_v<T> && !is_future_v<V> && !std::is_same_v<std::remove_cvref_t<V>, Step> &&
                 std::is_constructible_v<T, V &&>)
    Step(V&& value) : value_(std::in_place, std::forward<V>(value)) {}  // NOLINT: implicit on purpose

    // Finish (Step<void>).
    Step(Finished)  // NOLINT: implicit on purpose
        requires std::is_void_v<T>
        : value_(std::in_place) {}

private:
    template <class>
    friend class detail::TaskState;
    detail::Ref<detail::StateBase> awaited_;
    std::optional<detail::Stored<T>> value_;
};

// A class the task protocol can run.
template <class M>
concept Machine = std::is_object_v<M> && std::move_constructible<M> && requires(M& m) {
    { m.resume() };
} && detail::IsStep<decltype(std::declval<M&>().resume())>::value;

// A machine that names its current state for futures::all_tasks() and
// Scheduler::live() (optional).
template <class M>
concept NamesItsState = requires(const M& m) {
    { m.state_name() } -> std::convertible_to<std::string_view>;
};

template <Machine M>
using machine_result_t = typename decltype(std::declval<M&>().resume())::value_type;

namespace detail {

// The task: a Future<T>'s state that owns the machine and resumes it. Its link
// goes to the future the machine awaits, one after another.
template <class M>
class TaskState final : public WaitingState<machine_result_t<M>> {
    using T = machine_result_t<M>;

public:
    TaskState(reactor::Scheduler& sched, std::source_location where, M&& machine)
        : WaitingState<T>(sched, where, false) {
        std::construct_at(&machine_.value, std::move(machine));
        this->has_machine_ = true;
    }
    ~TaskState() override {
        reset_machine();
        this->leave_registry();
    }

    void start() {
        this->join_registry();
        this->scheduler().call_soon([self = Ref<TaskState>(this)] { self->step(); }, this->origin());
    }

    std::string_view kind() const noexcept override { return "Task"; }

    // ---- what all_tasks() shows (the loop's registry) ----
    bool is_task() const noexcept override { return true; }
    bool task_started() const noexcept override { return this->started_; }
    std::string_view task_machine_state() const override {
        if constexpr (NamesItsState<M>) {
            if (this->has_machine_) return machine_.value.state_name();
        }
        return {};
    }
    bool task_names_its_state() const noexcept override { return NamesItsState<M>; }
    StateBase* task_awaited() const noexcept override { return this->link_.upstream(); }

private:
    // The awaited future completed: resume.
    void on_awaited(StateBase&) { step(); }

    void step() {
        if (!this->pending()) return;
        if (this->must_cancel_ && !this->started_) {
            reset_machine();
            this->finish_cancelled();
            return;
        }
        this->started_ = true;
        std::optional<Step<T>> next;
        try {
            next.emplace(machine_.value.resume());
        } catch (...) {
            reset_machine();
            this->finish_exception(std::current_exception());  // CancelledError: cancelled
            return;
        }
        if (next->value_) {
            reset_machine();
            if (this->must_cancel_) {
                this->finish_cancelled();
            } else {
                this->finish_value(std::move(*next->value_));
            }
            return;
        }
        await(std::move(next->awaited_));
    }

    void await(Ref<StateBase> f) {
        const char* problem = nullptr;
        if (!f) {
            problem = "resume() returned an empty Future: return the future to wait on, or the final value";
        } else if (f.get() == this) {
            problem = "a task cannot wait on its own join handle";
        } else if (&f->scheduler() != &this->scheduler()) {
            problem = "a task can only wait on futures of its own Scheduler";
        }
        if (problem) {
            reset_machine();
            this->finish_failed(std::make_exception_ptr(InvalidStateError(problem)));
            return;
        }
        this->link_.template connect<&TaskState::on_awaited>(*f);
        if (this->must_cancel_ && f->cancel()) this->must_cancel_ = false;
    }

    // A request, not a verdict: the awaited future is cancelled (the link stays:
    // its wake-up resumes the machine, which decides).
    Ref<StateBase> cancel_step(bool& accepted) override {
        accepted = this->pending();
        if (!accepted) return {};
        StateBase* awaited = this->link_.upstream();
        if (awaited && awaited->pending()) return Ref<StateBase>(awaited);  // it will be cancelled, and we resumed
        this->must_cancel_ = true;
        return {};
    }

    void destroy_payload() noexcept override { reset_machine(); }
    void reset_machine() noexcept {
        if (this->has_machine_) {
            this->has_machine_ = false;
            std::destroy_at(&machine_.value);
        }
    }

    // The machine in raw storage, its flags (has_machine_, started_,
    // must_cancel_) StateBase's: not a std::optional with a padded flag of
    // its own, nor flags after the machine, which would round the task up
    // by a word. A task lives as long as its conversation, an idle one
    // included.
    ValueSlot<M> machine_;
};

// Runs `sched` one iteration at a time until `state` is complete.
REACTOR_API void drive(reactor::Scheduler& sched, StateBase& state);

}  // namespace detail

// Starts `machine` as a task on `sched` (its first resume() runs from the loop,
// never inside spawn) and returns its join handle. Discarding the handle makes
// it a background task: it still runs, and an error it ends with is reported.
template <class M>
    requires Machine<std::decay_t<M>>
Future<machine_result_t<std::decay_t<M>>> spawn(reactor::Scheduler& sched, M&& machine,
                                                std::source_location where = std::source_location::current()) {
    using D = std::decay_t<M>;
    return detail::launch<detail::TaskState<D>>(sched, where, D(std::forward<M>(machine))).start();
}

// Runs the loop until `fut` is complete, then returns its value or rethrows its
// error (CancelledError if cancelled). Other callbacks and tasks run meanwhile.
// Work still queued when `fut` completes (callbacks due, continuations of
// other futures, tasks, timers) is neither run nor dropped: it stays
// scheduled, and runs if the loop runs again (sched.run(), another
// run_until_complete); if the Scheduler is destroyed first it is destroyed
// unrun, and a failed future it held whose error nobody read is then
// reported as "exception was never retrieved". To wait for a group of work
// with its queued continuations, wait for a futures::Scope's close()
// (futures/scope.hpp), which settles one loop turn after its last child; a
// StreamServer's wait_closed() and serve_until() wait for its handlers so.
// Throws InvalidStateError if the loop runs out of work first (nothing can
// complete `fut` any more). Loop thread only, never from inside a callback.
template <class T>
T run_until_complete(reactor::Scheduler& sched, Future<T> fut) {
    detail::State<T>& state = detail::Access::state(fut);
    detail::drive(sched, state);
    state.check_result();
    if constexpr (!std::is_void_v<T>) return state.take_value();  // moved if `fut` is the only handle
}

// spawn() then run_until_complete(): runs a machine as the program's main task.
template <class M>
    requires Machine<std::decay_t<M>>
machine_result_t<std::decay_t<M>> run_until_complete(reactor::Scheduler& sched, M&& machine,
                                                     std::source_location where = std::source_location::current()) {
    return run_until_complete(sched, spawn(sched, std::forward<M>(machine), where));
}

}  // namespace futures
