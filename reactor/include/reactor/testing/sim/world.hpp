// SPDX-License-Identifier: MIT
// reactor::testing::sim::World: many hosts, one thread, virtual time, one
// seed. Each Host has its own Scheduler, whose sockets make their system
// calls to a simulated kernel (reactor/kernel.hpp) and whose selector asks
// that kernel what is ready: the library's own Listener, Connection,
// connect() and everything above them run unchanged, over a simulated TCP
// between the hosts (FoundationDB's Sim2, tokio's turmoil). Nothing inside
// a world touches a real socket or reads real time.
//
//     sim::World world(seed);
//     sim::Host& server = world.host("server");      // 10.0.0.1
//     auto listener = Listener::listen(server.scheduler(), server.address(7), on_accept);
//     sim::Host& client = world.host("client");      // 10.0.0.2
//     connect(client.scheduler(), "server", 7, on_connect);   // names resolve in the world
//     world.run_for(10s);                            // virtual seconds: milliseconds of real time
//     world.trace().hash();                          // the same for the same seed, every run
//
// Driving: the World runs the hosts, one loop iteration at a time, in an
// order drawn from the seed among the hosts that have something to do at the
// current virtual instant; when none has, time jumps to the next event (a
// segment arriving, a timer coming due). A host's Scheduler is never run
// directly (its selector refuses: std::logic_error): world.run_for/run_until
// run it.
//
// What is simulated (this slice): TCP over IPv4 between the hosts (connect,
// accept, send and receive, shutdown, close; FIN and RST, a refused connect;
// latency per ordered host pair and jitter per segment from the seed; a
// bounded buffer per direction giving EAGAIN; short reads and writes); names
// of hosts for getaddrinfo; faults drawn from the seed when Params turns
// them on (connections broken after a prefix, refused connects, clogged
// links, partitions both ways and one way that heal); hosts that crash
// and restart, by hand or drawn from the seed (Params::crash_percent: only
// hosts made with a start function). UDP over IPv4 too (UdpSocket runs
// unchanged: datagrams with the pair's latency and jitter, in order unless
// Params draws them lost, duplicated or reordered; a port nobody bound
// answers ICMP port-unreachable, which UdpSocket reports as ECONNREFUSED,
// as on Linux; partitions and clogs hold TCP only). Per host: a limit on
// open fds (Host::set_fd_limit: EMFILE at socket and accept) and a clock
// skew (Host::set_clock_skew, clock_skew.hpp: linear, step, periodic).
// Kernel resources failing (Params::resource_fault_percent, or per host
// Host::set_resource_faults): accept4(), connect(), send() and recv() of
// TCP (and socket(), when a host asks) fail with ENOBUFS or ENOMEM, drawn
// per call.
// Not yet: Unix sockets, pipes, IPv6; UDP calls and the other system
// calls (epoll, eventfd) never fail for want of resources.
//
// What escapes a world, and what the library does about it (the checks
// are on cold paths: opening a socket, submitting a job; the World marks the
// thread while it runs a host's loop or start, reactor/detail/world_mark.hpp):
//   - a real socket opened while a host runs (Listener::listen,
//     reactor::connect, UdpSocket::bind on a Scheduler that is not a host's):
//     refused, std::logic_error "reactor: Listener::listen would open a real
//     socket (the C library's kernel) while sim world (seed 7) host server
//     runs: ...";
//   - ThreadPool::submit and futures::run_in_executor from a host (or on a
//     host's Scheduler from anywhere): the job runs on that host's loop, work
//     then `done` in one callback after the submitting one, never on a worker
//     (any pool; pool shutdown does not cancel it; no queue capacity);
//   - futures::resolve on a host: the world's names, at once, on the loop;
//   - futures::submit_to between hosts of one world (a host and itself
//     too): fn runs on the target host's loop, as simulated work. Its posts
//     (the job, a cancellation, the reply), like any call_soon_threadsafe
//     one host makes to another, wake a host at rest: the loop of a host
//     whose selector found nothing stays announced as asleep, and the
//     wake-up its post would write to the eventfd goes to its kernel
//     (Kernel::loop_rests, wake_loop), which makes the host runnable, noted
//     in the trace. The posts run in an order drawn from the seed, at the
//     instant they were made. A target that crashes before fn ran fails the
//     future with futures::LoopClosedError. Refused, std::logic_error
//     "reactor: futures::submit_to from the Scheduler of sim a to a
//     Scheduler that is no world's host ...": a host to a real Scheduler or
//     to another world's host, and such a loop to a host (that post would
//     come from another thread, or at a time no seed decides). A post to a
//     host from another thread is not checked on the post path: it wakes
//     nothing, the host takes it at some later step, and the run then
//     depends on more than its seed;
//   - time: a host's Scheduler::now() and its timers are the world's virtual
//     clock (plus the host's skew, if it has one), and its
//     Scheduler::wall_clock() (the calendar) is World::kEpoch plus the
//     host's time passed. Real time and randomness read by a host's code
//     directly (std::chrono::steady_clock and system_clock, clock_gettime,
//     gettimeofday, time, getrandom, getentropy) the library cannot see; a
//     program that links reactor::sim_guard (testing/sim/real_time_guard.hpp,
//     which interposes those C library calls) has them answered from the
//     world and the run failed after that step, std::logic_error "reactor:
//     sim world (seed 7) host server read real time:
//     clock_gettime(CLOCK_MONOTONIC); a host's time is its Scheduler::now()".
//     TLS runs over a host's Connection; OpenSSL draws its
//     handshake randomness from getrandom unless a sim::TlsRandomness
//     (testing/sim/tls_randomness.hpp, in reactor::tls) lives: then, while a
//     host runs, from a stream of the world's seed, and a TLS run replays.
// Loop thread only: a world and its hosts belong to the thread that made them.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "reactor/export.hpp"
#include "reactor/net/address.hpp"
#include "reactor/scheduler.hpp"
#include "reactor/detail/world_mark.hpp"
#include "reactor/testing/sim/clock_skew.hpp"
#include "reactor/testing/sim/params.hpp"
#include "reactor/testing/sim/random.hpp"
#include "reactor/testing/sim/trace.hpp"

