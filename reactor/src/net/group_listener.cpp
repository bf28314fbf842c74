// SPDX-License-Identifier: MIT
// GroupListener: the acceptor's hand-off of sockets to the group's loops, or
// one SO_REUSEPORT listener per loop, and the per-loop counts (see
// group_listener.hpp).
#include "reactor/net/group_listener.hpp"

#include <unistd.h>

#include <stdexcept>
#include <utility>

#include <fmt/format.h>

#include "reactor/detail/kernel_calls.hpp"
#include "reactor/net/connection_set.hpp"

#include "socket_ops.hpp"

namespace reactor {

// One loop's share. The counts are atomics read by the acceptor and by
// live_connections(); the rest is the loop's own.
struct LoopShare {
    std::shared_ptr<std::atomic<std::size_t>> live = std::make_shared<std::atomic<std::size_t>>(0);
    std::atomic<std::uint64_t> handed{0};
    ConnectionSetPtr set;  // this loop's connections, for counting them out
    // What the connections handed to this loop share (their loop, line,
    // marks and read size), as a Listener's do: made at listen().
    detail::HeldProfile profile;
    ListenerPtr listener;  // the acceptor's, or this loop's (reuse_port); closed and dropped on the loop
};

struct GroupListener::Shared {
    LoopGroup* group = nullptr;
    AcceptCallback on_accept;
    ConnectionOptions connection;
    Spreading spreading = Spreading::least_connections;
    std::source_location where;
    std::vector<std::unique_ptr<LoopShare>> loops;
    std::size_t next = 0;  // round_robin: the acceptor's thread only

    // Every loop's live connections: what Listener::Options::max_connections
    // is compared with, across the group (any thread).
    std::size_t open_total() const {
        std::size_t n = 0;
        for (const auto& l : loops) n += l->live->load();
        return n;
    }

    std::size_t pick() {
        if (spreading == Spreading::round_robin) return std::exchange(next, (next + 1) % loops.size());
        std::size_t best = 0;
        std::size_t fewest = loops[0]->live->load();
        for (std::size_t i = 1; i < loops.size(); ++i) {
            const std::size_t n = loops[i]->live->load();
            if (n < fewest) {
                fewest = n;
                best = i;
            }
        }
        return best;
    }

    // On loop `index`: the Connection of an accepted socket handed to it
    // (peer read here: the acceptor does not carry it over).
    ConnectionPtr adopt_on(std::size_t index, int fd) {
        detail::UniqueFd owned(loops[index]->profile->kernel, fd);
        const Address peer = Address::peer_of(loops[index]->profile->kernel, fd);
        return Connection::adopt_accepted(*loops[index]->profile, owned.release(), peer, connection);
    }

    // On loop `index`, which the connection now belongs to.
    void welcome(const ConnectionPtr& conn, std::size_t index) {
        loops[index]->set->add(conn);
        if (on_accept) on_accept(conn, index);
    }
};

namespace {

// An accepted socket on its way to a loop: closed if it never gets there.
class TravellingFd {
public:
    // `kernel`: the accepting loop's (Scheduler::kernel()), whose fd it is.
    TravellingFd(Kernel* kernel, int fd) noexcept : kernel_(kernel), fd_(fd) {}
    TravellingFd(TravellingFd&& other) noexcept : kernel_(other.kernel_), fd_(std::exchange(other.fd_, -1)) {}
    TravellingFd& operator=(TravellingFd&&) = delete;
    ~TravellingFd() {
        if (fd_ >= 0) detail::sys::close(kernel_, fd_);
    }
    int release() noexcept { return std::exchange(fd_, -1); }

private:
    Kernel* kernel_;
    int fd_;
};

// The loop `index` makes the Connection. If it never runs this (its loop
// ended), the socket is closed and counted out.
struct Arrival {
    std::shared_ptr<GroupListener::Shared> shared;
    std::size_t index;
    TravellingFd fd;
    bool arrived = false;

    Arrival(std::shared_ptr<GroupListener::Shared> s, std::size_t i, TravellingFd f)
        : shared(std::move(s)), index(i), fd(std::move(f)) {}
    Arrival(Arrival&&) noexcept = default;
    Arrival& operator=(Arrival&&) = delete;
    ~Arrival() {
        if (shared && !arrived) shared->loops[index]->live->fetch_sub(1);
    }

