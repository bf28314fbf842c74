// SPDX-License-Identifier: MIT
// futures::Queue<T>: a FIFO queue between state-machine tasks, bounded or
// unbounded, whose put() and get() return futures (asyncio.Queue).
//
// Fair: blocked getters, and blocked putters, are served in the order they
// came. An item goes straight to the first waiting getter, completing its
// future, so a get that was cancelled (or whose every handle was dropped)
// while it waited never takes an item: the next getter gets it. Likewise a
// cancelled put never adds its item. close() ends the queue: every waiter
// fails with QueueClosed, puts fail from then on, and gets still drain what
// is queued, then fail. The queue owns its items; the futures it returns
// belong to its Scheduler, which should outlive it (if not, waiters still
// parked are cancelled when the Scheduler goes). Loop thread only; never
// calls back synchronously (completed futures run their callbacks from the loop).
#pragma once

#include <cstddef>
#include <deque>
#include <exception>
#include <limits>
#include <optional>
#include <source_location>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

#include <reactor/export.hpp>
#include <reactor/scheduler.hpp>

#include "futures/detail/parked.hpp"
#include "futures/future.hpp"
#include "futures/leaves.hpp"

namespace futures {

// The queue was closed: a put after close(), a get on a closed queue with
// nothing left, or a waiter woken by close().
class REACTOR_API QueueClosed : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

template <class T>
class Queue {
    static_assert(std::is_object_v<T> && !std::is_const_v<T> && std::is_move_constructible_v<T>,
                  "Queue<T>: T must be a movable, non-const object type");

public:
    // An unbounded queue: put() never waits.
    explicit Queue(reactor::Scheduler& sched, std::source_location where = std::source_location::current())
        : Queue(sched, kUnbounded, where, 0) {}
    // A bounded queue of at most `capacity` items (>= 1, else std::invalid_argument):
    // a put() to a full queue waits for a get().
    Queue(reactor::Scheduler& sched, std::size_t capacity,
          std::source_location where = std::source_location::current())
        : Queue(sched, capacity, where, 0) {
        if (capacity == 0)
            throw std::invalid_argument("Queue: capacity must be at least 1 (use Queue(sched) for an unbounded queue)");
    }
    Queue(const Queue&) = delete;
    Queue& operator=(const Queue&) = delete;
    // Waiters still parked are cancelled ("... was destroyed"); queued items are destroyed.
    ~Queue() = default;

    // Adds `item`: the future is done once the item is in the queue (or handed
    // to a waiting getter): at once if there is room, else when a get() makes
    // room, FIFO among blocked putters. Cancelling it while it waits withdraws
    // the item. Fails with QueueClosed if the queue is closed, or closes while
    // it waits (the item is then dropped).
    [[nodiscard]] Future<void> put(T item, std::source_location where = std::source_location::current()) {
        if (closed_) return make_exception_future<void>(sched_, closed_error("put"), where);
        if (auto getter = getters_.pop()) {
            getter->finish_value(std::move(item));
        } else if (items_.size() < capacity_) {
            items_.push_back(std::move(item));
        } else {
            return putters_.park(where, std::move(item));
        }
        return make_ready_future(sched_, where);
    }

    // The next item: done at once if one is queued, else when a put() brings
    // one, FIFO among waiting getters. Cancelling it while it waits means it
    // takes nothing. Fails with QueueClosed if the queue is closed and empty,
    // or closes while it waits.
    [[nodiscard]] Future<T> get(std::source_location where = std::source_location::current()) {
        if (!items_.empty()) return make_ready_future(sched_, take_front(), where);
        if (closed_) return make_exception_future<T>(sched_, closed_error("get"), where);
        return getters_.park(where);
    }

    // put() without waiting: false, and `item` untouched, if the queue is full.
    // Throws QueueClosed if the queue is closed.
    template <class U = T>
        requires std::is_constructible_v<T, U&&>
    bool try_put(U&& item) {
        if (closed_) std::rethrow_exception(closed_error("try_put"));
        if (auto getter = getters_.pop()) {
            getter->finish_value(std::forward<U>(item));
        } else if (items_.size() < capacity_) {
            items_.emplace_back(std::forward<U>(item));
        } else {
            return false;
        }
        return true;
    }

    // get() without waiting: nothing if the queue is empty. Throws QueueClosed
    // if the queue is closed and empty.
    std::optional<T> try_get() {
        if (!items_.empty()) return take_front();
        if (closed_) std::rethrow_exception(closed_error("try_get"));
        return std::nullopt;
    }

    // Closes the queue: every waiting getter and putter fails with QueueClosed
    // (blocked putters' items are dropped), later puts fail, and gets fail once
    // the queued items are gone. Idempotent.
    void close() {
        if (closed_) return;
        closed_ = true;
        getters_.fail_all(closed_error("get"));
        putters_.fail_all(closed_error("put"));
    }

    bool is_closed() const noexcept { return closed_; }
    std::size_t size() const noexcept { return items_.size(); }
    bool empty() const noexcept { return items_.empty(); }
    bool full() const noexcept { return items_.size() >= capacity_; }
    // The bound; std::numeric_limits<std::size_t>::max() for an unbounded queue.
    std::size_t capacity() const noexcept { return capacity_; }
    bool bounded() const noexcept { return capacity_ != kUnbounded; }
    std::size_t waiting_getters() const noexcept { return getters_.size(); }
    std::size_t waiting_putters() const noexcept { return putters_.size(); }

private:
    static constexpr std::size_t kUnbounded = std::numeric_limits<std::size_t>::max();

    Queue(reactor::Scheduler& sched, std::size_t capacity, std::source_location where, int)
        : sched_(sched),
          capacity_(capacity),
          getters_(sched, detail::primitive_name("Queue", where)),
          putters_(sched, detail::primitive_name("Queue", where)) {}

    // Takes the front item and lets the first blocked putter in behind it.
    T take_front() {
        T out = std::move(items_.front());
        items_.pop_front();
        if (items_.size() < capacity_) {
            if (auto putter = putters_.pop()) {
                items_.push_back(putter->take_item());
                putter->finish_value();
            }
        }
        return out;
    }

    std::exception_ptr closed_error(const char* operation) const {
        return std::make_exception_ptr(QueueClosed(std::string(operation) + ": " + getters_.owner() + " is closed"));
    }

    reactor::Scheduler& sched_;
    std::size_t capacity_;
    bool closed_ = false;
    std::deque<T> items_;
    // Invariants: getters wait only while the queue is empty, putters only while it is full.
    detail::ParkedList<T> getters_;
    detail::ParkedList<void, T> putters_;
};

}  // namespace futures
