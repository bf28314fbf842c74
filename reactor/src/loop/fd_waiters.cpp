// SPDX-License-Identifier: MIT
// The per-fd tables: registering, replacing and removing the callback
// waiter of an fd, an fd's owner and what it watches, and dropping the
// waiters of an fd found closed. Never owns the fds; loop thread only. The
// run phase that invokes the waiters is in iteration.cpp.
#include <fcntl.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <utility>

#include <fmt/format.h>

#include "reactor/scheduler.hpp"
#include "reactor/detail/kernel_calls.hpp"

namespace reactor {

void Scheduler::read_wait(int fd, Callback cb, std::source_location where) {
    set_waiter(fd, true, false, std::move(cb), where);
}
void Scheduler::write_wait(int fd, Callback cb, std::source_location where) {
    set_waiter(fd, false, false, std::move(cb), where);
}
void Scheduler::add_reader(int fd, Callback cb, std::source_location where) {
    set_waiter(fd, true, true, std::move(cb), where);
}
void Scheduler::add_writer(int fd, Callback cb, std::source_location where) {
    set_waiter(fd, false, true, std::move(cb), where);
}
bool Scheduler::remove_reader(int fd) {
    require_loop_thread("remove_reader");
    return remove_waiter(fd, true);
}
bool Scheduler::remove_writer(int fd) {
    require_loop_thread("remove_writer");
    return remove_waiter(fd, false);
}

void Scheduler::set_waiter(int fd, bool is_read, bool persistent, Callback cb, std::source_location where) {
    require_loop_thread(persistent ? (is_read ? "add_reader" : "add_writer") : (is_read ? "read_wait" : "write_wait"),
                        &where);
    if (fd < 0) throw std::invalid_argument(fmt::format("reactor: invalid fd {} (negative)", fd));
    if (fd == wakeup_fd_) throw std::invalid_argument(fmt::format("reactor: fd {} is the loop's own wakeup fd", fd));
    if (!cb) throw std::invalid_argument("reactor: empty callback");
    auto index = static_cast<std::size_t>(fd);
    Interest wanted = index < fds_.waiting.size() ? interest_of(fd) : Interest::none;
    wanted = wanted | (is_read ? Interest::read : Interest::write);
    selector_->set_interest(fd, wanted);  // validates fd first: on throw nothing has changed
    if (index >= fds_.callbacks.size()) fds_.callbacks.resize(index + 1);
    if (index >= fds_.waiting.size()) fds_.waiting.resize(index + 1);

    Ref r = alloc_slot(std::move(cb), where, persistent ? SlotKind::persistent_waiter : SlotKind::oneshot_waiter);
    slots_[r.slot].fd = fd;
    slots_[r.slot].is_read = is_read;
    Ref& entry = is_read ? fds_.callbacks[index].read : fds_.callbacks[index].write;
    Ref old = std::exchange(entry, r);
    if (live(old)) {
        free_slot(old.slot);
    } else {
        ++fds_.waiters;
    }
}

bool Scheduler::remove_waiter(int fd, bool is_read) {
    const auto index = static_cast<std::size_t>(fd);
    if (fd < 0 || index >= fds_.callbacks.size()) return false;
    Ref& entry = is_read ? fds_.callbacks[index].read : fds_.callbacks[index].write;
    if (!live(entry)) return false;
    Ref old = std::exchange(entry, Ref{});
    --fds_.waiters;
    selector_->set_interest(fd, interest_of(fd));
    free_slot(old.slot);
    return true;
}

void Scheduler::forget_fd(int fd) noexcept {
    if (debug_.on && off_loop_thread("forget_fd", nullptr)) return;  // noexcept: refused, reported, not thrown
    if (fd < 0 || fd == wakeup_fd_) return;
    remove_waiter(fd, true);
    remove_waiter(fd, false);
    if (static_cast<std::size_t>(fd) < fds_.waiting.size()) {
        FdWaiters& w = fds_.waiting[static_cast<std::size_t>(fd)];
        unwatch_owned(w);
        end_owner_timer(w);
        w.owner = nullptr;  // a report not yet delivered is dropped with it
        ++w.owner_gen;      // and so is readiness queued for it, and its timer
        w.unwatchable = 0;
    }
    selector_->forget(fd);
}

void Scheduler::unwatch_owned(FdWaiters& w) noexcept {
    if (wants(w.watched, Interest::read)) --fds_.waiters;
    if (wants(w.watched, Interest::write)) --fds_.waiters;
    w.watched = Interest::none;
}

void Scheduler::watch(int fd, Interest interest) {
    require_loop_thread("watch");
    const auto index = static_cast<std::size_t>(fd);
    if (fd < 0 || index >= fds_.waiting.size() || fds_.waiting[index].owner == nullptr)
        throw std::logic_error(fmt::format("reactor: watch(fd {}): the fd has no owner (set_fd_owner first)", fd));
    FdWaiters& w = fds_.waiting[index];
    if (w.watched == interest) return;
    const FdCallbacks c = fds_.callbacks_of(fd);
    Interest waiters = Interest::none;
    if (live(c.read)) waiters = waiters | Interest::read;
    if (live(c.write)) waiters = waiters | Interest::write;
    selector_->set_interest(fd, waiters | interest);  // validates fd first: on throw nothing has changed
    unwatch_owned(w);
    w.watched = interest;
    if (wants(interest, Interest::read)) ++fds_.waiters;
    if (wants(interest, Interest::write)) ++fds_.waiters;
}

void Scheduler::set_fd_owner(int fd, FdOwner& owner) {
    require_loop_thread("set_fd_owner");
    if (fd < 0) throw std::invalid_argument(fmt::format("reactor: invalid fd {} (negative)", fd));
    if (fd == wakeup_fd_) throw std::invalid_argument(fmt::format("reactor: fd {} is the loop's own wakeup fd", fd));
    // An owner's queue entries carry the number in kOwnerFdMask's bits.
    if (static_cast<std::uint32_t>(fd) > detail::kOwnerFdMask)
        throw std::invalid_argument(fmt::format("reactor: fd {} is too large to have an owner", fd));
    const auto index = static_cast<std::size_t>(fd);
    if (index >= fds_.waiting.size()) fds_.waiting.resize(index + 1);
    FdWaiters& w = fds_.waiting[index];
    if (w.watched != Interest::none) {  // the previous owner's watch ends with its ownership
        unwatch_owned(w);
        selector_->set_interest(fd, interest_of(fd));
    }
    end_owner_timer(w);  // and so does its timer
    w.owner = &owner;
    ++w.owner_gen;
    w.unwatchable = 0;
}

// One fcntl: the cheapest call that fails with EBADF for a closed number.
// Asked of the loop's kernel: a simulated host's numbers are not the process's.
bool Scheduler::fd_number_closed(int fd) const {
    return detail::sys::fcntl(kernel(), fd, F_GETFD) == -1 && errno == EBADF;
}

// An owned fd: the owner hears, from the run phase, unless it forgot the fd
// first (forget_fd clears both fields, and this then does nothing). Its
// waiters stayed registered (unwatched) until now: their callables may be
// what keeps the owner alive (a connect in progress holds itself through
// its waiter). They go after it has heard, if it has not removed them.
void Scheduler::tell_owner_unwatchable(int fd) {
    if (static_cast<std::size_t>(fd) >= fds_.waiting.size()) return;
    FdWaiters& w = fds_.waiting[static_cast<std::size_t>(fd)];
    if (w.owner == nullptr || w.unwatchable == 0) return;
    end_owner_timer(w);
    FdOwner* owner = std::exchange(w.owner, nullptr);
    const int error = std::exchange(w.unwatchable, std::int16_t{0});
    const std::uint32_t gen = ++w.owner_gen;  // its queued readiness is dropped
    const FdCallbacks dropped = fds_.callbacks_of(fd);  // the owner may register new waiters on the same number: those stay
    owner->on_unwatchable(fd, std::error_code(error, std::generic_category()));
    FdWaiters& now = fds_.waiting[static_cast<std::size_t>(fd)];
    if (now.owner_gen == gen) unwatch_owned(now);  // nobody took the number meanwhile
    const FdCallbacks kept = fds_.callbacks_of(fd);
    if (live(dropped.read) && kept.read.slot == dropped.read.slot && kept.read.gen == dropped.read.gen)
        remove_waiter(fd, true);
    if (live(dropped.write) && kept.write.slot == dropped.write.slot && kept.write.gen == dropped.write.gen)
        remove_waiter(fd, false);
}

void Scheduler::drop_closed_fd(int fd, int error) {
    if (static_cast<std::size_t>(fd) >= fds_.waiting.size()) return;
    FdWaiters& w = fds_.waiting[static_cast<std::size_t>(fd)];
    if (w.owner != nullptr) {
        // The selector stops watching now; the waiters are removed once the
        // owner has heard (tell_owner_unwatchable).
        const bool queued = w.unwatchable != 0;
        w.unwatchable = static_cast<std::int16_t>(error);  // errno values fit
        selector_->set_interest(fd, Interest::none);
        if (!queued) call_soon([this, fd] { tell_owner_unwatchable(fd); });
        return;
    }
    ErrorContext ctx;
    ctx.fd = fd;
    ctx.message = error == EBADF
                      ? fmt::format("fd {} was closed while registered; its waiters were dropped", fd)
                      : fmt::format("fd {} cannot be watched ({}); its waiters were dropped", fd, std::strerror(error));
    const FdCallbacks c = fds_.callbacks_of(fd);
    for (Ref r : {c.read, c.write}) {
        if (live(r) && !ctx.origin_known) {
            ctx.origin = slots_[r.slot].where;
            ctx.origin_known = true;
        }
    }
    remove_waiter(fd, true);
    remove_waiter(fd, false);
    selector_->set_interest(fd, Interest::none);
    // Phases only enqueue: the report runs in the run phase like any callback.
    call_soon([this, ctx = std::move(ctx)] { call_exception_handler(ctx); });
}

}  // namespace reactor
