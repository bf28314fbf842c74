// SPDX-License-Identifier: MIT
// reactor::ForeignPtr: the object is destroyed on its owner loop's thread,
// exactly once: in place on that thread, sent there from any other (even
// once the owner refuses posts: a LoopGroup loop still runs close callbacks
// after that), and on the current thread once the owner has finished (a
// LoopGroup loop past its close(): its thread runs nothing more). With futures::submit_to: made on loop 1, carried to the caller's
// loop, destroyed on loop 1. Real threads (a LoopGroup); they meet through
// futures, latches and join, never timing. CTest runs the suite once per
// selector backend; CI also runs it under TSan, and ASan checks for leaks.
#include <boost/test/unit_test.hpp>

#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <latch>
#include <memory>
#include <stdexcept>
#include <thread>
#include <utility>

#include <futures/future.hpp>
#include <futures/run.hpp>
#include <futures/submit_to.hpp>
#include <reactor/foreign_ptr.hpp>
#include <reactor/loop_group.hpp>
#include <reactor/net/connection.hpp>
#include <reactor/scheduler.hpp>

#include "support/backends.hpp"
#include "support/fds.hpp"

namespace {

using namespace std::chrono_literals;
using futures::Future;
using reactor::ForeignPtr;
using reactor::LoopGroup;
using reactor::LoopGroupOptions;
using reactor::Scheduler;
using reactor_test::backend_under_test;
using reactor_test::on;

constexpr auto kGuard = 60s;

// Where and how often the probes died.
struct Deaths {
    std::atomic<int> count{0};
    std::atomic<std::thread::id> thread{};
    std::latch* latch = nullptr;  // counted down by each death, if set
};

struct Probe {
    explicit Probe(Deaths& d, int v = 0) : deaths(&d), value(v) {}
    Probe(const Probe&) = delete;
    Probe& operator=(const Probe&) = delete;
    ~Probe() {
        deaths->thread.store(std::this_thread::get_id());
        deaths->count.fetch_add(1);
        if (deaths->latch != nullptr) deaths->latch->count_down();
    }
    Deaths* deaths;
    int value;
};

LoopGroupOptions loops(std::size_t n) {
    LoopGroupOptions o;
    o.loops = n;
    o.loop_options = [](std::size_t) { return on(backend_under_test()); };
    return o;
}

struct Fixture {
    Scheduler caller{on(backend_under_test())};
    LoopGroup group{loops(2)};
    Fixture() { group.start(); }
};

// The thread running `loop` (asked on it).
std::thread::id thread_of(Scheduler& caller, Scheduler& loop) {
    Future<std::thread::id> f = futures::submit_to(caller, loop, [] { return std::this_thread::get_id(); });
    BOOST_REQUIRE(futures::run_until(caller, f, kGuard));
    return f.result();
}

// A probe made on loop 1, carried back to the caller inside a ForeignPtr.
ForeignPtr<Probe> made_on(Scheduler& caller, Scheduler& loop, Deaths& deaths) {
    Future<ForeignPtr<Probe>> f = futures::submit_to(caller, loop, [&deaths] {
        return reactor::make_foreign(std::make_unique<Probe>(deaths, 42));
    });
    BOOST_REQUIRE(futures::run_until(caller, f, kGuard));
    return std::move(f.result());
}

}  // namespace

BOOST_AUTO_TEST_SUITE(foreign_ptr)

// Made on loop 1 by submit_to, read on the caller's loop (this thread), and
// dropped there, inside one of its callbacks: the probe dies on loop 1.
BOOST_AUTO_TEST_CASE(dropped_on_another_loop_it_dies_on_its_owner) {
    Fixture fx;
    Scheduler& one = fx.group.loop(1);
    const std::thread::id one_thread = thread_of(fx.caller, one);
    std::latch died(1);
    Deaths deaths;
    deaths.latch = &died;
    ForeignPtr<Probe> p = made_on(fx.caller, one, deaths);
    BOOST_TEST(p.owner() == &one);
    BOOST_TEST(p->value == 42);
    BOOST_TEST((*p).value == 42);
    BOOST_TEST(static_cast<bool>(p));
    fx.caller.call_soon([&] {
        BOOST_TEST(Scheduler::running() == &fx.caller);
        p.reset();  // on the caller's loop: posted to loop 1
        BOOST_TEST(!p);
        BOOST_TEST(p.owner() == nullptr);
    });
    fx.caller.run();
    died.wait();
    BOOST_TEST(deaths.count.load() == 1);
    BOOST_TEST((deaths.thread.load() == one_thread));
    BOOST_TEST((deaths.thread.load() != std::this_thread::get_id()));
    fx.group.stop();
    BOOST_TEST(deaths.count.load() == 1);
}

