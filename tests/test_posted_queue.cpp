// SPDX-License-Identifier: MIT
// detail::PostedQueue, the chunked queue behind call_soon_threadsafe
// (reactor/detail/posted_queue.hpp): order across chunk boundaries, each
// entry run once and destroyed right after it ran, the entries left by a run
// that threw, unrun entries destroyed unrun, and emptied chunks reused (a
// steady stream allocates nothing; a burst leaves a bounded number of
// spares). Used here as the Scheduler uses it: a posters' queue and a loop's
// queue, chunks moved between them by append and swap_spares.
//
// The chunks are over-aligned: this executable counts the aligned forms of
// operator new.
#define BOOST_TEST_MODULE posted_queue
#include <boost/test/unit_test.hpp>

#include <cstddef>
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

constexpr std::size_t kChunk = PostedQueue::kChunkEntries;

// The Scheduler's take: the posts join the loop's queue, and the chunks the
// loop emptied go back to the posters.
void take(PostedQueue& posters, PostedQueue& loop) {
    loop.append(posters);
    posters.swap_spares(loop);
}

void run_all(PostedQueue& q) {
    q.consume([](Entry& e) { e.cb(); });
}

BOOST_AUTO_TEST_CASE(entries_run_once_each_in_order_across_chunk_boundaries) {
    PostedQueue posters, loop;
    std::vector<std::size_t> ran;
    const std::size_t n = 3 * kChunk + 5;
    for (std::size_t i = 0; i < n; ++i) posters.push([&ran, i] { ran.push_back(i); }, std::source_location::current());
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
        e.cb();
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
    const std::size_t n = kChunk + 3;  // the throw in the first chunk, the rest across two
    for (std::size_t i = 0; i < n; ++i)
        posters.push([&ran, i, live] { ran.push_back(i); }, std::source_location::current());
    take(posters, loop);
    const std::size_t thrower = kChunk - 2;
    BOOST_CHECK_THROW(loop.consume([&](Entry& e) {
        e.cb();
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
    for (std::size_t i = 0; i < kChunk + 2; ++i) q.push([] {}, std::source_location::current());
    std::vector<std::size_t> left_at_each;
    q.consume([&](Entry&) {
        std::size_t listed = 0;
        q.for_each([&](const Entry&) { ++listed; });
        left_at_each.push_back(listed);
        BOOST_TEST(listed == q.size());
    });
    BOOST_REQUIRE(left_at_each.size() == kChunk + 2);
    for (std::size_t i = 0; i < left_at_each.size(); ++i) BOOST_TEST(left_at_each[i] == kChunk + 1 - i);
}

BOOST_AUTO_TEST_CASE(unrun_entries_are_destroyed_unrun_by_clear_and_by_the_destructor) {
    auto live = std::make_shared<int>(0);
    bool ran = false;
    {
        PostedQueue q;
        for (std::size_t i = 0; i < 2 * kChunk + 1; ++i)
            q.push([live, &ran] { ran = true; }, std::source_location::current());
        BOOST_TEST(live.use_count() == static_cast<long>(2 * kChunk + 2));
        q.clear();
        BOOST_TEST(q.empty());
        BOOST_TEST(live.use_count() == 1);
        for (std::size_t i = 0; i < kChunk + 1; ++i)
            q.push([live, &ran] { ran = true; }, std::source_location::current());
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
    auto round = [&](std::size_t batch) {
        for (std::size_t i = 0; i < batch; ++i) {
            posters.push([&ran] { ++ran; }, std::source_location::current());
            ++posted;
        }
        take(posters, loop);
        run_all(loop);
    };
    for (int warmup = 0; warmup < 2; ++warmup)
        for (std::size_t batch = 1; batch <= 2 * kChunk + 1; ++batch) round(batch);
    const std::size_t before = aligned_allocations;
    for (int repeat = 0; repeat < 3; ++repeat)
        for (std::size_t batch = 1; batch <= 2 * kChunk + 1; ++batch) round(batch);
    BOOST_TEST(aligned_allocations == before);
    BOOST_TEST(ran == posted);
}

// A burst makes as many chunks as it needs; once run, they are all kept, and
// the next burst of that size allocates nothing. release_spares gives them back.
BOOST_AUTO_TEST_CASE(a_burst_keeps_its_chunks_for_the_next_one) {
    PostedQueue posters, loop;
    const std::size_t chunks = 40;
    const std::size_t burst = chunks * kChunk;
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

}  // namespace
