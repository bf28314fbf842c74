// SPDX-License-Identifier: MIT
// The "a world runs a host here" mark and its checks (reactor/detail/world_mark.hpp).
#include "reactor/detail/world_mark.hpp"

#include <stdexcept>

#include <fmt/format.h>

#include "reactor/kernel.hpp"
#include "reactor/scheduler.hpp"

namespace reactor::detail {
namespace {
thread_local const WorldMark* t_mark = nullptr;

// The world a Scheduler belongs to, for an error: the running host's, or
// "a sim world" for a host's Scheduler used outside a run.
std::string where_from(const WorldMark* mark) {
    if (mark == nullptr) return "a sim world's host";
    return fmt::format("{} host {}", mark->world, mark->host);
}
}  // namespace

const WorldMark* world_mark() noexcept { return t_mark; }

WorldMarkScope::WorldMarkScope(const WorldMark& mark) noexcept : previous_(t_mark) { t_mark = &mark; }
WorldMarkScope::~WorldMarkScope() { t_mark = previous_; }

bool runs_in_world(const Scheduler& sched) noexcept {
    if (t_mark != nullptr) return true;
    const Kernel* kernel = sched.kernel();
    return kernel != nullptr && kernel->simulated();
}

void refuse_real_socket(const Kernel* kernel, std::string_view call) {
    if (t_mark == nullptr || (kernel != nullptr && kernel->simulated())) return;
    throw std::logic_error(fmt::format(
        "reactor: {} would open a real socket ({} kernel) while {} runs: inside a world, sockets are made "
        "on a host's Scheduler (host.scheduler()), so that the run depends on its seed alone",
        call, kernel == nullptr ? std::string_view("the C library's") : kernel->name(), where_from(t_mark)));
}

void refuse_real_read(const WorldMark& mark) {
    const RealRead& read = mark.real_read;
    if (read.kind == RealRead::Kind::none) return;
    std::string_view what = "real time";
    std::string_view instead = "a host's time is its Scheduler::now()";
    if (read.kind == RealRead::Kind::calendar) {
        instead = "a host's calendar is its Scheduler::wall_clock()";
    } else if (read.kind == RealRead::Kind::randomness) {
        what = "real randomness";
        instead = "a host draws from a generator seeded from the world's seed (sim::Random(world.seed()))";
    }
    throw std::logic_error(fmt::format("reactor: {} host {} read {}: {}; {}", mark.world, mark.host, what,
                                       read.call != nullptr ? read.call : "?", instead));
}

void refuse_cross_thread(const Scheduler& sched, std::string_view call, std::string_view instead) {
    if (!runs_in_world(sched)) return;
    throw std::logic_error(fmt::format(
        "reactor: {} from {}: a world runs all its hosts on one thread, and work handed to another thread or "
        "loop would make a run depend on more than its seed; {}",
        call, where_from(t_mark), instead));
}

namespace {
const void* world_of(const Scheduler& sched) noexcept {
    const Kernel* kernel = sched.kernel();
    return kernel == nullptr ? nullptr : kernel->world();
}

std::string loop_text(const Scheduler& sched) {
    if (world_of(sched) == nullptr) return "a Scheduler that is no world's host";
    return fmt::format("the Scheduler of {}", sched.kernel()->name());
}
}  // namespace

void refuse_cross_world(const Scheduler& from, const Scheduler& to, std::string_view call, std::string_view instead) {
    const void* from_world = world_of(from);
    const void* to_world = world_of(to);
    if (from_world == nullptr && to_world == nullptr) {
        refuse_cross_thread(from, call, instead);
        return;
    }
    if (from_world == to_world) return;
    const std::string running = t_mark == nullptr ? std::string() : fmt::format(" while {} runs", where_from(t_mark));
    const std::string_view why = from_world != nullptr && to_world != nullptr
                                     ? "the two are hosts of different worlds"
                                     : "one is a world's host and the other is not";
    throw std::logic_error(fmt::format(
        "reactor: {} from {} to {}{}: {}; only the hosts of one world post to each other (the world steps "
        "them on its one thread, in an order drawn from its seed), and any other post would make a run depend "
        "on more than its seed; {}",
        call, loop_text(from), loop_text(to), running, why, instead));
}

}  // namespace reactor::detail