// Destroyed (the destructor, not reset) on a thread that runs no loop at
// all: posted to the owner too, since only its thread may delete.
BOOST_AUTO_TEST_CASE(destroyed_on_a_thread_with_no_loop_it_dies_on_its_owner) {
    Fixture fx;
    Scheduler& one = fx.group.loop(1);
    const std::thread::id one_thread = thread_of(fx.caller, one);
    std::latch died(1);
    Deaths deaths;
    deaths.latch = &died;
    {
        ForeignPtr<Probe> p = made_on(fx.caller, one, deaths);
        BOOST_TEST(Scheduler::running() == nullptr);
        std::thread([q = std::move(p)]() mutable { ForeignPtr<Probe> dies_here = std::move(q); }).join();
        BOOST_TEST(!p);  // moved from
    }
    died.wait();
    BOOST_TEST(deaths.count.load() == 1);
    BOOST_TEST((deaths.thread.load() == one_thread));
    fx.group.stop();
    BOOST_TEST(deaths.count.load() == 1);
}

// On its owner's thread it dies in place, at once.
BOOST_AUTO_TEST_CASE(on_its_owners_thread_it_dies_in_place) {
    Fixture fx;
    Deaths deaths;
    Future<bool> f = futures::submit_to(fx.caller, fx.group.loop(0), [&deaths] {
        ForeignPtr<Probe> p = reactor::make_foreign(std::make_unique<Probe>(deaths));
        const bool owned_here = p.owner() == Scheduler::running();
        p.reset();
        return owned_here && deaths.count.load() == 1 && deaths.thread.load() == std::this_thread::get_id();
    });
    BOOST_REQUIRE(futures::run_until(fx.caller, f, kGuard));
    BOOST_TEST(f.result());
    BOOST_TEST(deaths.count.load() == 1);
    fx.group.stop();
}

// The owner has finished (a stopped group's loops, past their close()):
// nobody else can delete it, so it dies on the current thread, once.
BOOST_AUTO_TEST_CASE(an_owner_that_has_finished_leaves_it_to_the_current_thread) {
    Fixture fx;
    Deaths deaths;
    ForeignPtr<Probe> p = made_on(fx.caller, fx.group.loop(1), deaths);
    ForeignPtr<Probe> q = std::move(p);
    fx.group.stop();
    BOOST_TEST(deaths.count.load() == 0);
    q.reset();
    BOOST_TEST(deaths.count.load() == 1);
    BOOST_TEST((deaths.thread.load() == std::this_thread::get_id()));
    q.reset();  // empty: nothing
    BOOST_TEST(deaths.count.load() == 1);
}

// Move-only and empty once moved from; release() gives the object back and
// forgets the owner; assignment destroys what was held first.
BOOST_AUTO_TEST_CASE(moves_release_and_assignment) {
    static_assert(!std::is_copy_constructible_v<ForeignPtr<Probe>>);
    static_assert(!std::is_copy_assignable_v<ForeignPtr<Probe>>);
    static_assert(std::is_nothrow_move_constructible_v<ForeignPtr<Probe>>);
    static_assert(std::is_nothrow_move_assignable_v<ForeignPtr<Probe>>);
    Scheduler sched(on(backend_under_test()));
    Deaths a_deaths, b_deaths;
    ForeignPtr<Probe> a(sched, std::make_unique<Probe>(a_deaths, 1));
    ForeignPtr<Probe> b = std::move(a);
    BOOST_TEST(!a);
    BOOST_TEST(a.get() == nullptr);
    BOOST_TEST(a.owner() == nullptr);
    BOOST_TEST(b.owner() == &sched);
    BOOST_TEST(b->value == 1);
    std::unique_ptr<Probe> raw = b.release();
    BOOST_TEST(!b);
    BOOST_TEST(b.owner() == nullptr);
    BOOST_TEST(raw->value == 1);
    raw.reset();
    BOOST_TEST(a_deaths.count.load() == 1);
    // make_foreign needs a running loop.
    BOOST_CHECK_THROW(reactor::make_foreign(std::make_unique<Probe>(b_deaths)), std::logic_error);
    BOOST_TEST(b_deaths.count.load() == 1);  // the unique_ptr argument died with the call
    ForeignPtr<Probe> empty;
    ForeignPtr<Probe> null = nullptr;
    BOOST_TEST(!empty);
    BOOST_TEST(!null);
    BOOST_TEST(sched.empty());
}

// The owner runs on this thread but is not running now: the deletion is
// posted, and the next run deletes it (in order, on this thread).
BOOST_AUTO_TEST_CASE(an_owner_not_running_deletes_it_at_its_next_run) {
    Scheduler sched(on(backend_under_test()));
    Deaths deaths;
    ForeignPtr<Probe> p(sched, std::make_unique<Probe>(deaths));
    ForeignPtr<Probe> q;
    q = std::move(p);
    q = nullptr;  // assignment from null destroys: posted
    BOOST_TEST(deaths.count.load() == 0);
    sched.run();
    BOOST_TEST(deaths.count.load() == 1);
    BOOST_TEST((deaths.thread.load() == std::this_thread::get_id()));
}

