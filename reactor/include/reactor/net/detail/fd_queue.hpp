// SPDX-License-Identifier: MIT
// Internal: a queue of fd numbers, doubly linked through links its user
// keeps: how a loop times its connections' deadlines (DeadlineQueues,
// reactor/src/net/deadline_queues.hpp). The links are fd numbers, not
// pointers, so they can live in a table indexed by fd that moves when it
// grows, in 8 bytes.
//
// `links(fd)` returns the FdLinks of `fd`; `start(fd)` the time its place
// counts from. The queue is kept in start order: linking at the back with a
// start of now() keeps it, since the loop's clock never goes back.
#pragma once

namespace reactor::detail {

struct FdLinks {
    int prev = -1;
    int next = -1;
};

class FdQueue {
public:
    bool empty() const noexcept { return head_ < 0; }
    int front() const noexcept { return head_; }  // -1 if empty
    int back() const noexcept { return tail_; }

    template <class Links>
    bool contains(int fd, Links links) const {
        return head_ == fd || links(fd).prev >= 0;
    }

    template <class Links>
    void push_back(int fd, Links links) {
        FdLinks& l = links(fd);
        l = FdLinks{tail_, -1};
        if (tail_ >= 0) {
            links(tail_).next = fd;
        } else {
            head_ = fd;
        }
        tail_ = fd;
    }

    // In start order, after those that start at the same time; walks back
    // from the tail, so a start of now() costs what push_back does.
    template <class Links, class Start>
    void insert(int fd, Links links, Start start) {
        int after = tail_;
        while (after >= 0 && start(fd) < start(after)) after = links(after).prev;
        const int before = after >= 0 ? links(after).next : head_;
        links(fd) = FdLinks{after, before};
        if (after >= 0) {
            links(after).next = fd;
        } else {
            head_ = fd;
        }
        if (before >= 0) {
            links(before).prev = fd;
        } else {
            tail_ = fd;
        }
    }

    // `fd` must be in the queue.
    template <class Links>
    void remove(int fd, Links links) noexcept {
        FdLinks& l = links(fd);
        if (l.prev >= 0) {
            links(l.prev).next = l.next;
        } else {
            head_ = l.next;
        }
        if (l.next >= 0) {
            links(l.next).prev = l.prev;
        } else {
            tail_ = l.prev;
        }
        l = FdLinks{};
    }

    // `fd` must be in the queue; its start is now now().
    template <class Links>
    void move_to_back(int fd, Links links) noexcept {
        if (tail_ == fd) return;
        remove(fd, links);
        push_back(fd, links);
    }

private:
    int head_ = -1;
    int tail_ = -1;
};

}  // namespace reactor::detail