    void operator()() {
        arrived = true;
        ConnectionPtr conn;
        try {
            conn = shared->adopt_on(index, fd.release());
        } catch (...) {
            shared->loops[index]->live->fetch_sub(1);  // adopt closed the fd
            throw;  // to this loop's exception handler
        }
        shared->welcome(conn, index);
    }
};

}  // namespace

GroupListener::GroupListener(LoopGroup& group, std::shared_ptr<Shared> shared, Address address)
    : group_(group), shared_(std::move(shared)), address_(std::move(address)) {}

std::unique_ptr<GroupListener> GroupListener::listen(LoopGroup& group, const Address& address,
                                                     AcceptCallback on_accept, Options options,
                                                     std::source_location where) {
    if (group.started())
        throw std::logic_error("reactor: GroupListener::listen after the LoopGroup started (call it before start())");
    if (options.spreading != Spreading::reuse_port && options.acceptor >= group.size())
        throw std::out_of_range(
            fmt::format("reactor: GroupListener acceptor loop {} of a group of {}", options.acceptor, group.size()));
    if (options.spreading == Spreading::reuse_port && !address.is_ip())
        throw std::invalid_argument("reactor: GroupListener reuse_port needs a TCP address");
    auto shared = std::make_shared<Shared>();
    shared->group = &group;
    shared->on_accept = std::move(on_accept);
    shared->connection = options.listener.connection;
    shared->spreading = options.spreading;
    shared->where = where;
    for (std::size_t i = 0; i < group.size(); ++i) {
        auto share = std::make_unique<LoopShare>();
        share->set = ConnectionSet::create(group.loop(i));
        share->profile.reset(&(new detail::ConnectionProfile(group.loop(i), where, options.listener.connection))->hold());
        share->set->set_leave_hook([live = share->live] { live->fetch_sub(1); });
        shared->loops.push_back(std::move(share));
    }
    std::weak_ptr<Shared> weak = shared;
    Address bound = address;
    // max_connections counts the whole group's connections, wherever they
    // were handed (one fd limit for the process).
    if (options.listener.max_connections > 0)
        options.listener.open_count = [weak] {
            auto s = weak.lock();
            return s ? s->open_total() : 0;
        };
    // reuse_port, or a group of one: each loop's own listener accepts its
    // connections, with no hand-off (a one-loop server would otherwise post
    // every client to itself, a wake-up write each, for nothing).
    if (options.spreading == Spreading::reuse_port || group.size() == 1) {
        options.listener.hand_off = nullptr;
        options.listener.reuse_port = options.spreading == Spreading::reuse_port;
        for (std::size_t i = 0; i < group.size(); ++i) {
            auto on_conn = [weak, i](const ConnectionPtr& conn) {
                auto s = weak.lock();
                if (!s) return;
                s->loops[i]->live->fetch_add(1);
                s->loops[i]->handed.fetch_add(1);
                s->welcome(conn, i);
            };
            shared->loops[i]->listener = Listener::listen(group.loop(i), bound, on_conn, options.listener, where);
            bound = shared->loops[i]->listener->address();  // the port picked for port 0
        }
    } else {
        const std::size_t acceptor = options.acceptor;
        options.listener.hand_off = [weak, kernel = group.loop(acceptor).kernel()](int fd) {
            TravellingFd guard(kernel, fd);
            auto s = weak.lock();
            if (!s) return;
            const std::size_t i = s->pick();
            s->loops[i]->live->fetch_add(1);
            s->loops[i]->handed.fetch_add(1);
            // Refused (that loop ended): the Arrival dies here, closing the
            // socket and counting it out.
            (void)s->group->loop(i).try_call_soon_threadsafe(Arrival(s, i, std::move(guard)), s->where);
        };
        shared->loops[acceptor]->listener =
            Listener::listen(group.loop(acceptor), bound, Listener::AcceptCallback{}, options.listener, where);
        bound = shared->loops[acceptor]->listener->address();
    }
    return std::unique_ptr<GroupListener>(new GroupListener(group, std::move(shared), bound));
}

GroupListener::~GroupListener() { close(); }

void GroupListener::close() {
    if (closed_.exchange(true)) return;
    for (std::size_t i = 0; i < shared_->loops.size(); ++i) {
        if (!shared_->loops[i]->listener) continue;
        Scheduler& loop = group_.loop(i);
        // On the loop: its listener is loop-bound. A loop that ended closed
        // it already (its close()).
        (void)loop.try_call_soon_threadsafe([s = shared_, i] {
            if (ListenerPtr l = std::move(s->loops[i]->listener)) l->close();
        });
    }
}

ListenerPtr GroupListener::listener_on(std::size_t index) const { return shared_->loops.at(index)->listener; }

ConnectionSet& GroupListener::connections_on(std::size_t index) const { return *shared_->loops.at(index)->set; }

std::vector<std::size_t> GroupListener::live_connections() const {
    std::vector<std::size_t> out;
    for (const auto& l : shared_->loops) out.push_back(l->live->load());
    return out;
}

std::vector<std::uint64_t> GroupListener::handed() const {
    std::vector<std::uint64_t> out;
    for (const auto& l : shared_->loops) out.push_back(l->handed.load());
    return out;
}

}  // namespace reactor
