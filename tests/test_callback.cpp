// SPDX-License-Identifier: MIT
// reactor::Callback (every kind of target: trivially copyable, with a
// destructor, move-only, boxed) and the promise behind it: scheduling a
// callback, a timer or an fd waiter allocates nothing once the loop's pools
// have grown (issue 5: no heap allocation per call_soon / timer / readiness
// event in the steady state).
//
// This executable counts heap allocations by replacing the global operator
// new; the counter is read only around the code under test.
#include <boost/test/unit_test.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdlib>
#include <memory>
#include <new>
#include <optional>
#include <stdexcept>
#include <type_traits>
#include <utility>

#include <reactor/callback.hpp>
#include <reactor/scheduler.hpp>

#include "support/backends.hpp"
#include "support/check_empty.hpp"
#include "support/counting_new.hpp"
#include "support/fds.hpp"


namespace {

using namespace std::chrono_literals;
using reactor::Callback;
using reactor::Scheduler;

// Heap allocations made while f runs.
template <class F>
std::size_t allocations_during(F&& f) {
    const std::size_t before = reactor_test::allocation_count;
    f();
    return reactor_test::allocation_count - before;
}

// Counts its live copies: what a capture's destructor does is observable.
struct Tracked {
    explicit Tracked(int* live) : live_(live) { ++*live_; }
    Tracked(const Tracked& o) : live_(o.live_) { ++*live_; }
    Tracked(Tracked&& o) noexcept : live_(o.live_) { ++*live_; }
    ~Tracked() { --*live_; }
    Tracked& operator=(const Tracked&) = delete;
    int* live_;
};

// Moves a callback through a chain of others, as the loop does (into a
// slot, out to run), and runs it at the end.
void pass_along_and_run(Callback cb) {
    Callback a(std::move(cb));
    Callback b;
    b = std::move(a);
    BOOST_TEST(!a);
    BOOST_TEST(static_cast<bool>(b));
    b();
}

BOOST_AUTO_TEST_CASE(trivially_copyable_target_keeps_all_its_bytes_through_moves) {
    // Six words: the largest inline target, moved as raw bytes.
    std::array<long, 6> seen{};
    long* out = seen.data();
    long a = 1, b = 2, c = 3, d = 4, e = 5;
    auto f = [out, a, b, c, d, e] {
        out[0] = a, out[1] = b, out[2] = c, out[3] = d, out[4] = e, out[5] = 6;
    };
    static_assert(std::is_trivially_copyable_v<decltype(f)> && sizeof(f) == Callback::kInlineSize);
    BOOST_TEST(allocations_during([&] { pass_along_and_run(Callback(f)); }) == 0u);
    BOOST_TEST((seen == std::array<long, 6>{1, 2, 3, 4, 5, 6}));
}

BOOST_AUTO_TEST_CASE(target_with_a_destructor_is_moved_and_destroyed_exactly_once) {
    int live = 0;
    int runs = 0;
    {
        Callback cb([t = Tracked(&live), &runs] { ++runs; });
        BOOST_TEST(live == 1);
        Callback moved(std::move(cb));
        BOOST_TEST(live == 1);  // the moved-from target was destroyed
        moved();
        BOOST_TEST(runs == 1);
        moved.reset();  // releases the captures now
        BOOST_TEST(live == 0);
        BOOST_TEST(!moved);
    }
    BOOST_TEST(live == 0);
}

// A class that declares itself relocatable moves as bytes: its move
// constructor is never called, and only the last copy is destroyed.
BOOST_AUTO_TEST_CASE(relocatable_target_moves_as_bytes_and_is_destroyed_once) {
    struct Counters {
        int moves = 0, destroyed = 0, runs = 0;
    } n;
    struct Handle {
        using relocatable = void;
        Counters* n;
        explicit Handle(Counters* c) : n(c) {}
        Handle(Handle&& o) noexcept : n(o.n) { ++n->moves; }
        ~Handle() { ++n->destroyed; }
        void operator()() { ++n->runs; }
    };
    static_assert(reactor::Relocatable<Handle> && !std::is_trivially_copyable_v<Handle>);
    {
        Callback cb(Handle{&n});  // constructed from a temporary: one real move, one destruction
        const int destroyed_before = n.destroyed;
        const int moves_before = n.moves;
        pass_along_and_run(std::move(cb));
        BOOST_TEST(n.runs == 1);
        BOOST_TEST(n.moves == moves_before);             // no move constructor on the way
        BOOST_TEST(n.destroyed == destroyed_before + 1);  // only the copy that ran
    }
}

BOOST_AUTO_TEST_CASE(move_assignment_destroys_the_old_target_first) {
    int live_old = 0, live_new = 0;
    Callback cb([t = Tracked(&live_old)] {});
    cb = Callback([t = Tracked(&live_new)] {});
    BOOST_TEST(live_old == 0);
    BOOST_TEST(live_new == 1);
    Callback& self = cb;
    cb = std::move(self);  // self-move keeps the target
    BOOST_TEST(live_new == 1);
    BOOST_TEST(static_cast<bool>(cb));
}

BOOST_AUTO_TEST_CASE(move_only_capture_is_accepted) {
    auto owned = std::make_unique<int>(41);
    int seen = 0;
    Callback cb([p = std::move(owned), &seen] { seen = *p + 1; });
    pass_along_and_run(std::move(cb));
    BOOST_TEST(seen == 42);
}

BOOST_AUTO_TEST_CASE(large_target_is_boxed_once_and_moves_without_allocating) {
    int live = 0;
    std::array<long, 16> big{};
    big[15] = 7;
    long seen = 0;
    std::size_t on_construction = 0;
    {
        std::optional<Callback> cb;
        on_construction = allocations_during([&] { cb.emplace([big, t = Tracked(&live), &seen] { seen = big[15]; }); });
        BOOST_TEST(live == 1);
        BOOST_TEST(allocations_during([&] { pass_along_and_run(std::move(*cb)); }) == 0u);
        BOOST_TEST(live == 0);  // pass_along_and_run's copy died with its box
    }
    BOOST_TEST(on_construction == 1u);
    BOOST_TEST(seen == 7);
}

BOOST_AUTO_TEST_CASE(target_whose_move_may_throw_is_boxed) {
    struct MayThrow {
        int* runs;
        MayThrow(int* r) : runs(r) {}
        MayThrow(const MayThrow& o) : runs(o.runs) {}
        MayThrow(MayThrow&& o) noexcept(false) : runs(o.runs) {}
        void operator()() const { ++*runs; }
    };
    int runs = 0;
    std::size_t allocations = allocations_during([&] { pass_along_and_run(Callback(MayThrow(&runs))); });
    BOOST_TEST(allocations == 1u);  // the box; moving it never calls the throwing move
    BOOST_TEST(runs == 1);
}

// ---------------------------------------------------------------- the loop's hot paths

// After one warm-up round has grown the slot table and the queues, a second
// round of the same work allocates nothing: call_soon chains, bursts of
// posts, timers, and readiness events of a persistent reader.
BOOST_AUTO_TEST_CASE(steady_state_scheduling_allocates_nothing) {
    const reactor::Backend backend = reactor_test::backend_under_test();
    Scheduler s(reactor_test::on(backend));
    reactor_test::Pipe p;
    long hops = 0, posts = 0, timers = 0, reads = 0, written = 0;
    char byte = 'x';
    s.add_reader(p.r, [&] {
        char c;
        while (::read(p.r, &c, 1) == 1) ++reads;
    });
    auto round = [&] {
        struct Hop {
            Scheduler* s;
            long* hops;
            void operator()() const {
                if (++*hops % 100 != 0) s->call_soon(*this);
            }
        };
        s.call_soon(Hop{&s, &hops});
        for (int i = 0; i < 1000; ++i) s.call_soon([&] { ++posts; });
        for (int i = 0; i < 100; ++i) s.call_later(std::chrono::microseconds(i % 7), [&] { ++timers; });
        for (int i = 0; i < 10; ++i) {
            if (::write(p.w, &byte, 1) == 1) ++written;  // no Boost check here: it allocates
            s.run_once();
        }
        while (s.timer_count() > 0 || s.ready_count() > 0) s.run_once();
    };
    round();  // warm-up: the pools grow
    const std::size_t allocations = allocations_during(round);
    BOOST_TEST(allocations == 0u);
    BOOST_TEST(hops == 200);
    BOOST_TEST(posts == 2000);
    BOOST_TEST(timers == 200);
    BOOST_TEST(written == 20);
    BOOST_TEST(reads == 20);
    BOOST_TEST(s.remove_reader(p.r));
    p.r.close();
    p.w.close();
    CHECK_EMPTY(s);
}

}  // namespace
