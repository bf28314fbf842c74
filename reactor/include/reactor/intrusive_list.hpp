// SPDX-License-Identifier: MIT
// reactor::IntrusiveList<T> and ListMember<T>: a doubly linked list whose
// links live in the members themselves, so joining and leaving allocate
// nothing and are O(1), and a member leaves its list by itself when it is
// destroyed. How the loop's services keep the objects that must end with
// the loop (listeners and sockets, tasks, parked futures, child watches, work holds),
// and how a user's own service can keep its objects (docs/scheduler.md,
// "Extending the loop").
//
// A type joins by deriving from ListMember<T> (T itself, CRTP; privately if
// it befriends IntrusiveList<T>); a member is in at most one IntrusiveList<T>
// at a time. Neither the list nor the member
// owns the other: destroying either unlinks. Not thread-safe: one loop.
//
// Ending every member of a list while ending one may unlink, or link, others
// (a connection's close callback opens another): take the members out one at
// a time with pop_front(), or move them all to a local list with take_all()
// first when only those present now are to be ended.
#pragma once

#include <cstddef>
#include <utility>

namespace reactor {

template <class T>
class IntrusiveList;

template <class T>
class ListMember {
public:
    bool is_linked() const noexcept { return list_ != nullptr; }
    // Leaves its list, if in one.
    void unlink() noexcept {
        if (list_) list_->erase_hook(*this);
    }

protected:
    ListMember() = default;
    // Not copied: a copy is in no list.
    ListMember(const ListMember&) noexcept {}
    ListMember& operator=(const ListMember&) noexcept { return *this; }
    ~ListMember() { unlink(); }

private:
    friend class IntrusiveList<T>;
    IntrusiveList<T>* list_ = nullptr;
    ListMember* prev_ = nullptr;
    ListMember* next_ = nullptr;
};

// T derives from ListMember<T>; if privately, T befriends IntrusiveList<T>.
template <class T>
class IntrusiveList {
    using Hook = ListMember<T>;

public:
    IntrusiveList() = default;
    IntrusiveList(const IntrusiveList&) = delete;
    IntrusiveList& operator=(const IntrusiveList&) = delete;
    IntrusiveList(IntrusiveList&& other) noexcept { steal(other); }
    IntrusiveList& operator=(IntrusiveList&& other) noexcept {
        if (this != &other) {
            clear();
            steal(other);
        }
        return *this;
    }
    ~IntrusiveList() { clear(); }

    bool empty() const noexcept { return head_ == nullptr; }
    std::size_t size() const noexcept { return size_; }
    T* front() const noexcept { return member(head_); }
    T* back() const noexcept { return member(tail_); }

    // Links `m` at the back, out of the list it was in.
    void push_back(T& m) noexcept {
        Hook& h = m;
        h.unlink();
        h.list_ = this;
        h.prev_ = tail_;
        h.next_ = nullptr;
        (tail_ ? tail_->next_ : head_) = &h;
        tail_ = &h;
        ++size_;
    }

    // Puts `replacement` where `m` is, and unlinks `m` (a moved member keeps
    // its place). Precondition: `m` is in this list.
    void replace(T& m, T& replacement) noexcept {
        Hook& old = m;
        Hook& h = replacement;
        h.unlink();
        h.list_ = this;
        h.prev_ = old.prev_;
        h.next_ = old.next_;
        (old.prev_ ? old.prev_->next_ : head_) = &h;
        (old.next_ ? old.next_->prev_ : tail_) = &h;
        old.list_ = nullptr;
        old.prev_ = old.next_ = nullptr;
    }

    // Precondition: `m` is in this list.
    void erase(T& m) noexcept { erase_hook(m); }

    // The first member, unlinked; null if empty.
    T* pop_front() noexcept {
        Hook* first = head_;
        if (!first) return nullptr;
        erase_hook(*first);
        return member(first);
    }

    // Every member, moved to the returned list in order; this one is empty.
    IntrusiveList take_all() noexcept { return IntrusiveList(std::move(*this)); }

    // Unlinks every member (destroys none).
    void clear() noexcept {
        while (head_) erase_hook(*head_);
    }

    // Calls f(T&) for each member, front to back. f may unlink the member it
    // is given, no other.
    template <class F>
    void for_each(F&& f) const {
        for (Hook* h = head_; h;) {
            Hook* following = h->next_;
            f(*member(h));
            h = following;
        }
    }

private:
    friend class ListMember<T>;

    static T* member(Hook* h) noexcept { return static_cast<T*>(h); }

    void erase_hook(Hook& h) noexcept {
        (h.prev_ ? h.prev_->next_ : head_) = h.next_;
        (h.next_ ? h.next_->prev_ : tail_) = h.prev_;
        h.list_ = nullptr;
        h.prev_ = h.next_ = nullptr;
        --size_;
    }

    void steal(IntrusiveList& other) noexcept {
        head_ = std::exchange(other.head_, nullptr);
        tail_ = std::exchange(other.tail_, nullptr);
        size_ = std::exchange(other.size_, 0);
        for (Hook* h = head_; h; h = h->next_) h->list_ = this;
    }

    Hook* head_ = nullptr;
    Hook* tail_ = nullptr;
    std::size_t size_ = 0;
};

}  // namespace reactor
