// SPDX-License-Identifier: MIT
// An fd owner's timer (Scheduler::set_owner_timer), checked directly against
// the Scheduler with a minimal FdOwner of the test's own. The loop keeps no
// slot and no time for it: only heap entries named by the fd and its
// ownership, and the owner answers its time from owner_timer_due. A new call
// replaces the pending timer and leaves the replaced entry in the heap. These
// cases check that such leftovers never fire (not for the owner, whether it
// moved its timer earlier or later, and not for a later owner of the same fd
// number), that they are purged instead of piling up, and that a pending
// owner timer is work that keeps run() going. Connections used to be what
// covered this; they no longer use owner timers. On every backend, on a
// virtual clock: no case depends on real time.
#include <unistd.h>

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <system_error>
#include <vector>

#include <reactor/fd_owner.hpp>
#include <reactor/scheduler.hpp>

#include "support/fds.hpp"
#include "support/virtual_time.hpp"

using namespace std::chrono_literals;
using reactor::Duration;
using reactor::TimePoint;
using reactor::testing::VirtualLoop;
using reactor_test::backend_under_test;
using reactor_test::Fd;
using reactor_test::SocketPair;

namespace {

// The smallest owner that keeps a timer: it owns `fd` from construction until
// release() (or destruction), keeps the time it last gave the loop, and
// records when its timer ran, on the loop's clock.
class TimerOwner final : public reactor::FdOwner {
public:
    TimerOwner(reactor::Scheduler& sched, int fd) : sched_(sched), fd_(fd) { sched_.set_fd_owner(fd_, *this); }
    TimerOwner(const TimerOwner&) = delete;
    TimerOwner& operator=(const TimerOwner&) = delete;
    // The owner's promise: forget_fd before the fd closes or the owner goes.
    ~TimerOwner() { release(); }

    // Sets (or replaces) the timer. The due time is stored only after the
    // call: while set_owner_timer runs, the loop may purge, and must still
    // hear the old time to tell the entry being replaced (docs of
    // Scheduler::set_owner_timer; Connection did the same).
    void arm(TimePoint due) {
        sched_.set_owner_timer(fd_, due);
        due_ = due;
    }
    // Ends the ownership, and with it any pending timer. Once only: the
    // number may have a new owner by the time this owner is destroyed.
    void release() noexcept {
        if (owning_) sched_.forget_fd(fd_);
        owning_ = false;
    }

    int fd() const noexcept { return fd_; }
    const std::vector<TimePoint>& fired_at() const noexcept { return fired_at_; }

