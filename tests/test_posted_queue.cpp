// SPDX-License-Identifier: MIT
// detail::PostedQueue, the chunked queue behind call_soon_threadsafe
// (reactor/detail/posted_queue.hpp): order across chunk boundaries, each
// entry run once and destroyed right after it ran, the entries left by a run
// that threw, unrun entries destroyed unrun, and emptied chunks reused (a
// steady stream allocates nothing; a burst leaves a bounded number of
// spares). Entries take the bytes their targets use: targets of every kind
// a Callback holds (a few bytes, its whole inline buffer, boxed, move-only,
// with a destructor), mixed in one queue, pack the chunks as tightly as
// their sizes allow, and each is destroyed exactly once. Used here as the
// Scheduler uses it: a posters' queue and a loop's queue, chunks moved
// between them by append and swap_spares.
//
// The chunks are over-aligned: this executable counts the aligned forms of
// operator new.
#include <boost/test/unit_test.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <new>
#include <source_location>
#include <stdexcept>
#include <vector>

#include "reactor/detail/posted_queue.hpp"

namespace {
std::size_t aligned_allocations = 0;
}  // namespace

// operator new is aligned_alloc plus a counter, and GCC then mistakes the
// matching operator delete's free() for a mismatch.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"

void* operator new(std::size_t size, std::align_val_t align) {
    ++aligned_allocations;
    const auto a = static_cast<std::size_t>(align);
    if (void* p = std::aligned_alloc(a, (size + a - 1) / a * a)) return p;
    throw std::bad_alloc();
}
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }

