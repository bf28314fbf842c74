// SPDX-License-Identifier: MIT
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

#include <reactor/export.hpp>
#include <reactor/intrusive_list.hpp>
#include <reactor/loop_service.hpp>
#include <reactor/scheduler.hpp>

#include "futures/future.hpp"

namespace futures::detail {

template <class T, class Item>
class ParkedList;

// A future parked in a ParkedList, with the Item it carries (a blocked put's
// item; std::monostate for none).
template <class T, class Item = std::monostate>
class Parked final : public State<T>, private reactor::ListMember<Parked<T, Item>> {
public:
    Parked(reactor::Scheduler& sched, std::source_location where) noexcept : State<T>(sched, where, false) {}
    ~Parked() override { unlink(); }

    void start(ParkedList<T, Item>& list, Item item) {
        item_.emplace(std::move(item));
        list.parked_.push_back(*this);
    }

    Item& item() noexcept { return *item_; }
    Item take_item() {
        Item out = std::move(*item_);
        item_.reset();
        return out;
    }

private:
    friend class ParkedList<T, Item>;
    friend class reactor::IntrusiveList<Parked>;
    using Member = reactor::ListMember<Parked>;

    void unlink() noexcept { Member::unlink(); }
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

    std::optional<Item> item_;
};

class ParkedLists;

// What the loop's ParkedLists service sees of a ParkedList<T, Item>.
class REACTOR_API ParkedListBase : private reactor::ListMember<ParkedListBase> {
public:
    ParkedListBase(const ParkedListBase&) = delete;
    ParkedListBase& operator=(const ParkedListBase&) = delete;

protected:
    ParkedListBase() = default;
    ~ParkedListBase() = default;  // leaves the service's list (ListMember)

private:
    friend class ParkedLists;
    friend class reactor::IntrusiveList<ParkedListBase>;
    // The loop is going (abandon): cancel every parked future.
    virtual void abandon_with_loop() noexcept = 0;
    // ~Scheduler: park() refuses from now on.
    virtual void loop_destroyed() noexcept = 0;
    virtual void describe(std::vector<reactor::LiveItem>& out) const = 0;
};

// Every ParkedList of a loop: a service that, when the loop is abandoned
// (close()'s last phases, ~Scheduler), cancels every parked future, so that
// the tasks waiting on them are released with the loop instead of leaking;
// and that lists each parked future in Scheduler::live(), with the line that
// parked it (a Queue::get nothing has put into yet). Scheduler::close()
// itself leaves parked futures alone: the tasks awaiting them are cancelled
// (which unparks them), and a Queue may still hand one an item later.
class REACTOR_API ParkedLists final : public reactor::LoopService {
public:
    explicit ParkedLists(reactor::Scheduler& sched) noexcept : LoopService(sched) {}
    ~ParkedLists() override {
        while (ParkedListBase* l = lists_.pop_front()) l->loop_destroyed();
    }
    void add(ParkedListBase& list) noexcept { lists_.push_back(list); }
    void abandon() noexcept override {
        lists_.for_each([](ParkedListBase& l) { l.abandon_with_loop(); });
    }
    void describe(std::vector<reactor::LiveItem>& out) const override {
        lists_.for_each([&out](const ParkedListBase& l) { l.describe(out); });
    }

private:
    reactor::IntrusiveList<ParkedListBase> lists_;
};

// The FIFO of one primitive's parked futures, a member of its loop's
// ParkedLists (see there for what the loop's end does to them).
template <class T, class Item = std::monostate>
class ParkedList final : public ParkedListBase {
public:
    // `owner` names the primitive in messages ("the Queue created at f.cpp:12").
    ParkedList(reactor::Scheduler& sched, std::string owner) : sched_(&sched), owner_(std::move(owner)) {
        sched.service<ParkedLists>().add(*this);
    }
    ~ParkedList() { abandon_all("was destroyed"); }

    const std::string& owner() const noexcept { return owner_; }
    std::size_t size() const noexcept { return parked_.size(); }
    bool empty() const noexcept { return parked_.empty(); }

    // A new future parked at the back, carrying `item`.
    Future<T> park(std::source_location where, Item item = Item{}) {
        if (!sched_) throw InvalidStateError(owner_ + ": its Scheduler was destroyed");
        return launch<Parked<T, Item>>(*sched_, where).start(*this, std::move(item));
    }

    // The first parked future that can still take something, unlinked: the
    // caller completes it at once. Null if none. A future whose last handle is
    // going (it waits in the dispose queue) is dropped, not returned.
    Ref<Parked<T, Item>> pop() noexcept {
        while (Parked<T, Item>* p = parked_.pop_front()) {
            if (p->alive() && p->pending()) return Ref<Parked<T, Item>>(p);
        }
        return {};
    }

    // The first parked future that can still take something, left in place
    // (a send waiting for the kernel stays first until it is sent). Null if none.
    Parked<T, Item>* front() noexcept {
        while (Parked<T, Item>* p = parked_.front()) {
            if (p->alive() && p->pending()) return p;
            parked_.erase(*p);
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

    // Cancelling them schedules their waiters, which the Scheduler then drops
    // unrun, releasing the tasks that wait (as it does for its timers). The
    // loop may run again after close(): the primitive stays usable.
    void abandon_with_loop() noexcept override { abandon_all("was waited on when its Scheduler ended"); }
    void loop_destroyed() noexcept override { sched_ = nullptr; }

    void describe(std::vector<reactor::LiveItem>& out) const override {
        parked_.for_each([&](const Parked<T, Item>& p) {
            if (p.alive() && p.pending())
                out.push_back(reactor::LiveItem{reactor::LiveItem::Kind::future, "parked on " + owner_, p.origin(), true});
        });
    }

    reactor::Scheduler* sched_;
    std::string owner_;
    reactor::IntrusiveList<Parked<T, Item>> parked_;
};

// "the Queue created at f.cpp:12": how a primitive names itself in errors.
inline std::string primitive_name(const char* kind, std::source_location where) {
    return std::string("the ") + kind + " created at " + where.file_name() + ":" + std::to_string(where.line());
}

}  // namespace futures::detail
