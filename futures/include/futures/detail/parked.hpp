// futures::detail::Parked and ParkedList: futures parked, in FIFO order, until
// a task-toolkit primitive (Queue, Event, Semaphore) hands them something.
//
// The list does not own its futures: it links them intrusively and holds no
// reference, so a parked future leaves the list the moment it is cancelled or
// its last handle goes, and never takes anything afterwards. Handing over
// completes the future at once (pop() then finish_value()), so no future is
// ever handed something while it can still be cancelled. Loop thread only.
#pragma once

#include <cstddef>
#include <exception>
#include <optional>
#include <source_location>
#include <string>
#include <utility>
#include <variant>

#include <reactor/scheduler.hpp>
#include <reactor/scheduler_observer.hpp>

#include "futures/future.hpp"

namespace futures::detail {

template <class T, class Item>
class ParkedList;

// A future parked in a ParkedList, with the Item it carries (a blocked put's
// item; std::monostate for none).
template <class T, class Item = std::monostate>
class Parked final : public State<T> {
public:
    Parked(reactor::Scheduler& sched, std::source_location where) noexcept : State<T>(sched, where, false) {}
    ~Parked() override { unlink(); }

    void start(ParkedList<T, Item>& list, Item item) {
        item_.emplace(std::move(item));
        list.push_back(*this);
    }

    Item& item() noexcept { return *item_; }
    Item take_item() {
        Item out = std::move(*item_);
        item_.reset();
        return out;
    }

private:
    friend class ParkedList<T, Item>;

    void unlink() noexcept {
        if (list_) list_->unlink(*this);
    }
    // A parked future that is cancelled leaves the list at once: it never
    // takes anything, and whatever comes goes to the next one.
    Ref<StateBase> cancel_step(bool& accepted) override {
        if (this->pending()) unlink();
        return State<T>::cancel_step(accepted);
    }
    void destroy_payload() noexcept override {
        unlink();
        item_.reset();
    }

    ParkedList<T, Item>* list_ = nullptr;
    Parked* prev_ = nullptr;
    Parked* next_ = nullptr;
    std::optional<Item> item_;
};

// The FIFO of one primitive's parked futures. It observes its Scheduler: when
// the Scheduler is destroyed first, the parked futures are cancelled, so the
// tasks waiting on them are released with the loop instead of leaking.
template <class T, class Item = std::monostate>
class ParkedList final : reactor::SchedulerObserver {
public:
    // `owner` names the primitive in messages ("the Queue created at f.cpp:12").
    ParkedList(reactor::Scheduler& sched, std::string owner) : sched_(&sched), owner_(std::move(owner)) {
        sched.add_observer(*this);
    }
    ParkedList(const ParkedList&) = delete;
    ParkedList& operator=(const ParkedList&) = delete;
    ~ParkedList() {
        abandon_all("was destroyed");
        if (sched_) sched_->remove_observer(*this);
    }

    const std::string& owner() const noexcept { return owner_; }
    std::size_t size() const noexcept { return size_; }
    bool empty() const noexcept { return size_ == 0; }

    // A new future parked at the back, carrying `item`.
    Future<T> park(std::source_location where, Item item = Item{}) {
        if (!sched_) throw InvalidStateError(owner_ + ": its Scheduler was destroyed");
        return launch<Parked<T, Item>>(*sched_, where).start(*this, std::move(item));
    }

    // The first parked future that can still take something, unlinked: the
    // caller completes it at once. Null if none. A future whose last handle is
    // going (it waits in the dispose queue) is dropped, not returned.
    Ref<Parked<T, Item>> pop() noexcept {
        while (Parked<T, Item>* p = head_) {
            unlink(*p);
            if (p->alive() && p->pending()) return Ref<Parked<T, Item>>(p);
        }
        return {};
    }

    // The first parked future that can still take something, left in place
    // (a send waiting for the kernel stays first until it is sent). Null if none.
    Parked<T, Item>* front() noexcept {
        while (Parked<T, Item>* p = head_) {
            if (p->alive() && p->pending()) return p;
            unlink(*p);
        }
        return nullptr;
    }

    // Fails every parked future with `error` (close()).
    void fail_all(const std::exception_ptr& error) {
        while (auto p = pop()) p->finish_failed(error);
    }

    // Cancels every parked future, with a CancelledError saying the owner `what`.
    void abandon_all(const char* what) noexcept {
        if (empty()) return;
        std::string why;
        try {
            why = owner_ + " " + what;
        } catch (...) {
        }
        while (auto p = pop()) p->abandon(why.empty() ? "the primitive it waited on is gone" : why.c_str());
    }

private:
    friend class Parked<T, Item>;

    void push_back(Parked<T, Item>& p) noexcept {
        p.list_ = this;
        p.prev_ = tail_;
        p.next_ = nullptr;
        (tail_ ? tail_->next_ : head_) = &p;
        tail_ = &p;
        ++size_;
    }
    void unlink(Parked<T, Item>& p) noexcept {
        (p.prev_ ? p.prev_->next_ : head_) = p.next_;
        (p.next_ ? p.next_->prev_ : tail_) = p.prev_;
        p.prev_ = p.next_ = nullptr;
        p.list_ = nullptr;
        --size_;
    }

    // The loop is going: nothing can hand these futures anything any more.
    // Cancelling them schedules their waiters, which the Scheduler then drops
    // unrun, releasing the tasks that wait (as it does for its timers).
    void on_scheduler_destroyed() noexcept override {
        abandon_all("outlived its Scheduler");
        sched_ = nullptr;
    }

    reactor::Scheduler* sched_;
    std::string owner_;
    Parked<T, Item>* head_ = nullptr;
    Parked<T, Item>* tail_ = nullptr;
    std::size_t size_ = 0;
};

// "the Queue created at f.cpp:12": how a primitive names itself in errors.
inline std::string primitive_name(const char* kind, std::source_location where) {
    return std::string("the ") + kind + " created at " + where.file_name() + ":" + std::to_string(where.line());
}

}  // namespace futures::detail