namespace reactor::testing::sim {

namespace detail {
class Crashes;
class HostClock;
class HostKernel;
class HostSelector;
class Network;
}  // namespace detail

class World;

class REACTOR_API Host {
public:
    ~Host();
    Host(const Host&) = delete;
    Host& operator=(const Host&) = delete;

    const std::string& name() const noexcept { return name_; }
    // Its IPv4 address inside the world ("10.0.0.1" for the first host).
    const std::string& ip() const noexcept { return ip_; }
    Address address(std::uint16_t port) const { return Address::parse(ip_, port); }
    // Its loop: schedule on it, make sockets with it; the World runs it.
    // A crashed host has none until it restarts: std::logic_error.
    Scheduler& scheduler();
    World& world() noexcept { return world_; }
    // False from World::crash until World::restart.
    bool up() const noexcept { return sched_ != nullptr; }
    // Times it was started: 1 at first, one more at each restart.
    unsigned boots() const noexcept { return boots_; }
    // Its kernel's limit on open fds (RLIMIT_NOFILE; 0, the default: none):
    // at the limit, socket() and accept4() fail with EMFILE (a connection
    // then waits in its listener's queue), so reactor::connect reports
    // EMFILE and a Listener pauses accepting (Listener::Options::
    // accept_pause) until fds are free. Kept across restarts; lowering it
    // closes nothing.
    void set_fd_limit(std::size_t limit);
    std::size_t fd_limit() const noexcept { return fd_limit_; }
    // Its kernel's resources failing (Params::resource_fault_percent, which
    // every host starts with, on survived_calls): from now on each of the
    // `calls` named (a mask of ResourceCall) fails with this chance, with
    // the errno Params names. socket() is only in the mask when asked for:
    // a Listener::listen whose socket() fails throws to its caller (a
    // server that cannot start), which a world's program does not survive
    // (a connect's socket() failing is reported like connect()'s). A test
    // turns it on for one host, or one call, to watch what the library
    // does. Kept across restarts.
    enum ResourceCall : unsigned { socket_call = 1, accept_call = 2, connect_call = 4, send_call = 8, recv_call = 16,
                                   survived_calls = 30, all_calls = 31 };
    void set_resource_faults(unsigned percent, unsigned calls = survived_calls);
    unsigned resource_fault_percent() const noexcept { return resource_percent_; }
    // How many of its calls failed so (since the world began, restarts
    // included): an invariant may allow what they cause on this host's
    // connections, and only then.
    std::uint64_t resource_faults() const noexcept;
    // Its clock's offset from the world's (clock_skew.hpp; none by
    // default): from now on its Scheduler::now(), its timers and its
    // wall_clock() run on world time plus skew.offset_at(elapsed()). A
    // model that could take the clock back: std::invalid_argument. Kept
    // across restarts.
    void set_clock_skew(const ClockSkew& skew);
    const ClockSkew& clock_skew() const noexcept;

    // What a host runs, made again at each restart: it builds the host's
    // program on host.scheduler() and returns what keeps it alive (its
    // listeners, its connections, its state). The World owns what it
    // returns until the host crashes.
    using Start = std::function<std::shared_ptr<void>(Host&)>;

private:
    friend class World;
    Host(World& world, std::size_t index, std::string name);
    void boot();   // a fresh kernel, selector and Scheduler; then start_, if any
    void crash();  // the program, then the Scheduler, destroyed (World::crash)

