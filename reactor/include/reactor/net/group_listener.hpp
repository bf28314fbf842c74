// SPDX-License-Identifier: MIT
// reactor::GroupListener: one listening address served by every loop of a
// LoopGroup. Each accepted connection belongs to one loop for its whole life:
// it is made (Connection::adopt) on that loop, its callbacks run there, and
// it closes there.
//
// Spreading (Spreading):
//   least_connections (the default, Seastar's): one loop (Options::acceptor)
//     accepts and hands each socket to the loop with the fewest live
//     connections, ties to the lowest index. Deterministic and balanced: the
//     count of a loop goes up when a socket is handed to it (before the loop
//     has even made the Connection) and down when that connection closes.
//   round_robin (muduo's, Netty's next()): the acceptor hands sockets to
//     loops 0, 1, 2, ... in turn, whatever their load.
//   reuse_port (nginx's `listen ... reuseport`): every loop has a listener of
//     its own on the same port (SO_REUSEPORT); the kernel picks one per
//     connection by a hash of the addresses, so no loop hands anything over,
//     but the spread ignores load (a few long connections can pile up on one
//     loop: Seastar turned it off for this "heavy load imbalance"), and
//     closing one of the listeners drops the connections queued on it (their
//     clients see a reset). TCP only.
// A group of one has no hand-off, whatever the spreading: its loop accepts
// for itself, as a plain Listener does.
// With a hand-off, a socket travels as a plain fd in a post
// (call_soon_threadsafe): the acceptor never makes a Connection for another
// loop. A loop that has ended refuses the post and the socket is closed (the
// client sees the connection end).
//
// Threads: listen() is called before LoopGroup::start(), on the thread that
// owns the group (the loops' loop-thread-only members may then be used from
// it): std::logic_error after. The accept callback runs on the connection's
// loop, with the loop's index. Each loop keeps its connections in a
// ConnectionSet of its own (for counting: put a connection in another set
// and it counts as closed). live_connections() and handed() may be read from
// any thread. close() and the destructor post each listener's close to its
// loop; the loops' end (LoopGroup::stop) closes what is left, each on its own
// loop. The GroupListener must not outlive its LoopGroup.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <source_location>
#include <vector>

#include "reactor/export.hpp"
#include "reactor/loop_group.hpp"
#include "reactor/net/address.hpp"
#include "reactor/net/connection.hpp"
#include "reactor/net/connection_set.hpp"
#include "reactor/net/listener.hpp"

namespace reactor {

enum class Spreading : std::uint8_t { least_connections, round_robin, reuse_port };

class REACTOR_API GroupListener {
public:
    // Runs on the connection's loop; `loop` is that loop's index.
    using AcceptCallback = std::function<void(const ConnectionPtr&, std::size_t loop)>;

    struct Options {
        Spreading spreading = Spreading::least_connections;
        std::size_t acceptor = 0;   // the loop that accepts, with a hand-off
        // backlog, accept_batch (per wake-up of the acceptor, or of each loop
        // with reuse_port), connection options... (hand_off, reuse_port and
        // open_count are ours). max_connections counts the connections of
        // every loop together (the fd limit is the process's): at that many,
        // a new client is closed at once, by the acceptor before any hand-off
        // (or, with reuse_port, by the loop whose listener took it: loops
        // that accept at the same moment may then go over by up to one each).
        Listener::Options listener;
    };

    // Binds, listens and arranges the spreading. Throws std::logic_error if
    // the group has started, std::out_of_range for an acceptor index out of
    // range, std::invalid_argument for reuse_port on a Unix address, and
    // what Listener::listen throws.
    [[nodiscard]] static std::unique_ptr<GroupListener> listen(
        LoopGroup& group, const Address& address, AcceptCallback on_accept, Options options,
        std::source_location where = std::source_location::current());
    [[nodiscard]] static std::unique_ptr<GroupListener> listen(
        LoopGroup& group, const Address& address, AcceptCallback on_accept,
        std::source_location where = std::source_location::current()) {
        return listen(group, address, std::move(on_accept), Options{}, where);
    }

    // Posts every listener's close() to its loop (connections go on).
    ~GroupListener();
    GroupListener(const GroupListener&) = delete;
    GroupListener& operator=(const GroupListener&) = delete;

    // The bound address, with the real port when port 0 was asked for.
    const Address& address() const noexcept { return address_; }
    // Any thread. Per loop: connections handed to (or, with reuse_port,
    // accepted by) the loop and not yet closed; and how many it got in all.
    std::vector<std::size_t> live_connections() const;
    std::vector<std::uint64_t> handed() const;
    // Any thread: posts every listener's close() to its loop. Idempotent.
    void close();

    // Loop `index`'s own thread (or the owning thread before start()), for
    // a layer that ends the server (GroupServerLifetime): the listener on
    // that loop, null if it has none (a hand-off loop that does not accept)
    // or close() took it; and the connections that loop serves.
    ListenerPtr listener_on(std::size_t index) const;
    ConnectionSet& connections_on(std::size_t index) const;

    struct Shared;  // what the loops share with this object (group_listener.cpp)

private:
    GroupListener(LoopGroup& group, std::shared_ptr<Shared> shared, Address address);

    LoopGroup& group_;
    std::shared_ptr<Shared> shared_;
    Address address_;
    std::atomic<bool> closed_{false};
};

}  // namespace reactor