    void on_owner_timer(int fd) override {
        BOOST_TEST(fd == fd_);
        fired_at_.push_back(sched_.now());
    }
    TimePoint owner_timer_due(int /*fd*/) const noexcept override { return due_; }
    // Nothing here is watched, so the loop never has a reason to call this.
    void on_unwatchable(int fd, std::error_code error) override {
        BOOST_ERROR("the loop could not watch fd " << fd << ": " << error.message());
    }

private:
    reactor::Scheduler& sched_;
    int fd_;
    bool owning_ = true;
    TimePoint due_ = TimePoint::max();  // what the base class answers with no timer set
    std::vector<TimePoint> fired_at_;
};

template <class Pred>
void run_until(VirtualLoop& loop, Pred done) {
    for (int i = 0; i < 100000 && !done(); ++i) loop.sched.run_once();
    BOOST_REQUIRE(done());
}

// A socketpair end of the test's own, at a number the test may reuse.
Fd owned_copy_of(const Fd& end) {
    Fd copy(::dup(end.get()));
    BOOST_REQUIRE(copy.get() >= 0);
    return copy;
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_timer_moved_earlier_and_later_fires_only_at_its_last_due_time) {
    VirtualLoop loop(backend_under_test());
    SocketPair pair;
    Fd fd = owned_copy_of(pair.a);
    TimerOwner owner(loop.sched, fd);
    const auto start = loop.clock.now();
    owner.arm(start + 100s);
    auto move_at = [&](Duration when, Duration due) {
        loop.sched.call_at(start + when, [&owner, start, due] { owner.arm(start + due); });
    };
    // Every move leaves the entry it replaces in the heap: each must be
    // skipped when it comes up because the owner now answers another time.
    move_at(1s, 51s);   // earlier: the 100 s entry is left behind, later than the timer
    move_at(2s, 200s);  // later: the 51 s entry is left behind, earlier than the timer
    move_at(3s, 33s);   // earlier again
    move_at(4s, 24s);   // earlier again: the 24 s entry is the earliest of all
    move_at(5s, 45s);   // later: the timer must pass 24 s and 33 s by
    move_at(6s, 45s);   // the same time again: two entries at 45 s, one timer
    std::size_t pending_timers = 0;
    std::size_t heap_entries = 0;
    bool pending = false;
    loop.sched.call_at(start + 7s, [&] {
        pending_timers = loop.sched.timer_count();
        heap_entries = loop.sched.timer_entries();
        pending = loop.sched.owner_timer_pending(owner.fd());
    });
    const std::uint64_t fired_before = loop.sched.stats().timers_fired;
    run_until(loop, [&] { return !owner.fired_at().empty(); });
    BOOST_REQUIRE(owner.fired_at().size() == 1u);
    BOOST_TEST((owner.fired_at().front() - start == 45s));
    // One timer, however many entries it left behind: all seven are still
    // there (skipped when they come up, too few to be worth a purge).
    BOOST_TEST(pending_timers == 1u);
    BOOST_TEST(heap_entries == 7u);
    BOOST_TEST(pending);
    BOOST_TEST(!loop.sched.owner_timer_pending(owner.fd()));  // it ran: nothing pending now
    run_until(loop, [&] { return loop.sched.empty(); });
    // It ran once, at 45 s, and no leftover ran it again afterwards (the
    // second 45 s entry, or those at 51, 100 and 200 s).
    BOOST_TEST(owner.fired_at().size() == 1u);
    // The test's seven timers and the owner's one: the six replaced entries
    // fired nothing.
    BOOST_TEST(loop.sched.stats().timers_fired - fired_before == 8u);
}

BOOST_AUTO_TEST_CASE(a_forgotten_fds_timer_does_not_fire_for_the_next_owner_of_its_number) {
    VirtualLoop loop(backend_under_test());
    SocketPair first_pair;
    SocketPair second_pair;
    Fd fd = owned_copy_of(first_pair.a);
    const int number = fd.get();
    TimerOwner first(loop.sched, number);
    std::optional<TimerOwner> second;
    const auto start = loop.clock.now();
    first.arm(start + 10s);
    loop.sched.call_at(start + 1s, [&] { first.arm(start + 6s); });  // the 10 s entry is replaced
    bool pending_after_forget = true;
    std::size_t timers_after_forget = 1;
    loop.sched.call_at(start + 2s, [&] {
        // Forgotten and closed, with entries at 6 s (its timer) and 10 s
        // left in the heap.
        first.release();
        pending_after_forget = loop.sched.owner_timer_pending(number);
        timers_after_forget = loop.sched.timer_count();
        // The number reused at once, as the next socket would take it, by a
        // new owner with a timer due at 10 s: a time one of the first
        // owner's entries also has. Only the ownership tells them apart.
        fd.become(second_pair.a);
        second.emplace(loop.sched, number);
        second->arm(start + 10s);
    });
    const std::uint64_t fired_before = loop.sched.stats().timers_fired;
    run_until(loop, [&] { return second && !second->fired_at().empty(); });
    run_until(loop, [&] { return loop.sched.empty(); });
    BOOST_TEST(!pending_after_forget);
    BOOST_TEST(timers_after_forget == 0u);
    // The first owner's timer ended with its ownership: it never ran.
    BOOST_TEST(first.fired_at().empty());
    // The second ran once, at its own time: not at 6 s for the first
    // owner's timer, and not twice at 10 s.
    BOOST_REQUIRE(second->fired_at().size() == 1u);
    BOOST_TEST((second->fired_at().front() - start == 10s));
    // The test's two and the second owner's one: neither of the first
    // owner's entries fired, not even the one due with the second's.
    BOOST_TEST(loop.sched.stats().timers_fired - fired_before == 3u);
}

BOOST_AUTO_TEST_CASE(moving_the_timer_earlier_many_times_leaves_a_bounded_heap) {
    VirtualLoop loop(backend_under_test());
    SocketPair pair;
    Fd fd = owned_copy_of(pair.a);
    TimerOwner owner(loop.sched, fd);
    const auto start = loop.clock.now();
    constexpr int kMoves = 10'000;
    owner.arm(start + 1'000'000s);
    std::size_t most_entries = loop.sched.timer_entries();
    for (int i = 1; i <= kMoves; ++i) {
        owner.arm(start + std::chrono::seconds(1'000'000 - i));  // earlier every time
        most_entries = std::max(most_entries, loop.sched.timer_entries());
    }
    BOOST_TEST(loop.sched.timer_count() == 1u);
    // The replaced entries are purged as cancelled timers are, once they
    // outnumber the live ones: far fewer than the moves stay in the heap.
    BOOST_TEST(most_entries < 300u);
    run_until(loop, [&] { return !owner.fired_at().empty(); });
    // The purges kept the timer's own entry: it ran, once, at the last time.
    BOOST_REQUIRE(owner.fired_at().size() == 1u);
    BOOST_TEST((owner.fired_at().front() - start == std::chrono::seconds(1'000'000 - kMoves)));
    run_until(loop, [&] { return loop.sched.empty(); });
    BOOST_TEST(owner.fired_at().size() == 1u);
}

BOOST_AUTO_TEST_CASE(a_pending_owner_timer_keeps_run_going) {
    VirtualLoop loop(backend_under_test());
    SocketPair pair;
    Fd fd = owned_copy_of(pair.a);
    TimerOwner owner(loop.sched, fd);
    const auto start = loop.clock.now();
    owner.arm(start + 30s);
    // Nothing watched and no timer of the test's: the owner's timer is the
    // loop's only work.
    BOOST_TEST(loop.sched.waiter_count() == 0u);
    BOOST_TEST(loop.sched.timer_count() == 1u);
    BOOST_TEST(loop.sched.owner_timer_pending(fd));
    BOOST_TEST(!loop.sched.empty());
    loop.sched.run();  // returns only once the timer has run
    BOOST_REQUIRE(owner.fired_at().size() == 1u);
    BOOST_TEST((owner.fired_at().front() - start == 30s));
    BOOST_TEST((loop.clock.now() - start == 30s));
    BOOST_TEST(!loop.sched.owner_timer_pending(fd));
    BOOST_TEST(loop.sched.empty());
}