    World& world_;
    std::size_t index_;
    std::string name_;
    std::string ip_;
    unsigned boots_ = 0;
    std::size_t fd_limit_ = 0;
    unsigned resource_percent_ = 0;  // from the world's Params, then set_resource_faults
    unsigned resource_calls_ = survived_calls;
    std::shared_ptr<detail::HostClock> clock_;    // also held by kernel_ and sched_'s clock function
    Start start_;
    std::shared_ptr<detail::HostKernel> kernel_;  // also held by sched_ (and by a Connector that outlives it)
    detail::HostSelector* selector_ = nullptr;    // owned by sched_
    std::unique_ptr<Scheduler> sched_;
    std::shared_ptr<void> program_;  // what start_ returned: destroyed first, before the loop it runs on
};

class REACTOR_API World {
public:
    explicit World(std::uint64_t seed, Params params = {});
    // Destroys the hosts (newest first: their loops end as ~Scheduler ends
    // them, closing their sockets), then the network.
    ~World();
    World(const World&) = delete;
    World& operator=(const World&) = delete;

    // The host called `name`, made on first use with the next address.
    Host& host(std::string_view name);
    // A new host that runs `start` now and again at each restart (turmoil's
    // sim.host(name, || ...)). A host of that name already: std::logic_error.
    Host& host(std::string_view name, Host::Start start);

    // The host crashes: its sockets vanish (its peers are reset, a latency
    // later), what its start returned is destroyed, then its Scheduler,
    // pending callbacks unrun (~Scheduler). It stays down, running nothing,
    // until restart(). Called during a run (from a callback on any host),
    // it happens after the current step, before the next event.
    void crash(Host& host);
    // A crashed host comes back: a fresh loop and kernel (no sockets), same
    // name and address, and its start runs again. During a run, as crash().
    void restart(Host& host);
    std::size_t host_count() const noexcept { return hosts_.size(); }

    // Runs the hosts for `duration` of virtual time: timed_out when that
    // much has passed (time stops exactly there), idle when nothing can
    // happen any more (no host has work, no event is pending).
    RunStatus run_for(Duration duration);
    // Runs until `done()` (checked after every step) is true, and returns
    // true; false if `limit` of virtual time passed or nothing can happen.
    bool run_until(const std::function<bool()>& done, Duration limit = std::chrono::hours(1));

    TimePoint now() const noexcept;
    Duration elapsed() const noexcept;  // virtual time since the world began
    std::uint64_t seed() const noexcept { return seed_; }
    const Params& params() const noexcept { return params_; }
    // Every delivery of the network, hashed (see Trace).
    const Trace& trace() const noexcept;
    Trace& trace() noexcept;
    // Loop iterations run, over all hosts.
    std::uint64_t steps() const noexcept { return steps_; }

    // What a host's Scheduler::wall_clock() reads when the world begins
    // (2000-01-01 00:00:00 UTC): the calendar moves with virtual time, so
    // a Date header or a log line's time is the same on every run of a seed.
    static constexpr std::chrono::system_clock::time_point kEpoch{std::chrono::seconds(946'684'800)};

    // A host that keeps its loop busy without virtual time passing (a
    // callback that schedules itself with call_soon forever) stops the run
    // after this many iterations at one instant: std::runtime_error naming it.
    static constexpr std::uint64_t kMaxStepsPerInstant = 1'000'000;

private:
    friend class Host;  // its constructor plugs it into network_
    bool run(TimePoint limit, const std::function<bool()>* done);
    void step(Host& host);
    // At once outside a run; inside one, as an event of the current instant.
    void between_steps(std::function<void()> action);
    // A crash chance drawn from the seed (Params::crash_percent) is due now.
    void crash_chance();
    void note_crash(const Host& host, std::string_view what, TimePoint at);
    // Runs host's start under the world's mark (reactor/detail/world_mark.hpp).
    std::shared_ptr<void> start_program(Host& host);
    // The mark set while `host` runs (reactor/detail/world_mark.hpp).
    reactor::detail::WorldMark mark_for(const Host& host) noexcept;

    std::uint64_t seed_;
    Params params_;
    std::string label_;  // "sim world (seed 7)": the mark's, in refusals
    std::unique_ptr<detail::Network> network_;  // declared first: outlives the hosts
    std::unique_ptr<detail::Crashes> crashes_;
    // What OpenSSL draws while a host runs (the mark's fill_random): a stream
    // of its own, drawn only when asked, so other draws are unchanged.
    Random tls_random_;
    std::vector<std::unique_ptr<Host>> hosts_;
    std::uint64_t steps_ = 0;
    bool running_ = false;
};

}  // namespace reactor::testing::sim
