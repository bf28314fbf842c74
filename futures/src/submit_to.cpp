// SPDX-License-Identifier: MIT
// submit_to's non-template half: the caller loop's SubmitPort (the states
// waiting for an outcome, ended with that loop) and the delivery of an
// outcome through the port's mailbox.
#include "futures/submit_to.hpp"

#include <fmt/format.h>

#include <reactor/detail/world_mark.hpp>

namespace futures::detail {

void deliver(const std::shared_ptr<CrossCallBase>& call, reactor::Callback&& reply) noexcept {
    reactor::Callback refused;
    {
        std::lock_guard lock(call->mailbox->mutex);
        if (call->mailbox->sched != nullptr) {
            try {
                if (!call->mailbox->sched->try_call_soon_threadsafe(std::move(reply), call->where))
                    refused = std::move(reply);
            } catch (...) {
                // Out of memory queueing it: the caller's loop cancels the
                // state when it ends; nothing else can be done from here.
            }
        }
    }
    // A refused reply is destroyed here, outside the lock: it only lets go of
    // the shared record.
}

// Between hosts of one world: the job, a cancellation and the reply are
// posts the world delivers on its thread (it wakes a host at rest that was
// posted to). Anything else that involves a host, or a real loop while a
// world runs a host here: refused before anything is posted, not lost.
void refuse_sim_hosts(const reactor::Scheduler& caller, const reactor::Scheduler& target) {
    reactor::detail::refuse_cross_world(
        caller, target, "futures::submit_to",
        "submit between hosts of one world, call fn on this loop (call_soon), or connect to the other host instead");
}

std::exception_ptr target_closed_error(std::source_location where) {
    return std::make_exception_ptr(LoopClosedError(
        fmt::format("futures::submit_to: the target loop ended before the function submitted at {}:{} completed",
                    where.file_name(), where.line())));
}

SubmitPort::SubmitPort(reactor::Scheduler& sched)
    : reactor::LoopService(sched), mailbox_(std::make_shared<SubmitMailbox>(sched)) {}

SubmitPort::~SubmitPort() {
    {
        std::lock_guard lock(mailbox_->mutex);
        mailbox_->sched = nullptr;
    }
    drop_all();
}

void SubmitPort::track(const std::shared_ptr<CrossCallBase>& call, Ref<StateBase> state) {
    reactor::WorkHold hold = scheduler().hold_work(reactor::LiveItem::Kind::job, "submit_to", call->where);
    waiting_.emplace(call.get(), Waiting{call, std::move(state), std::move(hold)});
    call->port = this;
}

Ref<StateBase> SubmitPort::untrack(CrossCallBase& call) noexcept {
    call.port = nullptr;
    auto it = waiting_.find(&call);
    if (it == waiting_.end()) return {};
    Ref<StateBase> state = std::move(it->second.state);
    waiting_.erase(it);
    return state;
}

void SubmitPort::drop_all() noexcept {
    // Cancelling may schedule callbacks and drop other states: work on a copy.
    auto doomed = std::move(waiting_);
    waiting_.clear();
    for (auto& [call, w] : doomed) {
        call->port = nullptr;
        if (w.state && w.state->pending())
            w.state->abandon("futures::submit_to: the caller's loop was closed before the result came back");
    }
}

}  // namespace futures::detail
