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

}  // namespace reactor::detail
