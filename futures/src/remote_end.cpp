// SPDX-License-Identifier: MIT
// futures::detail::RemoteEnd and the loop's RemoteEndPort (futures/detail/remote_end.hpp).
#include "futures/detail/remote_end.hpp"

#include <utility>

namespace futures::detail {
namespace {

// Settles once the remote work has ended: what a futures::Scope waits on
// after cancelling a child whose work runs on elsewhere.
class DrainState final : public State<void> {
public:
    DrainState(reactor::Scheduler& sched, std::source_location where) : State<void>(sched, where, false) {}
    std::string_view kind() const noexcept override { return "cancelled child whose work still runs elsewhere"; }
};

}  // namespace

std::shared_ptr<RemoteEnd> RemoteEnd::make(reactor::Scheduler& sched, std::source_location where) {
    return std::make_shared<RemoteEnd>(sched.service<RemoteEndPort>().mailbox(), where);
}

void RemoteEnd::ended() noexcept {
    if (ended_.exchange(true)) return;
    // Sequentially consistent with drain(): it sees ended_, or this sees wanted_.
    if (!wanted_.load()) return;
    std::shared_ptr<RemoteEnd> self;
    try {
        self = shared_from_this();
    } catch (...) {
        return;  // not owned by a shared_ptr: nobody can be watching
    }
    reactor::Callback refused;
    {
        std::lock_guard lock(mailbox_->mutex);
        if (mailbox_->sched == nullptr) return;
        reactor::Scheduler* sched = mailbox_->sched;
        try {
            reactor::Callback post([self, sched] { sched->service<RemoteEndPort>().arrived(*self); });
            if (!sched->try_call_soon_threadsafe(std::move(post), where_)) refused = std::move(post);
        } catch (...) {
            // Out of memory: the drain state is cancelled when the loop ends.
        }
    }
    // A refused post is destroyed here, outside the lock: it only lets go of this record.
}

Ref<StateBase> RemoteEnd::drain(reactor::Scheduler& sched) {
    wanted_.store(true);
    if (ended_.load()) return {};
    return sched.service<RemoteEndPort>().watch(*this, where_);
}

RemoteEndPort::RemoteEndPort(reactor::Scheduler& sched)
    : reactor::LoopService(sched), mailbox_(std::make_shared<RemoteEndMailbox>(sched)) {}

RemoteEndPort::~RemoteEndPort() {
    {
        std::lock_guard lock(mailbox_->mutex);
        mailbox_->sched = nullptr;
    }
    drop_all();
}

Ref<StateBase> RemoteEndPort::watch(RemoteEnd& end, std::source_location where) {
    auto it = watching_.find(&end);
    if (it != watching_.end()) return it->second.state;
    Ref<StateBase> state = Ref<StateBase>::adopt(new DrainState(scheduler(), where));
    reactor::WorkHold hold =
        scheduler().hold_work(reactor::LiveItem::Kind::job, "cancelled, its work still running", where);
    watching_.emplace(&end, Watch{end.shared_from_this(), state, std::move(hold)});
    return state;
}

void RemoteEndPort::arrived(RemoteEnd& end) noexcept {
    auto it = watching_.find(&end);
    if (it == watching_.end()) return;
    Watch w = std::move(it->second);
    watching_.erase(it);
    if (!w.state->pending()) return;
    try {
        static_cast<State<void>&>(*w.state).finish_value();
    } catch (...) {
        w.state->abandon("out of memory settling it");
    }
}

void RemoteEndPort::drop_all() noexcept {
    auto doomed = std::move(watching_);
    watching_.clear();
    for (auto& [end, w] : doomed)
        if (w.state->pending()) w.state->abandon("the loop ended before the cancelled work did");
}

}  // namespace futures::detail