namespace {

using reactor::Callback;
using reactor::detail::PostedQueue;
using Entry = PostedQueue::Entry;

// How many entries fill a chunk when each target takes `target` bytes: the
// chunk's storage divided by the entry's head and the target rounded up to
// a word.
constexpr std::size_t per_chunk(std::size_t target) {
    return PostedQueue::kChunkStorage / (sizeof(Entry) + (target + 7) / 8 * 8);
}

// The Scheduler's take: the posts join the loop's queue, and the chunks the
// loop emptied go back to the posters.
void take(PostedQueue& posters, PostedQueue& loop) {
    loop.append(posters);
    posters.swap_spares(loop);
}

void run_all(PostedQueue& q) {
    q.consume([](Entry& e) { e(); });
}

BOOST_AUTO_TEST_CASE(entries_run_once_each_in_order_across_chunk_boundaries) {
    PostedQueue posters, loop;
    std::vector<std::size_t> ran;
    auto make = [&ran](std::size_t i) { return [&ran, i] { ran.push_back(i); }; };
    const std::size_t n = 3 * per_chunk(sizeof(make(0))) + 5;
    for (std::size_t i = 0; i < n; ++i) posters.push(make(i), std::source_location::current());
    BOOST_TEST(posters.size() == n);
    take(posters, loop);
    BOOST_TEST(posters.empty());
    BOOST_TEST(loop.size() == n);
    run_all(loop);
    BOOST_TEST(loop.empty());
    BOOST_REQUIRE(ran.size() == n);
    for (std::size_t i = 0; i < n; ++i) BOOST_TEST(ran[i] == i);
    run_all(loop);  // nothing left to run twice
    BOOST_TEST(ran.size() == n);
}

BOOST_AUTO_TEST_CASE(an_entry_is_destroyed_right_after_it_ran_and_where_is_kept) {
    PostedQueue q;
    auto first = std::make_shared<int>(1);
    std::weak_ptr<int> first_seen = first;
    bool first_gone_when_second_ran = false;
    const std::source_location here = std::source_location::current();
    q.push([p = std::move(first)] { (void)p; }, here);
    q.push([&] { first_gone_when_second_ran = first_seen.expired(); }, std::source_location::current());
    std::vector<unsigned> lines;
    q.consume([&](Entry& e) {
        lines.push_back(e.where.line());
        e();
    });
    BOOST_TEST(first_gone_when_second_ran);
    BOOST_REQUIRE(lines.size() == 2u);
    BOOST_TEST(lines[0] == here.line());
}

// What the Scheduler relies on when an exception escapes the run phase: the
// entry that threw is gone (not run twice), those after it stay, ahead of
// the next batch, and the list of what is queued starts after it.
BOOST_AUTO_TEST_CASE(a_run_that_throws_leaves_the_rest_queued_ahead_of_the_next_batch) {
    PostedQueue posters, loop;
    std::vector<std::size_t> ran;
    auto live = std::make_shared<int>(0);
    auto make = [&ran, &live](std::size_t i) { return [&ran, i, live] { ran.push_back(i); }; };
    const std::size_t chunk = per_chunk(sizeof(make(0)));
    const std::size_t n = chunk + 3;  // the throw in the first chunk, the rest across two
    for (std::size_t i = 0; i < n; ++i) posters.push(make(i), std::source_location::current());
    take(posters, loop);
    const std::size_t thrower = chunk - 2;
    BOOST_CHECK_THROW(loop.consume([&](Entry& e) {
        e();
        if (ran.back() == thrower) throw std::runtime_error("cut short");
    }),
                      std::runtime_error);
    BOOST_TEST(ran.size() == thrower + 1);
    BOOST_TEST(loop.size() == n - thrower - 1);
    BOOST_TEST(live.use_count() == static_cast<long>(loop.size()) + 1);  // the thrower's captures are gone
    std::size_t listed = 0;
    loop.for_each([&](const Entry&) { ++listed; });
    BOOST_TEST(listed == loop.size());
    for (std::size_t i = n; i < n + 2; ++i)
        posters.push([&ran, i] { ran.push_back(i); }, std::source_location::current());
    take(posters, loop);
    run_all(loop);
    BOOST_REQUIRE(ran.size() == n + 2);
    for (std::size_t i = 0; i < ran.size(); ++i) BOOST_TEST(ran[i] == i);
    BOOST_TEST(live.use_count() == 1);
}

BOOST_AUTO_TEST_CASE(what_is_still_queued_is_listed_in_order_while_the_queue_runs) {
    PostedQueue q;
    const std::size_t chunk = per_chunk(sizeof([] {}));
    for (std::size_t i = 0; i < chunk + 2; ++i) q.push([] {}, std::source_location::current());
    std::vector<std::size_t> left_at_each;
    q.consume([&](Entry&) {
        std::size_t listed = 0;
        q.for_each([&](const Entry&) { ++listed; });
        left_at_each.push_back(listed);
        BOOST_TEST(listed == q.size());
    });
    BOOST_REQUIRE(left_at_each.size() == chunk + 2);
    for (std::size_t i = 0; i < left_at_each.size(); ++i) BOOST_TEST(left_at_each[i] == chunk + 1 - i);
}

BOOST_AUTO_TEST_CASE(unrun_entries_are_destroyed_unrun_by_clear_and_by_the_destructor) {
    auto live = std::make_shared<int>(0);
    bool ran = false;
    auto make = [&] { return [live, &ran] { ran = true; }; };
    const std::size_t chunk = per_chunk(sizeof(make()));
    {
        PostedQueue q;
        for (std::size_t i = 0; i < 2 * chunk + 1; ++i) q.push(make(), std::source_location::current());
        BOOST_TEST(live.use_count() == static_cast<long>(2 * chunk + 2));
        q.clear();
        BOOST_TEST(q.empty());
        BOOST_TEST(live.use_count() == 1);
        for (std::size_t i = 0; i < chunk + 1; ++i) q.push(make(), std::source_location::current());
    }
    BOOST_TEST(live.use_count() == 1);
    BOOST_TEST(!ran);
}

// Posts and takes as a busy loop sees them, batches of every size around a
// chunk's: once the first rounds have made the chunks, none is allocated.
// The spares alternate between the two queues (swap_spares), each serving
// every other batch: the warm-up sweeps twice, an odd number of rounds each,
// so that the largest batch has come at both parities.
BOOST_AUTO_TEST_CASE(a_steady_stream_reuses_its_chunks) {
    PostedQueue posters, loop;
    std::size_t ran = 0, posted = 0;
    const std::size_t chunk = per_chunk(sizeof(&ran));
    auto round = [&](std::size_t batch) {
        for (std::size_t i = 0; i < batch; ++i) {
            posters.push([&ran] { ++ran; }, std::source_location::current());
            ++posted;
        }
        take(posters, loop);
        run_all(loop);
    };
    for (int warmup = 0; warmup < 2; ++warmup)
        for (std::size_t batch = 1; batch <= 2 * chunk + 1; ++batch) round(batch);
    const std::size_t before = aligned_allocations;
    for (int repeat = 0; repeat < 3; ++repeat)
        for (std::size_t batch = 1; batch <= 2 * chunk + 1; ++batch) round(batch);
    BOOST_TEST(aligned_allocations == before);
    BOOST_TEST(ran == posted);
}

// A burst makes as many chunks as it needs; once run, they are all kept, and
// the next burst of that size allocates nothing. release_spares gives them back.
BOOST_AUTO_TEST_CASE(a_burst_keeps_its_chunks_for_the_next_one) {
    PostedQueue posters, loop;
    const std::size_t chunks = 40;
    const std::size_t burst = chunks * per_chunk(sizeof(&chunks));
    std::size_t ran = 0;
    auto post_burst = [&] {
        for (std::size_t i = 0; i < burst; ++i) posters.push([&ran] { ++ran; }, std::source_location::current());
    };
    post_burst();
    take(posters, loop);
    run_all(loop);
    BOOST_TEST(ran == burst);
    BOOST_TEST(loop.spares() == chunks);
    take(posters, loop);  // the posters get them
    BOOST_TEST(posters.spares() == chunks);
    BOOST_TEST(loop.spares() == 0u);
    const std::size_t before = aligned_allocations;
    post_burst();
    BOOST_TEST(aligned_allocations == before);  // the spares filled, no new chunk
    BOOST_TEST(posters.spares() == 0u);
    take(posters, loop);
    run_all(loop);
    BOOST_TEST(ran == 2 * burst);
    loop.release_spares();
    BOOST_TEST(loop.spares() == 0u);
}

// ---- entries of every size

// What one entry of the mixed tests records: that it ran, and how many times
// its target (or what it owns) was destroyed.
struct Record {
    std::size_t id = 0;
    std::vector<std::size_t>* log = nullptr;
    int destroyed = 0;
    void ran() const { log->push_back(id); }
};

// Moves by its move constructor (not as bytes: not trivially copyable, not
// declared relocatable) and counts the destruction of the one that owns it.
class Counted {
public:
    explicit Counted(Record* r) noexcept : r_(r) {}
    Counted(Counted&& other) noexcept : r_(std::exchange(other.r_, nullptr)) {}
    Counted& operator=(Counted&&) = delete;
    ~Counted() {
        if (r_ != nullptr) ++r_->destroyed;
    }
    Record* get() const noexcept { return r_; }

private:
    Record* r_;
};

struct CountDestroy {
    void operator()(Record* r) const noexcept { ++r->destroyed; }
};

// The five kinds, in turn: 8 bytes; the whole inline buffer; boxed (too big
// for it), its box owning a Counted; move-only; a destructor that counts.
// Every kind but the first two counts its destruction.
constexpr std::size_t kKinds = 5;
constexpr bool counts_destruction(std::size_t kind) { return kind >= 2; }

void push_kind(PostedQueue& q, Record* r) {
    const std::source_location here = std::source_location::current();
    switch (r->id % kKinds) {
    case 0: {
        auto f = [r] { r->ran(); };
        static_assert(sizeof(f) == 8);
        q.push(f, here);
        break;
    }
    case 1: {
        auto f = [r, pad = std::array<std::uint64_t, 5>{}] { r->ran(); (void)pad; };
        static_assert(sizeof(f) == Callback::kInlineSize);
        q.push(f, here);
        break;
    }
    case 2: {
        auto f = [c = Counted(r), pad = std::array<std::uint64_t, 16>{}] { c.get()->ran(); (void)pad; };
        static_assert(sizeof(f) > Callback::kInlineSize);
        q.push(std::move(f), here);
        break;
    }
    case 3:
        q.push([p = std::unique_ptr<Record, CountDestroy>(r)] { p->ran(); }, here);
        break;
    default:
        q.push([c = Counted(r)] { c.get()->ran(); }, here);
        break;
    }
}

// The bytes each kind's entry takes: the head and the target, boxed ones as
// a pointer.
constexpr std::size_t entry_bytes(std::size_t kind) {
    constexpr std::size_t target[kKinds] = {8, Callback::kInlineSize, 8, 8, 8};
    return sizeof(Entry) + target[kind];
}

// The chunks n entries of the kinds in turn fill, each entry in the chunk
// where it began.
std::size_t chunks_for(std::size_t n) {
    std::size_t chunks = 1, used = 0;
    for (std::size_t i = 0; i < n; ++i) {
        const std::size_t bytes = entry_bytes(i % kKinds);
        if (used + bytes > PostedQueue::kChunkStorage) {
            ++chunks;
            used = 0;
        }
        used += bytes;
    }
    return chunks;
}

struct Mixed {
    std::vector<std::size_t> log;
    std::vector<Record> records;

