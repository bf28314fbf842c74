// SPDX-License-Identifier: MIT
// Countdown: the whole demo of countdown.cpp as a component on a Scheduler it
// is given, printing through a sink it is given: the program's main() runs it
// on a real loop and prints to stdout; tests/test_countdown.cpp runs the same
// logic on virtual time (reactor/testing/) and reads every line.
//
// Three concurrent activities on one loop:
//   - a countdown from `from` saying "Down n" every 4 s,
//   - a countup saying "Up i" every 1 s while the countdown runs,
//   - the echo server of line_echo.hpp on 127.0.0.1.
// Each generator of Beazley's talk becomes a member function that does one
// step and schedules the next. After "Down 1" it closes the echo server and
// calls on_finished (the program stops its loop there). Loop thread only;
// destroy it before its Scheduler (it cancels its timers).
#pragma once

#include <chrono>
#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <utility>

#include <fmt/format.h>
#include <reactor/scheduler.hpp>

#include "line_echo.hpp"

namespace countdown {

struct Settings {
    int from = 6;            // count down from this number, 1 or more
    double speed = 1;        // every delay is divided by it; finite and > 0
    std::uint16_t port = 0;  // of the echo server; 0 picks a free one
};

class Countdown {
public:
    // Opens the echo server's socket at once: throws std::runtime_error
    // naming the address if it cannot, std::invalid_argument for settings out
    // of range. Nothing is printed or scheduled before start().
    Countdown(reactor::Scheduler& sched, Settings settings, Sink say, std::function<void()> on_finished)
        : sched_(sched), settings_(checked(settings)), say_(std::move(say)), on_finished_(std::move(on_finished)),
          server_(std::make_unique<LineEcho>(sched, settings.port, say_)) {}
    ~Countdown() {
        down_.cancel();
        up_.cancel();
    }
    Countdown(const Countdown&) = delete;
    Countdown& operator=(const Countdown&) = delete;

    std::uint16_t port() const { return port_; }

    // Says "listening on 127.0.0.1:PORT", starts accepting, and starts both
    // counts (their first lines come from the loop's next iteration).
    void start() {
        say_(fmt::format("listening on 127.0.0.1:{}", port_));
        server_->start();
        down_ = sched_.call_soon([this] { count_down(settings_.from); });
        up_ = sched_.call_soon([this] { count_up(0); });
    }

private:
    using Seconds = std::chrono::duration<double>;

    static Settings checked(Settings s) {
        if (s.from < 1) throw std::invalid_argument(fmt::format("from must be 1 or more, not {}", s.from));
        if (!std::isfinite(s.speed) || s.speed <= 0) {
            throw std::invalid_argument(fmt::format("speed must be finite and > 0, not {}", s.speed));
        }
        return s;
    }
    Seconds scaled(Seconds d) const { return d / settings_.speed; }

    // A generator's "sleep(4)" desugared into a timer callback.
    void count_down(int n) {
        say_(fmt::format("Down {}", n));
        if (n > 1) {
            down_ = sched_.call_later(scaled(Seconds(4)), [this, n] { count_down(n - 1); });
            return;
        }
        say_("countdown finished; closing the echo server");
        server_.reset();
        up_.cancel();
        if (on_finished_) on_finished_();
    }
    // Counts while the countdown runs: 4 s per Down step, so 4 * (from - 1) lines.
    void count_up(int i) {
        if (i >= 4 * (settings_.from - 1)) return;
        say_(fmt::format("Up {}", i));
        up_ = sched_.call_later(scaled(Seconds(1)), [this, i] { count_up(i + 1); });
    }

    reactor::Scheduler& sched_;
    Settings settings_;
    Sink say_;
    std::function<void()> on_finished_;
    std::unique_ptr<LineEcho> server_;
    std::uint16_t port_ = server_->port();
    reactor::Handle down_, up_;
};

}  // namespace countdown
