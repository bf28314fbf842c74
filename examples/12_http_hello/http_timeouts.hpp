// SPDX-License-Identifier: MIT
// http::ConnectionTimeouts: the deadlines that keep slow clients from
// holding an http_hello connection (slowloris, slow POST), on one timer:
//   header  a request head must be complete this long after its first byte
//           (the first request's: after the accept)
//   body    a request body must be complete this long after its head (zero:
//           no limit); bytes that trickle in do not extend it
//   idle    no byte may take longer than this to come, at any time
// Re-armed lazily, as libuv and nginx do: a read only records the time; the
// timer re-checks when it fires and sleeps again if the deadline moved. Only
// a head or a body that starts and must end before the timer fires re-arms
// it: at most twice per request, never per byte. Loop thread only; cancel()
// (or the destructor) before whatever `on_expired` touches goes away.
#pragma once

#include <algorithm>
#include <functional>
#include <optional>

#include <reactor/scheduler.hpp>

namespace http {

struct Timeouts {
    reactor::Duration header;
    reactor::Duration idle;
    reactor::Duration body{};  // zero: no limit
};

class ConnectionTimeouts {
public:
    enum class Expired { header, body, idle };
    using Callback = std::function<void(Expired)>;

    // The header clock starts now: a new connection owes its first head.
    ConnectionTimeouts(reactor::Scheduler& sched, const Timeouts& timeouts, Callback on_expired)
        : sched_(sched), timeouts_(timeouts), on_expired_(std::move(on_expired)), last_byte_(sched.now()),
          head_started_(last_byte_) {
        arm();
    }
    ~ConnectionTimeouts() { timer_.cancel(); }
    ConnectionTimeouts(const ConnectionTimeouts&) = delete;
    ConnectionTimeouts& operator=(const ConnectionTimeouts&) = delete;

    void received() { last_byte_ = sched_.now(); }
    // Part of a head is in: starts the header clock unless it runs already.
    void head_begun() {
        if (head_started_) return;
        head_started_ = sched_.now();
        arm();
    }
    void head_complete() { head_started_.reset(); }
    // A body is still to come after its head: starts the body clock unless
    // it runs already (or the body timeout is off).
    void body_begun() {
        if (body_started_ || timeouts_.body == reactor::Duration::zero()) return;
        body_started_ = sched_.now();
        arm();
    }
    void body_complete() { body_started_.reset(); }
    void cancel() { timer_.cancel(); }

private:
    reactor::TimePoint deadline() const {
        reactor::TimePoint when = last_byte_ + timeouts_.idle;
        if (head_started_) when = std::min(when, *head_started_ + timeouts_.header);
        if (body_started_) when = std::min(when, *body_started_ + timeouts_.body);
        return when;
    }

    void arm() {
        reactor::TimePoint when = deadline();
        if (timer_.is_pending() && armed_for_ <= when) return;  // it fires in time, then re-checks
        timer_.cancel();
        armed_for_ = when;
        timer_ = sched_.call_at(when, [this] { fired(); });
    }

    void fired() {
        reactor::TimePoint now = sched_.now();
        if (head_started_ && now >= *head_started_ + timeouts_.header) return on_expired_(Expired::header);
        if (body_started_ && now >= *body_started_ + timeouts_.body) return on_expired_(Expired::body);
        if (now >= last_byte_ + timeouts_.idle) return on_expired_(Expired::idle);
        arm();
    }

    reactor::Scheduler& sched_;
    Timeouts timeouts_;
    Callback on_expired_;
    reactor::TimePoint last_byte_;
    std::optional<reactor::TimePoint> head_started_;
    std::optional<reactor::TimePoint> body_started_;
    reactor::Handle timer_;
    reactor::TimePoint armed_for_{};
};

}  // namespace http
