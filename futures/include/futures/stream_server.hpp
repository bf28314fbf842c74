// SPDX-License-Identifier: MIT
// futures/stream_server.hpp: start_server, a listening server whose handler
// gets one futures::Stream per client (asyncio's start_server). Part of
// futures/stream.hpp, which includes it.
#pragma once

#include <cstdint>
#include <functional>
#include <source_location>
#include <string_view>

#include <reactor/net/address.hpp>
#include <reactor/scheduler.hpp>

#include "futures/future.hpp"
#include "futures/stream.hpp"

namespace futures {

// A listening server whose handler gets one Stream per client. A handle:
// copies share the server; it keeps listening until close() (or until the
// last handle goes).
//
// The server's scope. Every conversation is a child of a supervising
// futures::Scope the server owns (futures/scope.hpp; listed by
// Scheduler::live() under start_server's line): a conversation that fails
// ends alone, the others go on, and its error goes to the loop's exception
// handler as it ends, once ("stream server ADDR (started at LINE): a
// conversation failed (from the conversation's line): what()"), never as
// "exception was never retrieved". wait_closed() and serve_until() wait for
// the scope: they complete only after every conversation has settled, one
// loop turn after its future completed, so after the continuations its
// completion queued (the catch_error and finally at the end of a handler's
// chain): run_until_complete on either needs no sched.run() after it.
class REACTOR_API StreamServer {
public:
    // Called for each client; returns the future of its conversation (usually
    // spawn(sched, Session(stream)), or a then-chain ending in catch_error and
    // finally). When that future completes the stream is closed (gracefully)
    // if it is still open; an error it ends with is reported as the server's
    // scope says (above).
    using Handler = std::function<Future<void>(Stream)>;

    StreamServer() = default;
    const reactor::Address& address() const;  // with the real port when 0 was asked
    // Stops accepting; conversations in progress go on.
    void close();
    bool is_serving() const;
    // Conversations whose future is not complete yet.
    std::size_t active() const;
    std::uint64_t accepted() const;
    // Clients closed at once because StreamOptions::max_connections were open.
    std::uint64_t turned_away() const;
    // Graceful close of every client connection still open: buffered output
    // is flushed first; the handlers' pending reads end as at EOF.
    void close_clients();
    // Aborts every client connection still open, active conversation or not
    // (the handlers see reads fail; unsent output is discarded).
    void abort_clients();

    // ---- graceful shutdown (asyncio's Server.wait_closed and serve_forever) ----
    // Done once the server is closed, every connection it accepted has
    // closed, and every conversation has settled (see "The server's scope").
    // Never fails (cancelled, with BrokenPromise, if the loop ends first).
    [[nodiscard]] Future<void> wait_closed(std::source_location where = std::source_location::current());
    // Serves until `stop` completes (done, failed or cancelled: a signal, a
    // request, a timer), then closes the server, gives the connections still
    // open `drain` to finish by themselves, then aborts the rest (a
    // conversation waiting on its stream then ends: its read or drain fails),
    // and is done as wait_closed() is. A conversation that waits on something
    // else past that is waited for (bound it with with_timeout). Never fails.
    [[nodiscard]] Future<void> serve_until(Future<void> stop, reactor::Duration drain,
                                           std::source_location where = std::source_location::current());
    // `drain` in seconds (reactor::from_seconds: negative or NaN throws
    // std::invalid_argument naming "serve_until: drain").
    template <reactor::SecondsCount S>
    [[nodiscard]] Future<void> serve_until(Future<void> stop, S drain,
                                           std::source_location where = std::source_location::current()) {
        const reactor::Duration d = reactor::from_seconds(static_cast<double>(drain), "serve_until: drain");
        return serve_until(std::move(stop), d, where);
    }
    // The same with a stop that carries a value, such as
    // futures::next_signal(sched, {SIGINT, SIGTERM})'s signal number: the
    // value is ignored, the completion is what counts.
    template <class T>
        requires(!std::is_void_v<T>)
    [[nodiscard]] Future<void> serve_until(Future<T> stop, reactor::Duration drain,
                                           std::source_location where = std::source_location::current()) {
        return serve_until(stop.then([](const T&) {}, where), drain, where);
    }
    template <class T, reactor::SecondsCount S>
        requires(!std::is_void_v<T>)
    [[nodiscard]] Future<void> serve_until(Future<T> stop, S drain,
                                           std::source_location where = std::source_location::current()) {
        const reactor::Duration d = reactor::from_seconds(static_cast<double>(drain), "serve_until: drain");
        return serve_until(stop.then([](const T&) {}, where), d, where);
    }

private:
    friend StreamServer start_server(reactor::Scheduler&, const reactor::Address&, Handler, StreamOptions,
                                     std::source_location);
    std::shared_ptr<detail::ServerCore> core_;
};

// Binds and starts accepting (port 0 allowed; Unix addresses too). Throws
// std::system_error (e.g. EADDRINUSE) like reactor::Listener::listen.
// `where` (your line) names the server: a handler that throws is reported
// with it.
[[nodiscard]] REACTOR_API StreamServer start_server(reactor::Scheduler& sched, const reactor::Address& address,
                                        StreamServer::Handler handler, StreamOptions options = {},
                                        std::source_location where = std::source_location::current());
// By host, as asyncio's start_server(host=...): a future, because a name is
// looked up off the loop thread (futures::resolve, on the default thread
// pool). A numeric host ("127.0.0.1", "::1") binds at once and the future is
// ready on return. The server listens on the first address the lookup gives
// (one listener per server; for both families, start one server per
// address). A failed lookup fails the future with its std::system_error in
// reactor::resolve_category() naming the host, a failed bind with the
// Listener's (EADDRINUSE...). Cancelling the future before it is done cancels
// the lookup. An empty handler throws std::invalid_argument at once.
[[nodiscard]] REACTOR_API Future<StreamServer> start_server(reactor::Scheduler& sched, std::string_view host, std::uint16_t port,
                                                StreamServer::Handler handler, StreamOptions options = {},
                                                std::source_location where = std::source_location::current());

}  // namespace futures
