// SPDX-License-Identifier: MIT
// Internal: the queue of callbacks posted from other threads
// (Scheduler::call_soon_threadsafe). A FIFO of fixed-size chunks: a poster
// constructs each entry in place and it is never moved again; the loop runs
// it where it lies and destroys it in the same pass; a chunk the loop has
// emptied is kept as a spare and filled again by the posters, so a steady
// stream of posts allocates nothing and writes memory that is still in the
// caches. (A vector grown by the posters and swapped out whole made the loop
// walk every batch twice, to run and to destroy, and a burst grow buffers
// that fell out of the caches and faulted in fresh pages.)
//
// An entry is only what its callback's target uses: the target's ops, its
// `where`, and its bytes (see CallbackTarget), packed one after the other
// and never across chunks. Every line a poster writes was last read by the
// loop, on the other CPU, and each costs a transfer between them: small
// posts share lines, where a whole Callback would take one line each. And a
// push asks for the line a few entries ahead of it (prefetch_for_write):
// the poster's unlock waits until each store before it owns its line, so a
// line fetched only when written is a wait inside the post that writes it
// first; fetched ahead, the transfer overlaps the posts before.
//
// Every emptied chunk is kept, as the vectors kept their capacity: a loop
// that once absorbed a burst absorbs the next one without allocating. A
// small cap on the spares was tried: a poster outrunning a busy loop
// routinely makes batches longer than that, and the chunks given back to the
// allocator came back as fresh pages (a page fault each). The spares go at
// close() and with the Scheduler (release_spares).
//
// Not thread-safe: the Scheduler keeps two, the posters' (under its mutex)
// and the loop's, and moves chunks from one to the other under that mutex
// (append, swap_spares), O(1) whatever their length. Not part of the API.
#pragma once

#include <cstddef>
#include <cstdint>
#include <new>
#include <source_location>
#include <utility>

#include "reactor/callback.hpp"
#include "reactor/detail/cache_line.hpp"
#include "reactor/detail/callback_target.hpp"
#include "reactor/detail/prefetch.hpp"

namespace reactor::detail {

class PostedQueue {
public:
    // An entry's head; the target's bytes follow it.
    class Entry {
    public:
        std::source_location where;

        void operator()() { CallbackTarget::invoke(*ops_, target()); }

    private:
        friend class PostedQueue;
        Entry(const CallbackTarget::Ops& ops, const std::source_location& w) noexcept : where(w), ops_(&ops) {}
        ~Entry() { CallbackTarget::destroy(*ops_, target()); }
        Entry(const Entry&) = delete;
        Entry& operator=(const Entry&) = delete;

        void* target() noexcept { return this + 1; }
        std::size_t bytes() const noexcept { return sizeof(Entry) + CallbackTarget::size(*ops_); }

        const CallbackTarget::Ops* ops_;
    };
    static_assert(sizeof(Entry) % CallbackTarget::kAlign == 0 && alignof(Entry) == CallbackTarget::kAlign);

    // One page per chunk: a line of header, then the entries.
    static constexpr std::size_t kChunkBytes = 4096;
    static constexpr std::size_t kChunkStorage = kChunkBytes - kCacheLine;
    static constexpr std::size_t kMaxEntryBytes = sizeof(Entry) + CallbackTarget::kMaxSize;
    static_assert(kMaxEntryBytes <= kChunkStorage);
    // How far ahead of its entry a push asks for the line it will write.
    static constexpr std::size_t kPrefetchAhead = 4 * kCacheLine;

    PostedQueue() noexcept = default;
    PostedQueue(const PostedQueue&) = delete;
    PostedQueue& operator=(const PostedQueue&) = delete;
    ~PostedQueue() {
        clear();
        release_spares();
    }

    std::size_t size() const noexcept { return size_; }
    bool empty() const noexcept { return size_ == 0; }
    std::size_t spares() const noexcept { return spare_count_; }

    // Takes the target of `cb` (non-empty), leaving `cb` empty. May throw
    // std::bad_alloc (a new chunk), the queue and `cb` then unchanged.
    void push(Callback&& cb, const std::source_location& where) {
        const CallbackTarget::Ops& ops = CallbackTarget::ops(cb);
        const std::size_t bytes = sizeof(Entry) + CallbackTarget::size(ops);
        if (tail_ == nullptr || kChunkStorage - tail_->end < bytes) add_chunk();
        Entry* e = ::new (static_cast<void*>(tail_->storage + tail_->end)) Entry(ops, where);
        CallbackTarget::relocate(cb, e->target());
        tail_->end += static_cast<std::uint32_t>(bytes);
        ++size_;
        // Where the entries after the next few go (see the top of the file).
        const std::size_t ahead = tail_->end + kPrefetchAhead;
        if (ahead < kChunkStorage) prefetch_for_write(tail_->storage + ahead);
    }

