// SPDX-License-Identifier: MIT
// Debug mode (Options::debug, REACTOR_DEBUG=1): its configuration, and the
// three reports it makes through the exception handler, one line each:
// slow callbacks, late timers, loop-thread-only members called from another
// thread. The measuring itself is in iteration.cpp (run_batch<true>,
// move_due_timers, poll_io); what is measured is read back by stats()
// (stats.cpp). Loop thread only, except check_loop_thread/off_loop_thread,
// which exist to be called from the wrong thread.
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>

#include <fmt/format.h>

#include "reactor/scheduler.hpp"

namespace reactor {
namespace {

// Set to anything but "" or "0", as PYTHONASYNCIODEBUG is.
bool debug_from_environment() {
    const char* value = std::getenv("REACTOR_DEBUG");
    return value != nullptr && *value != '\0' && std::strcmp(value, "0") != 0;
}

double ms(Duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

std::string refusal(const char* member) {
    return fmt::format(
        "{} called from a thread other than the one running the loop: refused (loop thread only; other "
        "threads use call_soon_threadsafe)",
        member);
}

// The same for an object of the loop: `made_at` is the line that made it.
std::string owner_refusal(const char* member, const std::source_location* made_at, const char* what) {
    if (made_at == nullptr) {
        return fmt::format(
            "{} called from a thread other than the one running its loop: refused (loop thread only; other "
            "threads use call_soon_threadsafe)",
            member);
    }
    return fmt::format(
        "{} called from a thread other than the one running its loop ({} made at {}:{}): refused (loop thread "
        "only; other threads use call_soon_threadsafe)",
        member, what != nullptr ? what : "object", made_at->file_name(), made_at->line());
}

}  // namespace

void Scheduler::configure_debug(const Options& options) {
    if (options.slow_callback_threshold < Duration::zero()) {
        throw std::invalid_argument("reactor: Options::slow_callback_threshold must not be negative");
    }
    if (options.timer_lateness_threshold < Duration::zero()) {
        throw std::invalid_argument("reactor: Options::timer_lateness_threshold must not be negative");
    }
    debug_.on = options.debug || debug_from_environment();
    debug_.slow_threshold = options.slow_callback_threshold;
    debug_.late_threshold = options.timer_lateness_threshold;
}

// From run_batch<true>, in the run phase: the handler runs like a callback.
void Scheduler::report_slow_callback(Duration took, const std::source_location& where) {
    ++stats_.slow_callbacks;
    ErrorContext ctx;
    ctx.message = fmt::format("slow callback: it ran for {:.1f} ms (threshold {:.1f} ms)", ms(took),
                              ms(debug_.slow_threshold));
    ctx.origin = where;
    ctx.origin_known = true;
    call_exception_handler(ctx);
}

// From move_due_timers. A stall makes every timer due during it late at
// once: one line per iteration, naming the latest, not one per timer. The
// line is queued like drop_closed_fd's report, since the phases before the
// run phase never run user code (the handler is user code); it runs after
// this iteration's timers.
void Scheduler::report_late_timers(Duration latest, std::size_t count, const std::source_location& where) {
    stats_.late_timers += count;
    ErrorContext ctx;
    ctx.message = fmt::format("late timer: it fired {:.1f} ms after its deadline (threshold {:.1f} ms; loop lag)",
                              ms(latest), ms(debug_.late_threshold));
    if (count > 1) ctx.message += fmt::format(", the latest of {} late timers in this iteration", count);
    ctx.origin = where;
    ctx.origin_known = true;
    call_soon([this, ctx = std::move(ctx)] { call_exception_handler(ctx); });
}

// Any thread. Only a run under way has a loop thread: before and between
// runs the Scheduler may be handed from one thread to another (with the
// program's own synchronisation), as asyncio allows. Off the loop's thread
// the call is counted and reported on the loop's handler, naming `origin`:
// the report goes to the loop thread through call_soon_threadsafe, the one
// member that is safe here; the handler is never called on the wrong
// thread. `describe` makes the message, only then.
template <class Describe>
bool Scheduler::report_off_thread(Describe describe, const std::source_location* origin) noexcept {
    const std::thread::id owner = debug_.loop_thread.load(std::memory_order_acquire);
    if (owner == std::thread::id{} || owner == std::this_thread::get_id()) return false;
    debug_.wrong_thread_calls.fetch_add(1, std::memory_order_relaxed);
    try {
        ErrorContext ctx;
        ctx.message = describe();
        if (origin != nullptr) {
            ctx.origin = *origin;
            ctx.origin_known = true;
        }
        call_soon_threadsafe([this, ctx = std::move(ctx)] { call_exception_handler(ctx); });
    } catch (...) {
        // Out of memory while reporting: the call is still refused.
    }
    return true;
}

// The Scheduler's own loop-thread-only members.
bool Scheduler::off_loop_thread(const char* member, const std::source_location* where) noexcept {
    return report_off_thread([member] { return refusal(member); }, where);
}

// The loop's objects (check_owner_thread, off_owner_thread): the report
// names the caller's line if known, else the object's.
bool Scheduler::report_off_owner_thread(const char* member, const std::source_location* where,
                                        const std::source_location* made_at, const char* what) noexcept {
    return report_off_thread([&] { return owner_refusal(member, made_at, what); },
                             where != nullptr ? where : made_at);
}

void Scheduler::refuse_off_owner_thread(const char* member, const std::source_location* where,
                                        const std::source_location* made_at, const char* what) {
    if (report_off_owner_thread(member, where, made_at, what))
        throw std::logic_error(fmt::format("reactor: {}", owner_refusal(member, made_at, what)));
}

void Scheduler::check_loop_thread(const char* member, const std::source_location* where) {
    if (off_loop_thread(member, where)) throw std::logic_error(fmt::format("reactor: {}", refusal(member)));
}

}  // namespace reactor