// A post the owner never ran is destroyed with the loop, and the object with it.
BOOST_AUTO_TEST_CASE(a_deletion_never_run_dies_with_its_loop) {
    Deaths deaths;
    {
        Scheduler sched(on(backend_under_test()));
        ForeignPtr<Probe> p(sched, std::make_unique<Probe>(deaths));
        p.reset();
        BOOST_TEST(deaths.count.load() == 0);
    }
    BOOST_TEST(deaths.count.load() == 1);
}

// shared_ptr: the reference goes home and is dropped there; the object dies
// on its owner when that was its last reference.
BOOST_AUTO_TEST_CASE(a_shared_reference_goes_home) {
    Fixture fx;
    Scheduler& one = fx.group.loop(1);
    const std::thread::id one_thread = thread_of(fx.caller, one);
    std::latch died(1);
    Deaths deaths;
    deaths.latch = &died;
    Future<ForeignPtr<Probe, std::shared_ptr<Probe>>> f = futures::submit_to(fx.caller, one, [&deaths] {
        return reactor::make_foreign(std::make_shared<Probe>(deaths, 7));
    });
    BOOST_REQUIRE(futures::run_until(fx.caller, f, kGuard));
    ForeignPtr<Probe, std::shared_ptr<Probe>> p = std::move(f.result());
    BOOST_TEST(p->value == 7);
    BOOST_TEST(p.owner() == &one);
    p.reset();
    died.wait();
    BOOST_TEST(deaths.count.load() == 1);
    BOOST_TEST((deaths.thread.load() == one_thread));
    fx.group.stop();
}

// A group's loop that ends refuses posts BEFORE its last iteration and
// close(), and close() still runs close callbacks on the loop's thread: a
// ForeignPtr dropped on another thread meanwhile must still leave its object
// to that thread (it used to delete it in place, on the dropping thread,
// under the feet of the close callback). The probe's destructor and the close
// callback both touch the loop's own state, plain ints as a loop's state is:
// TSan sees the race if they run on two threads; the assertions see where
// the probe died and what the close callback saw. The close callback waits
// for the drop with a relaxed flag on purpose: no synchronisation from the
// dropping thread, as a real close callback has none.
BOOST_AUTO_TEST_CASE(dropped_while_its_owner_closes_it_still_dies_on_the_owner) {
    struct LoopState {  // loop 0's; touched only on its thread, or after the join
        int probes_alive = 1;
        int alive_seen_by_close_callback = -1;
        std::thread::id loop_thread{};
        std::thread::id probe_died_on{};
    } state;
    struct Tenant {
        LoopState* state;
        ~Tenant() {
            state->probes_alive -= 1;
            state->probe_died_on = std::this_thread::get_id();
        }
    };
    std::atomic<bool> closing{false}, dropped{false}, waited_too_long{false};
    int fds[2];
    BOOST_REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fds) == 0);
    reactor_test::Fd peer(fds[1]);
    LoopGroup group(loops(1));
    Scheduler& zero = group.loop(0);
    // Before start(): no loop runs, this thread may set up loop 0's objects.
    zero.set_exception_handler([](const reactor::ErrorContext&) {});  // close() names the open connection
    ForeignPtr<Tenant> p(zero, std::unique_ptr<Tenant>(new Tenant{&state}));
    reactor::ConnectionPtr conn = reactor::Connection::adopt(zero, fds[0]);
    conn->set_close_callback([&](reactor::Connection&, const reactor::CloseReason&) {
        // Runs in close(): the group's loop 0 ends, posts are refused by now.
        state.loop_thread = std::this_thread::get_id();
        closing.store(true);
        const auto give_up = std::chrono::steady_clock::now() + 10s;
        while (!dropped.load(std::memory_order_relaxed)) {
            if (std::chrono::steady_clock::now() > give_up) {
                waited_too_long.store(true);
                break;
            }
            std::this_thread::yield();
        }
        state.alive_seen_by_close_callback = state.probes_alive;
    });
    conn.reset();  // the open connection keeps itself
    group.start();
    group.request_stop();
    const auto give_up = std::chrono::steady_clock::now() + 10s;
    while (!closing.load() && std::chrono::steady_clock::now() < give_up) std::this_thread::yield();
    BOOST_REQUIRE(closing.load());
    BOOST_TEST(!zero.try_call_soon_threadsafe([] {}));  // the loop refuses posts already
    p.reset();  // not loop 0's thread: the probe must die on loop 0's
    dropped.store(true, std::memory_order_relaxed);
    group.stop();
    BOOST_TEST(!waited_too_long.load());
    BOOST_TEST(state.probes_alive == 0);
    BOOST_TEST((state.probe_died_on == state.loop_thread));
    BOOST_TEST((state.probe_died_on != std::this_thread::get_id()));
    BOOST_TEST(state.alive_seen_by_close_callback == 1);
}

BOOST_AUTO_TEST_SUITE_END()