    // Moves every entry of `other` to the back of this queue, in order,
    // leaving it empty; its spares stay with it.
    void append(PostedQueue& other) noexcept {
        if (other.head_ == nullptr) return;
        if (head_ == nullptr) {
            head_ = other.head_;
            first_ = other.first_;
        } else {
            tail_->next = other.head_;
        }
        tail_ = other.tail_;
        size_ += other.size_;
        other.head_ = other.tail_ = nullptr;
        other.first_ = 0;
        other.size_ = 0;
    }

    // The spare chunks change hands: the loop gives the posters the chunks
    // it has just emptied, the warmest there are.
    void swap_spares(PostedQueue& other) noexcept {
        std::swap(spares_, other.spares_);
        std::swap(spare_count_, other.spare_count_);
    }

    // Runs the entries in order, each destroyed right after it ran (its
    // captures go then). An entry leaves the queue before it runs: if `run`
    // throws, that entry is destroyed and not run again, and those after it
    // stay queued. `run` must not touch this queue but to read it.
    template <class Run>
    void consume(Run&& run) {
        while (head_ != nullptr) {
            Chunk* c = head_;
            while (first_ < c->end) {
                Entry* e = c->at(first_);
                first_ += static_cast<std::uint32_t>(e->bytes());
                --size_;
                struct Destroy {
                    Entry* e;
                    ~Destroy() { e->~Entry(); }
                } destroy{e};
                run(*e);
            }
            pop_chunk();
        }
    }

    // Every queued entry, in order (the loop's list of what is alive).
    template <class F>
    void for_each(F&& f) const {
        std::uint32_t i = first_;
        for (const Chunk* c = head_; c != nullptr; c = c->next, i = 0) {
            while (i < c->end) {
                const Entry* e = c->at(i);
                i += static_cast<std::uint32_t>(e->bytes());
                f(*e);
            }
        }
    }

    // Destroys every entry unrun. Their destructors may post (to another
    // queue), never to this one.
    void clear() noexcept {
        while (head_ != nullptr) {
            Chunk* c = head_;
            while (first_ < c->end) {
                Entry* e = c->at(first_);
                first_ += static_cast<std::uint32_t>(e->bytes());
                --size_;
                e->~Entry();
            }
            pop_chunk();
        }
    }

    void release_spares() noexcept {
        while (spares_ != nullptr) delete std::exchange(spares_, spares_->next);
        spare_count_ = 0;
    }

private:
    struct alignas(kCacheLine) Chunk {
        Chunk* next = nullptr;
        std::uint32_t end = 0;  // bytes of entries constructed: [0, end)
        alignas(kCacheLine) std::byte storage[kChunkStorage];

        // The entry at byte offset `at`.
        Entry* at(std::uint32_t offset) noexcept { return std::launder(reinterpret_cast<Entry*>(storage + offset)); }
        const Entry* at(std::uint32_t offset) const noexcept {
            return std::launder(reinterpret_cast<const Entry*>(storage + offset));
        }
    };
    static_assert(sizeof(Chunk) == kChunkBytes);

    void add_chunk() {
        Chunk* c = spares_;
        if (c != nullptr) {
            spares_ = c->next;
            --spare_count_;
            c->next = nullptr;
            c->end = 0;
            // Its first lines, which no earlier push asked for.
            for (std::size_t line = 0; line < kPrefetchAhead; line += kCacheLine) prefetch_for_write(c->storage + line);
        } else {
            c = new Chunk;
        }
        if (tail_ == nullptr) {
            head_ = c;
            first_ = 0;
        } else {
            tail_->next = c;
        }
        tail_ = c;
    }

    // The head chunk, all of its entries destroyed, leaves the queue.
    void pop_chunk() noexcept {
        Chunk* c = head_;
        head_ = c->next;
        if (head_ == nullptr) tail_ = nullptr;
        first_ = 0;
        c->next = spares_;
        spares_ = c;
        ++spare_count_;
    }

    Chunk* head_ = nullptr;
    Chunk* tail_ = nullptr;
    std::uint32_t first_ = 0;  // the head chunk's first entry not yet taken, a byte offset
    std::size_t size_ = 0;
    Chunk* spares_ = nullptr;  // a stack: the last emptied is the first reused
    std::size_t spare_count_ = 0;
};

}  // namespace reactor::detail
