// SPDX-License-Identifier: MIT
// The World's run: which host runs next, and when virtual time moves
// (world.hpp). One step is one iteration of one host's loop.
#include "reactor/testing/sim/world.hpp"

#include "reactor/detail/world_mark.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <utility>

#include <fmt/format.h>

#include "crashes.hpp"
#include "host_clock.hpp"
#include "host_kernel.hpp"
#include "host_selector.hpp"
#include "network.hpp"

namespace reactor::testing::sim {

namespace {
// The crashes' stream of the seed, past the Network's (1 to 4: network.cpp).
constexpr std::uint64_t kCrashStream = 5;
constexpr std::uint64_t kTlsStream = 6;

// The mark's fill_random: eight bytes per draw, the last draw cut short.
void fill_from(void* context, unsigned char* out, std::size_t length) noexcept {
    Random& random = *static_cast<Random*>(context);
    while (length > 0) {
        std::uint64_t word = random.next();
        const std::size_t n = std::min(length, sizeof word);
        std::memcpy(out, &word, n);
        out += n;
        length -= n;
    }
}
}  // namespace

Host::Host(World& world, std::size_t index, std::string name)
    : world_(world), index_(index), name_(std::move(name)),
      clock_(std::make_shared<detail::HostClock>(*world.network_)) {
    in_addr ip{htonl(world.network_->ip_of(index))};
    char text[INET_ADDRSTRLEN] = "";
    ::inet_ntop(AF_INET, &ip, text, sizeof text);
    ip_ = text;
    resource_percent_ = world.network_->params().resource_fault_percent;
    boot();
}

void Host::boot() {
    detail::Network& network = *world_.network_;
    auto kernel = std::make_shared<detail::HostKernel>(network, index_, clock_);
    kernel->set_fd_limit(fd_limit_);
    kernel->set_resource_faults(resource_percent_, resource_calls_);
    auto selector = std::make_unique<detail::HostSelector>(network, *kernel, *clock_, index_);
    detail::HostSelector* selector_ptr = selector.get();
    Scheduler::Options options;
    options.selector = std::move(selector);
    options.kernel = kernel;
    options.clock = [clock = clock_] { return clock->now(); };  // the world's, plus the host's skew
    sched_ = std::make_unique<Scheduler>(std::move(options));
    kernel_ = std::move(kernel);
    selector_ = selector_ptr;
    ++boots_;
    network.set_down(index_, false);
    network.poke(index_);
    if (start_) program_ = world_.start_program(*this);
}

// The kernel first: nothing the program or the loop does while they are
// destroyed (closes, aborts) reaches the wire; the crash already told the
// peers. Then the program, whose destructors may still use the loop; then
// the loop, with whatever they left scheduled, unrun.
void Host::crash() {
    if (!sched_) return;
    kernel_->crash();
    program_.reset();
    sched_.reset();
    selector_ = nullptr;
    kernel_.reset();
    world_.network_->rest(index_);
    world_.network_->set_down(index_, true);
}

void Host::set_fd_limit(std::size_t limit) {
    fd_limit_ = limit;
    if (kernel_) kernel_->set_fd_limit(limit);
}

void Host::set_resource_faults(unsigned percent, unsigned calls) {
    resource_percent_ = percent;
    resource_calls_ = calls;
    if (kernel_) kernel_->set_resource_faults(percent, calls);
}

std::uint64_t Host::resource_faults() const noexcept { return world_.network_->resource_faults(index_); }

void Host::set_clock_skew(const ClockSkew& skew) {
    if (std::string why = skew.invalid(); !why.empty())
        throw std::invalid_argument(fmt::format("sim: clock skew {} for host {}: {}", to_string(skew), name_, why));
    clock_->set_skew(skew);
}

const ClockSkew& Host::clock_skew() const noexcept { return clock_->skew(); }

Scheduler& Host::scheduler() {
    if (!sched_) throw std::logic_error("sim: host " + name_ + " is down (crashed, not restarted)");
    return *sched_;
}

// The program before the loop it runs on (members are destroyed in reverse:
// program_ is declared last).
Host::~Host() = default;

World::World(std::uint64_t seed, Params params)
    : seed_(seed), params_(params), label_(fmt::format("sim world (seed {})", seed)), network_(std::make_unique<detail::Network>(seed, params)),
      crashes_(std::make_unique<detail::Crashes>(params, Random(seed).split(kCrashStream), network_->now())),
      tls_random_(Random(seed).split(kTlsStream)) {}

reactor::detail::WorldMark World::mark_for(const Host& host) noexcept {
    return reactor::detail::WorldMark{label_, host.name_, &fill_from, &tls_random_, host.sched_.get(), {}};
}

// Newest host first, as services end: what an older host serves may still be
// used by a newer one's closing connections, never the other way round.
World::~World() {
    while (!hosts_.empty()) hosts_.pop_back();
}

Host& World::host(std::string_view name) {
    if (auto found = network_->host_named(name)) return *hosts_[*found];
    const std::size_t index = network_->add_host(std::string(name));
    try {
        hosts_.push_back(std::unique_ptr<Host>(new Host(*this, index, std::string(name))));
    } catch (...) {
        network_->drop_last_host();  // nothing refers to it yet
        throw;
    }
    return *hosts_.back();
}

Host& World::host(std::string_view name, Host::Start start) {
    if (network_->host_named(name)) throw std::logic_error(fmt::format("sim: a host named {} exists already", name));
    Host& h = host(name);
    h.start_ = std::move(start);
    if (h.start_) h.program_ = start_program(h);
    return h;
}

// The host's start builds its program as a step would run it: marked, so
// that a real socket or a thread it reaches for is refused or kept here.
std::shared_ptr<void> World::start_program(Host& host) {
    const reactor::detail::WorldMark mark = mark_for(host);
    reactor::detail::WorldMarkScope marked(mark);
    std::shared_ptr<void> program = host.start_(host);
    reactor::detail::refuse_real_read(mark);  // real time or randomness read (reactor::sim_guard)
    return program;
}

void World::between_steps(std::function<void()> action) {
    if (running_) {
        network_->events().push(now(), std::move(action));
    } else {
        action();
    }
}

void World::crash(Host& host) {
    between_steps([&host] { host.crash(); });
}

void World::restart(Host& host) {
    between_steps([&host] {
        if (!host.up()) host.boot();
    });
}

TimePoint World::now() const noexcept { return network_->now(); }
Duration World::elapsed() const noexcept { return network_->now() - VirtualClock::kStart; }
const Trace& World::trace() const noexcept { return network_->trace(); }
Trace& World::trace() noexcept { return network_->trace(); }

RunStatus World::run_for(Duration duration) {
    const TimePoint limit = duration <= Duration::zero() ? now() : reactor::detail::saturating_add(now(), duration);
    return run(limit, nullptr) ? RunStatus::timed_out : RunStatus::idle;
}

bool World::run_until(const std::function<bool()>& done, Duration limit) {
    if (done()) return true;
    run(reactor::detail::saturating_add(now(), std::max(limit, Duration::zero())), &done);
    return done();
}

// Between steps, at a chance's time: the host drawn among those with a
// start function and up crashes now and restarts after its downtime (an
// event on the heap, so a world with a host down is not idle). Both are
// events of the trace, so a replay shows them.
void World::crash_chance() {
    std::vector<std::size_t> candidates;
    for (std::size_t i = 0; i < hosts_.size(); ++i)
        if (hosts_[i]->start_ && hosts_[i]->up()) candidates.push_back(i);
    const auto crash = crashes_->draw(candidates);
    if (!crash) return;
    Host& victim = *hosts_[crash->host];
    const TimePoint back = now() + crash->downtime;
    note_crash(victim, "crashes, down until", back);
    victim.crash();
    network_->events().push(back, [this, &victim] {
        if (victim.up()) return;  // restarted by hand meanwhile
        note_crash(victim, "restarts", now());
        victim.boot();
    });
}

void World::note_crash(const Host& host, std::string_view what, TimePoint at) {
    Trace& trace = network_->trace();
    const auto ns = [](TimePoint t) { return static_cast<std::uint64_t>((t - VirtualClock::kStart).count()); };
    trace.add(std::uint64_t{0xc7a5});  // apart from the network's events
    trace.add(static_cast<std::uint64_t>(host.index_));
    trace.add(ns(at));
    std::string line;
    if (trace.keeps_lines()) line = fmt::format("{:>12} ns  host {} {} {} ns", ns(now()), host.name(), what, ns(at));
    trace.event(line);
}

// One iteration of the host's loop, told apart as busy or idle by its
// selector (host_selector.hpp). An idle host rests until the network or its
// timer pokes it.
void World::step(Host& host) {
    ++steps_;
    const reactor::detail::WorldMark mark = mark_for(host);
    reactor::detail::WorldMarkScope marked(mark);
    host.selector_->begin_step();
    try {
        host.sched_->run_once();
    } catch (...) {
        host.selector_->end_step();
        throw;
    }
    if (host.selector_->end_step()) network_->rest(host.index_);
    reactor::detail::refuse_real_read(mark);  // real time or randomness read (reactor::sim_guard)
}

// Until `limit` (true: reached) or until nothing can happen (false), or
// until *done says so. At each instant: every event due is applied, then
// the runnable hosts run one step at a time, the next one drawn from the
// seed, until all rest; then time jumps to the next event.
bool World::run(TimePoint limit, const std::function<bool()>* done) {
    if (running_) throw std::logic_error("sim: World::run_for/run_until called from inside a run");
    running_ = true;
    struct Reset {
        bool& flag;
        ~Reset() { flag = false; }
    } reset{running_};
    network_->poke_all();  // the user may have scheduled anything on any host since the last run
    std::vector<std::size_t> runnable;
    std::uint64_t steps_now = 0;
    for (;;) {
        detail::EventQueue& events = network_->events();
        while (!events.empty() && events.next_time() <= now()) events.pop()();
        runnable.clear();
        for (std::size_t i = 0; i < hosts_.size(); ++i)
            if (network_->runnable(i) && hosts_[i]->up()) runnable.push_back(i);
        if (!runnable.empty()) {
            Host& next = *hosts_[runnable[network_->order_random().below(runnable.size())]];
            if (++steps_now > kMaxStepsPerInstant)
                throw std::runtime_error(fmt::format(
                    "sim: host {} ran {} loop iterations without virtual time passing (a callback that "
                    "reschedules itself at once?)",
                    next.name(), kMaxStepsPerInstant));
            step(next);
            if (done && (*done)()) return false;
            continue;
        }
        if (done && (*done)()) return false;
        // Nothing can happen any more: a crash chance alone does not keep
        // a world busy (crashes.hpp).
        if (events.empty()) return false;
        TimePoint at = events.next_time();
        const bool chance = crashes_->on() && crashes_->next() < at;
        if (chance) at = crashes_->next();
        if (at > limit) {
            network_->clock().advance_to(std::max(limit, now()));
            return true;
        }
        network_->clock().advance_to(at);
        if (chance) crash_chance();
        steps_now = 0;
    }
}

}  // namespace reactor::testing::sim