    explicit Mixed(std::size_t n) : records(n) {
        for (std::size_t i = 0; i < n; ++i) records[i] = Record{i, &log, 0};
    }
    void push(PostedQueue& q, std::size_t from, std::size_t to) {
        for (std::size_t i = from; i < to; ++i) push_kind(q, &records[i]);
    }
    // Each target destroyed once, if its kind can tell.
    void check_destroyed_once() const {
        for (const Record& r : records)
            if (counts_destruction(r.id % kKinds)) BOOST_TEST(r.destroyed == 1, "entry " << r.id);
    }
};

BOOST_AUTO_TEST_CASE(entries_of_every_size_run_in_order_packed_without_straddling_chunks) {
    static_assert(PostedQueue::kMaxEntryBytes == entry_bytes(1));
    PostedQueue posters, loop;
    const std::size_t n = 1000;
    Mixed m(n);
    m.push(posters, 0, n);
    BOOST_TEST(posters.size() == n);
    take(posters, loop);
    run_all(loop);
    BOOST_REQUIRE(m.log.size() == n);
    for (std::size_t i = 0; i < n; ++i) BOOST_TEST(m.log[i] == i);
    m.check_destroyed_once();
    // Every chunk went back to the spares: as many as the entries fill when
    // each starts a new chunk only if it does not fit in the last one.
    BOOST_TEST(chunks_for(n) > 2u);
    BOOST_TEST(loop.spares() == chunks_for(n));
}

BOOST_AUTO_TEST_CASE(entries_of_every_size_are_destroyed_once_by_clear_and_by_the_destructor) {
    const std::size_t n = 700;
    Mixed m(n);
    {
        PostedQueue q;
        m.push(q, 0, n / 2);
        q.clear();
        BOOST_TEST(q.empty());
        for (std::size_t i = 0; i < n / 2; ++i)
            if (counts_destruction(i % kKinds)) BOOST_TEST(m.records[i].destroyed == 1, "entry " << i);
        m.push(q, n / 2, n);
    }
    BOOST_TEST(m.log.empty());
    m.check_destroyed_once();
}

// A target that throws: its entry is gone, destroyed once, and the rest,
// left queued, run in order in the next pass; the Scheduler's run catches
// the exception in place and goes on (tests/test_scheduler_threadsafe.cpp).
BOOST_AUTO_TEST_CASE(an_entry_of_every_size_that_throws_is_destroyed_and_the_rest_stay_queued) {
    PostedQueue posters, loop;
    const std::size_t n = 400;
    const std::size_t thrower = 203;  // past a chunk boundary
    BOOST_REQUIRE(thrower % kKinds != 0 && counts_destruction(thrower % kKinds));
    Mixed m(n);
    m.push(posters, 0, thrower);
    Record& r = m.records[thrower];
    posters.push([c = Counted(&r)] {
        c.get()->ran();
        throw std::runtime_error("thrown by the target");
    },
                 std::source_location::current());
    m.push(posters, thrower + 1, n);
    take(posters, loop);
    BOOST_CHECK_THROW(run_all(loop), std::runtime_error);
    BOOST_TEST(m.log.size() == thrower + 1);
    BOOST_TEST(r.destroyed == 1);
    BOOST_TEST(loop.size() == n - thrower - 1);
    run_all(loop);
    BOOST_REQUIRE(m.log.size() == n);
    for (std::size_t i = 0; i < n; ++i) BOOST_TEST(m.log[i] == i);
    m.check_destroyed_once();
}

// What push leaves behind: the Callback it took from, empty.
BOOST_AUTO_TEST_CASE(push_takes_the_target_and_leaves_the_callback_empty) {
    Record r;
    std::vector<std::size_t> log;
    r.log = &log;
    PostedQueue q;
    Callback cb([c = Counted(&r)] { c.get()->ran(); });
    q.push(std::move(cb), std::source_location::current());
    BOOST_TEST(!cb);  // NOLINT(bugprone-use-after-move): what a move leaves is the point
    BOOST_TEST(r.destroyed == 0);
    run_all(q);
    BOOST_TEST(log.size() == 1u);
    BOOST_TEST(r.destroyed == 1);
}

}  // namespace
