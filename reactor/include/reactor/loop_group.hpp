// SPDX-License-Identifier: MIT
// reactor::LoopGroup: N Schedulers, each run by a thread of its own (Asio's
// io_context per thread, muduo's EventLoopThreadPool, Netty's EventLoopGroup,
// Seastar's shards). The group owns the Schedulers and the threads; each
// Scheduler stays what it always is, one loop driven by one thread with no
// lock on its hot path. Nothing is shared between the loops: every object
// (connection, timer, future) belongs to the one loop it was made on, and
// other loops reach it only by posting to that loop (call_soon_threadsafe,
// futures::submit_to). docs/cores.md has the rules.
//
// Life of a group, and of each of its loops:
//   constructed  the Schedulers exist; set their exception handlers, open
//                listeners, schedule work on them (from the constructing
//                thread: no loop runs yet)
//   start()      one thread per loop, each in run_forever()
//                (run() instead: the calling thread runs loop 0)
//   request_stop()  every loop is posted a stop(); the call does not wait
//   each loop's end, on its own thread: run_forever() returns; the loop runs
//                what is ready for up to Options::drain (run_for); then it
//                refuses further posts (Scheduler::refuse_posts, so that
//                futures::submit_to fails at once instead of waiting) and is
//                closed (Scheduler::close: connections aborted and their
//                close callbacks run, tasks cancelled, posts dropped unrun);
//                last, what was sent home since (Scheduler::try_send_home: a
//                dropped ForeignPtr) is destroyed and the loop is finished
//                (from then on a ForeignPtr of it dies where it is dropped),
//                all on the loop's own thread
//   stop()       request_stop(), then every thread is joined
//   ~LoopGroup   stop(), then the Schedulers are destroyed, last first
// A loop whose run_forever() throws (a selector that failed for good, see
// Scheduler::kWaitFailureLimit) reports it through that loop's exception
// handler, naming the loop, and ends as above (but loop 0 under run(): run()
// throws it once the group has ended); the other loops carry on
// until the group is stopped. Nothing escapes a loop's thread, so nothing
// calls std::terminate. A callback that blocks a loop holds up that loop
// only: debug mode (Scheduler::Options::debug) reports it as a slow callback
// on that loop's handler; stop() waits for it to return.
#pragma once

#include <atomic>
#include <cstddef>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "reactor/clock.hpp"
#include "reactor/export.hpp"
#include "reactor/scheduler.hpp"
#include "reactor/scheduler_options.hpp"

namespace reactor {

struct LoopGroupOptions {
    // How many loops; 0: one per CPU the process may run on
    // (LoopGroup::available_cpus()).
    std::size_t loops = 0;
    // Loop `index`'s Scheduler options; empty: SchedulerOptions{} for each.
    std::function<SchedulerOptions(std::size_t index)> loop_options;
    // Pin loop i's thread to the i-th CPU the process may run on (modulo
    // their number). A CPU that cannot be set is reported through that
    // loop's exception handler and the loop runs unpinned.
    bool pin_threads = false;
    // How long each loop may keep running what is left, once stopped,
    // before it is closed: run_for(drain), which ends at once when the loop
    // has nothing left. Zero (the default) runs what is ready at that moment,
    // once, then closes.
    Duration drain{};
};

class REACTOR_API LoopGroup {
public:
    using Options = LoopGroupOptions;

    // Makes the Schedulers; starts no thread. Throws what a Scheduler's
    // constructor throws (std::system_error, std::invalid_argument).
    LoopGroup();
    explicit LoopGroup(Options options);
    // stop(), then destroys the Schedulers. Never from one of the group's
    // own loops (its thread cannot join itself).
    ~LoopGroup();
    LoopGroup(const LoopGroup&) = delete;
    LoopGroup& operator=(const LoopGroup&) = delete;

    // Any thread. The Schedulers live as long as the group.
    std::size_t size() const noexcept { return loops_.size(); }
    // Throws std::out_of_range for an index >= size().
    Scheduler& loop(std::size_t index) const;

    // Starts one thread per loop. Once (std::logic_error the second time, or
    // after run()). If a thread cannot be started (pthread_create: EAGAIN),
    // the threads already started are stopped and joined, and a
    // std::system_error with that errno is thrown, naming the loop:
    // "reactor: LoopGroup: cannot start the thread of loop 2 (4 loops)".
    // Not from a loop of the group.
    void start();
    // The calling thread runs loop 0 (the others get threads of their own)
    // until the group is asked to stop; then, as stop(), waits for the
    // others. Loop 0 ending early (an exception out of its run) stops the
    // whole group, and run() then throws that exception, as Scheduler::run()
    // would (not reported on loop 0's handler: the caller has it). Once, instead of start(). Every other loop's thread is
    // started before loop 0 runs anything: what is scheduled on loop 0
    // beforehand (a server's "listening on" line) runs only if they all
    // started; if one cannot, run() throws as start() does.
    void run();
    // Any thread, also a callback running on a loop of the group, and more
    // than once: asks every loop to stop (posts it a stop()); only the first
    // call posts, so a later one does not cut short a drain. Does not wait.
    void request_stop();
    // request_stop(), then waits for every loop thread to end. Any thread
    // but a loop of the group (std::logic_error: it would wait for itself).
    // Harmless before start() and after an earlier stop().
    void stop();

    // Whether start() or run() was called (the loops may be running).
    // Owning thread.
    bool started() const noexcept { return started_; }

    // The index of the group's loop the calling thread runs, if any.
    std::optional<std::size_t> current_index() const noexcept;

    // How many CPUs this process may run on (sched_getaffinity); at least 1.
    static std::size_t available_cpus() noexcept;

private:
    // `failure` set: an exception out of the run is kept there (run()'s
    // loop 0, rethrown by run()) instead of reported.
    void run_loop(std::size_t index, std::exception_ptr* failure = nullptr) noexcept;
    void pin_current_thread(std::size_t index) noexcept;
    void join_threads() noexcept;
    void refuse_from_own_loop(const char* member) const;

    Options options_;
    std::vector<std::unique_ptr<Scheduler>> loops_;
    std::vector<std::thread> threads_;  // threads_[i] runs loop i + first_threaded_
    std::size_t first_threaded_ = 0;    // 1 under run(): loop 0 is the caller's
    bool started_ = false;
    std::atomic<bool> stop_requested_{false};
};

}  // namespace reactor
