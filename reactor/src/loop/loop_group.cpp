// SPDX-License-Identifier: MIT
// LoopGroup: the threads that run a group's Schedulers, and how each loop
// ends (see the life of a group in loop_group.hpp).
#include "reactor/loop_group.hpp"

#include <pthread.h>
#include <sched.h>

#include <cerrno>
#include <exception>
#include <stdexcept>
#include <string>
#include <system_error>
#include <utility>

#include <fmt/format.h>

namespace reactor {
namespace {

// The loop the calling thread runs, for current_index(): set by run_loop for
// the length of the loop's life on its thread.
struct CurrentLoop {
    const LoopGroup* group = nullptr;
    std::size_t index = 0;
};
thread_local CurrentLoop t_current;

// The CPUs this process may run on, in increasing order.
std::vector<int> allowed_cpus() {
    std::vector<int> cpus;
    cpu_set_t set;
    CPU_ZERO(&set);
    if (::sched_getaffinity(0, sizeof set, &set) != 0) return cpus;
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
        if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
    return cpus;
}

void report(Scheduler& sched, std::string message, std::exception_ptr error = nullptr) noexcept {
    try {
        ErrorContext ctx;
        ctx.message = std::move(message);
        ctx.exception = std::move(error);
        sched.call_exception_handler(ctx);
    } catch (...) {
        // Only the message's allocation can throw: the loop carries on.
    }
}

}  // namespace

std::size_t LoopGroup::available_cpus() noexcept {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (::sched_getaffinity(0, sizeof set, &set) == 0) {
        const int n = CPU_COUNT(&set);
        if (n > 0) return static_cast<std::size_t>(n);
    }
    const unsigned hw = std::thread::hardware_concurrency();
    return hw != 0 ? hw : 1;
}

LoopGroup::LoopGroup() : LoopGroup(Options{}) {}

LoopGroup::LoopGroup(Options options) : options_(std::move(options)) {
    if (options_.drain < Duration::zero()) throw std::invalid_argument("reactor: LoopGroup drain time is negative");
    const std::size_t n = options_.loops != 0 ? options_.loops : available_cpus();
    loops_.reserve(n);
    for (std::size_t i = 0; i < n; ++i)
        loops_.push_back(std::make_unique<Scheduler>(options_.loop_options ? options_.loop_options(i)
                                                                           : SchedulerOptions{}));
}

// The threads end before any Scheduler goes; then the Schedulers go in
// reverse order, on this thread: what was posted to a loop after it ended is
// destroyed here, unrun.
LoopGroup::~LoopGroup() {
    stop();
    while (!loops_.empty()) loops_.pop_back();
}

Scheduler& LoopGroup::loop(std::size_t index) const {
    if (index >= loops_.size())
        throw std::out_of_range(fmt::format("reactor: LoopGroup has {} loops, no loop {}", loops_.size(), index));
    return *loops_[index];
}

std::optional<std::size_t> LoopGroup::current_index() const noexcept {
    if (t_current.group != this) return std::nullopt;
    return t_current.index;
}

void LoopGroup::refuse_from_own_loop(const char* member) const {
    if (current_index())
        throw std::logic_error(fmt::format("reactor: LoopGroup::{} called from loop {} of the same group (it would "
                                           "wait for itself; call request_stop() there)",
                                           member, *current_index()));
}

void LoopGroup::start() {
    refuse_from_own_loop("start");
    if (started_) throw std::logic_error("reactor: LoopGroup started twice");
    started_ = true;
    threads_.reserve(loops_.size() - first_threaded_);
    try {
        for (std::size_t i = first_threaded_; i < loops_.size(); ++i)
            threads_.emplace_back([this, i] { run_loop(i); });
    } catch (const std::system_error& e) {
        const std::size_t failed = first_threaded_ + threads_.size();
        stop();  // the loops already started
        // std::thread says only "Resource temporarily unavailable": say which loop could not start.
        throw std::system_error(e.code(), fmt::format("reactor: LoopGroup: cannot start the thread of loop {} ({} loops)",
                                                      failed, loops_.size()));
    } catch (...) {
        stop();
        throw;
    }
}

void LoopGroup::run() {
    refuse_from_own_loop("run");
    if (started_) throw std::logic_error("reactor: LoopGroup::run after start (or a second run)");
    first_threaded_ = 1;
    start();
    std::exception_ptr failure;
    run_loop(0, &failure);
    // Loop 0 ended: by request_stop(), or on an exception; the group ends
    // with it, and the exception goes to the caller, as Scheduler::run()'s.
    stop();
    if (failure) std::rethrow_exception(failure);
}

// Only the first request posts: a later one (stop() after a loop asked)
// must not cut short a drain under way.
void LoopGroup::request_stop() {
    if (stop_requested_.exchange(true)) return;
    for (const auto& loop : loops_) {
        Scheduler* s = loop.get();
        // A loop that already ended refuses the post: it is stopped anyway.
        s->try_call_soon_threadsafe([s] { s->stop(); });
    }
}

void LoopGroup::stop() {
    refuse_from_own_loop("stop");
    request_stop();
    join_threads();
}

void LoopGroup::join_threads() noexcept {
    for (std::thread& t : threads_)
        if (t.joinable()) t.join();
}

void LoopGroup::pin_current_thread(std::size_t index) noexcept {
    Scheduler& s = *loops_[index];
    const std::vector<int> cpus = allowed_cpus();
    if (cpus.empty()) {
        report(s, fmt::format("reactor: loop {} of the group runs unpinned: sched_getaffinity failed", index));
        return;
    }
    const int cpu = cpus[index % cpus.size()];
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (const int error = ::pthread_setaffinity_np(::pthread_self(), sizeof set, &set); error != 0) {
        report(s, fmt::format("reactor: loop {} of the group runs unpinned: pthread_setaffinity_np(CPU {}): {}",
                              index, cpu, std::system_category().message(error)));
    }
}

// A loop's life on its thread. Nothing escapes: an exception out of the run
// is reported on the loop's own handler and the loop ends as if stopped
// (run()'s loop 0: kept in `failure` for run() to throw).
void LoopGroup::run_loop(std::size_t index, std::exception_ptr* failure) noexcept {
    Scheduler& s = *loops_[index];
    t_current = CurrentLoop{this, index};
    if (options_.pin_threads) pin_current_thread(index);
    try {
        s.run_forever();
        if (options_.drain > Duration::zero()) {
            s.run_for(options_.drain);
        } else {
            s.run_for(Duration::zero());
        }
    } catch (...) {
        if (failure) {
            *failure = std::current_exception();
        } else {
            report(s, fmt::format("reactor: loop {} of the group ended on an exception", index),
                   std::current_exception());
        }
    }
    s.refuse_posts();
    if (failure && *failure) {
        // run() throws it. The selector is broken: another iteration or a
        // close() would fail again. What is alive is left to ~LoopGroup, as
        // a Scheduler whose run() threw is left to its destructor.
        s.finish();
        t_current = CurrentLoop{};
        return;
    }
    // A post accepted after the drain's last look and before the refusal
    // (another loop, or a thread, posting while this one ended) was promised
    // a run: it gets it now, one iteration, before close() would drop it.
    try {
        s.run_for(Duration::zero());
    } catch (...) {
        report(s, fmt::format("reactor: loop {} of the group ended on an exception", index), std::current_exception());
    }
    try {
        s.close();
    } catch (...) {
        report(s, fmt::format("reactor: loop {} of the group failed to close", index), std::current_exception());
    }
    // Last: what was sent home after close() (ForeignPtr) dies here, on this
    // thread; from now on a ForeignPtr of this loop dies where it is dropped.
    s.finish();
    t_current = CurrentLoop{};
}

}  // namespace reactor
