// SPDX-License-Identifier: MIT
// What would escape a simulated world (sim::World, reactor/detail/
// world_mark.hpp): a real socket opened while a host runs is refused with
// an error naming the call and the world; thread pool jobs of a host run on
// its own loop; futures::resolve on a host asks the world's names;
// futures::submit_to from a host is refused; a host's clock is virtual.
// Virtual time only; the one real socket (a listener made outside any run,
// to show the mark is gone) is on 127.0.0.1.
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <futures/executor.hpp>
#include <futures/resolve.hpp>
#include <futures/submit_to.hpp>
#include <reactor/detail/world_mark.hpp>
#include <reactor/net/connection.hpp>
#include <reactor/net/connector.hpp>
#include <reactor/net/listener.hpp>
#include <reactor/net/udp_socket.hpp>
#include <reactor/testing/sim/world.hpp>
#include <reactor/testing/virtual_clock.hpp>
#include <reactor/thread_pool.hpp>

using namespace std::chrono_literals;
using reactor::Address;
using reactor::ConnectionPtr;
namespace sim = reactor::testing::sim;

namespace {

// What `action` threw as a std::logic_error, run in a step of `host`.
std::string refusal_in_step(sim::World& world, sim::Host& host, std::function<void()> action) {
    std::string text = "(nothing thrown)";
    host.scheduler().call_soon([&] {
        try {
            action();
        } catch (const std::logic_error& e) {
            text = e.what();
        }
    });
    world.run_for(1s);
    return text;
}

bool contains(const std::string& text, std::string_view part) { return text.find(part) != std::string::npos; }

}  // namespace

BOOST_AUTO_TEST_CASE(a_real_socket_opened_while_a_host_runs_is_refused_naming_the_call_and_the_world) {
    sim::World world(41);
    sim::Host& server = world.host("server");
    reactor::Scheduler real;  // not a host's: its sockets would be the machine's
    const std::string listen = refusal_in_step(world, server, [&] {
        (void)reactor::Listener::listen(real, Address::loopback_v4(0), [](const ConnectionPtr&) {});
    });
    BOOST_TEST(listen ==
                   "reactor: Listener::listen would open a real socket (the C library's kernel) while sim world "
                   "(seed 41) host server runs: inside a world, sockets are made on a host's Scheduler "
                   "(host.scheduler()), so that the run depends on its seed alone",
               listen);
    const std::string connect = refusal_in_step(world, server, [&] {
        (void)reactor::connect(real, Address::loopback_v4(9), [](ConnectionPtr, std::error_code) {});
    });
    BOOST_TEST(connect.starts_with("reactor: reactor::connect would open a real socket"), connect);
    const std::string udp =
        refusal_in_step(world, server, [&] { (void)reactor::UdpSocket::bind(real, Address::loopback_v4(0)); });
    BOOST_TEST(udp.starts_with("reactor: UdpSocket::bind would open a real socket"), udp);
    BOOST_TEST(real.empty());  // nothing was left scheduled on the real loop

    // A host's own sockets are not refused, and the mark ends with the step:
    // a real listener made outside any run is the program's business.
    BOOST_TEST(refusal_in_step(world, server, [&] {
                   (void)reactor::Listener::listen(server.scheduler(), server.address(7), [](const ConnectionPtr&) {});
               }) == "(nothing thrown)");
    BOOST_TEST(reactor::detail::world_mark() == nullptr);
    auto outside = reactor::Listener::listen(real, Address::loopback_v4(0), [](const ConnectionPtr&) {});
    BOOST_TEST(outside != nullptr);
}

BOOST_AUTO_TEST_CASE(a_start_function_is_marked_too) {
    sim::World world(42);
    reactor::Scheduler real;
    try {
        world.host("server", [&](sim::Host&) {
            return std::shared_ptr<void>(
                reactor::Listener::listen(real, Address::loopback_v4(0), [](const ConnectionPtr&) {}));
        });
        BOOST_FAIL("a real listener in a start function was not refused");
    } catch (const std::logic_error& e) {
        BOOST_TEST(contains(e.what(), "Listener::listen would open a real socket"), e.what());
        BOOST_TEST(contains(e.what(), "sim world (seed 42) host server"), e.what());
    }
}

BOOST_AUTO_TEST_CASE(thread_pool_jobs_of_a_host_run_on_its_loop_after_the_submitting_callback) {
    sim::World world(43);
    sim::Host& host = world.host("worker");
    reactor::ThreadPool pool(1);
    const auto loop_thread = std::this_thread::get_id();
    std::vector<std::string> order;
    std::thread::id ran_on;
    reactor::Job cancelled;
    bool cancelled_ran = false;
    host.scheduler().call_soon([&] {
        (void)pool.submit(
            host.scheduler(), [&] { ran_on = std::this_thread::get_id(); order.push_back("work"); return 7; },
            [&](reactor::JobResult<int>&& r) { order.push_back("done " + std::to_string(r.value.value_or(-1))); });
        cancelled = pool.submit(
            host.scheduler(), [&] { cancelled_ran = true; }, [&](reactor::JobResult<void>&&) { cancelled_ran = true; });
        order.push_back("submitted");
        BOOST_TEST(cancelled.cancel());
    });
    world.run_for(1s);
    BOOST_TEST(order == (std::vector<std::string>{"submitted", "work", "done 7"}));
    BOOST_TEST((ran_on == loop_thread));
    BOOST_TEST(!cancelled_ran);

    // run_in_executor from a host, and from outside a run on a host's
    // Scheduler (its kernel says it is simulated): the same.
    auto in_step = std::make_shared<futures::Future<std::thread::id>>();
    host.scheduler().call_soon([&] {
        *in_step = futures::run_in_executor(host.scheduler(), pool, [] { return std::this_thread::get_id(); });
    });
    auto outside = futures::run_in_executor(host.scheduler(), pool, [] { return std::this_thread::get_id(); });
    BOOST_REQUIRE(world.run_until([&] { return in_step->valid() && in_step->done() && outside.done(); }, 1s));
    BOOST_TEST((in_step->result() == loop_thread));
    BOOST_TEST((outside.result() == loop_thread));
    BOOST_TEST(pool.queued() == 0u);
}

BOOST_AUTO_TEST_CASE(futures_resolve_on_a_host_asks_the_world_names) {
    sim::World world(44);
    sim::Host& server = world.host("server");
    sim::Host& client = world.host("client");
    auto found = futures::resolve(client.scheduler(), "server", "7");
    auto by_port = futures::resolve(client.scheduler(), "server", std::uint16_t{8});
    auto unknown = futures::resolve(client.scheduler(), "nowhere", "7");
    BOOST_REQUIRE(world.run_until([&] { return found.done() && by_port.done() && unknown.done(); }, 1s));
    BOOST_TEST((found.result() == std::vector<Address>{server.address(7)}));
    BOOST_TEST((by_port.result() == std::vector<Address>{server.address(8)}));
    BOOST_TEST(unknown.failed());
}

BOOST_AUTO_TEST_CASE(submit_to_from_a_host_is_refused_naming_it) {
    sim::World world(45);
    sim::Host& a = world.host("a");
    sim::Host& b = world.host("b");
    const std::string text = refusal_in_step(world, a, [&] {
        (void)futures::submit_to(a.scheduler(), b.scheduler(), [] { return 1; });
    });
    BOOST_TEST(text ==
                   "reactor: futures::submit_to from sim world (seed 45) host a: a world runs all its hosts on one "
                   "thread, and work handed to another thread or loop would make a run depend on more than its "
                   "seed; call fn on this loop (call_soon) or connect to the other host instead",
               text);
}

BOOST_AUTO_TEST_CASE(a_hosts_clock_is_the_worlds_virtual_one) {
    sim::World world(46);
    sim::Host& host = world.host("host");
    const auto real_before = std::chrono::steady_clock::now();
    reactor::TimePoint fired{};
    host.scheduler().call_later(1h, [&] { fired = host.scheduler().now(); });
    world.run_for(2h);
    BOOST_TEST((fired == reactor::testing::VirtualClock::kStart + 1h));
    BOOST_TEST((host.scheduler().now() == world.now()));
    BOOST_TEST((std::chrono::steady_clock::now() - real_before < 1min));  // an hour of it took no real hour
}

// ---------------------------------------------------------------- real time and randomness (issue 48)
// reactor::sim_guard, which this suite links (reactor/testing/sim/
// real_time_guard.hpp): a host's code that reads real time or the system's
// randomness gets the world's answer, and the run fails after that step,
// naming the call, the clock and the host. Outside a run the same calls are
// the C library's. Nothing here names the guard's symbols: linking
// reactor::sim_guard is enough (its static archive's object is brought in
// by the target's linker flags).

#include <sys/random.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <unistd.h>

#include <array>
#include <ctime>

namespace {

// The std::logic_error the run threw after `read` ran in a step of a host
// called "server" of a world of `seed`, or "(nothing thrown)".
std::string real_read_error(std::uint64_t seed, const std::function<void(sim::Host&)>& read) {
    sim::World world(seed);
    sim::Host& server = world.host("server");
    server.scheduler().call_later(5s, [&] { read(server); });
    try {
        world.run_for(10s);
    } catch (const std::logic_error& e) {
        return e.what();
    }
    return "(nothing thrown)";
}

// CLOCK_MONOTONIC from the kernel itself, past any interposer.
std::chrono::nanoseconds kernel_monotonic() {
    timespec t{};
    BOOST_REQUIRE(::syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &t) == 0);
    return std::chrono::seconds(t.tv_sec) + std::chrono::nanoseconds(t.tv_nsec);
}

}  // namespace

BOOST_AUTO_TEST_CASE(steady_clock_read_by_a_host_fails_the_run_naming_clock_gettime_and_the_host) {
    reactor::TimePoint read{};
    reactor::TimePoint host_now{};
    const std::string text = real_read_error(51, [&](sim::Host& host) {
        read = std::chrono::steady_clock::now();
        host_now = host.scheduler().now();
    });
    BOOST_TEST(text ==
                   "reactor: sim world (seed 51) host server read real time: clock_gettime(CLOCK_MONOTONIC); a "
                   "host's time is its Scheduler::now()",
               text);
    // The read itself was answered from the world: the host's virtual time.
    BOOST_TEST((read == host_now));
    BOOST_TEST((read == reactor::testing::VirtualClock::kStart + 5s));
}

BOOST_AUTO_TEST_CASE(calendar_reads_by_a_host_fail_the_run_naming_the_call) {
    const auto calendar = sim::World::kEpoch + 5s;
    std::chrono::system_clock::time_point system{};
    std::string text = real_read_error(52, [&](sim::Host&) { system = std::chrono::system_clock::now(); });
    BOOST_TEST(text ==
                   "reactor: sim world (seed 52) host server read real time: clock_gettime(CLOCK_REALTIME); a "
                   "host's calendar is its Scheduler::wall_clock()",
               text);
    BOOST_TEST((system == calendar));

    std::time_t seconds = 0;
    std::time_t stored = 0;
    text = real_read_error(53, [&](sim::Host&) { seconds = std::time(&stored); });
    BOOST_TEST(text ==
                   "reactor: sim world (seed 53) host server read real time: time; a host's calendar is its "
                   "Scheduler::wall_clock()",
               text);
    BOOST_TEST(seconds == std::chrono::system_clock::to_time_t(calendar));
    BOOST_TEST(stored == seconds);

    timeval tv{};
    text = real_read_error(54, [&](sim::Host&) { ::gettimeofday(&tv, nullptr); });
    BOOST_TEST(text.starts_with("reactor: sim world (seed 54) host server read real time: gettimeofday; "), text);
    BOOST_TEST(tv.tv_sec == std::chrono::system_clock::to_time_t(calendar));
    BOOST_TEST(tv.tv_usec == 0);
}

BOOST_AUTO_TEST_CASE(randomness_read_by_a_host_fails_the_run_and_is_the_worlds) {
    // Two worlds of one seed: the same bytes, drawn from the seed.
    std::array<std::array<unsigned char, 24>, 2> drawn{};
    for (auto& bytes : drawn) {
        ssize_t got = 0;
        const std::string text =
            real_read_error(55, [&](sim::Host&) { got = ::getrandom(bytes.data(), bytes.size(), 0); });
        BOOST_TEST(text ==
                       "reactor: sim world (seed 55) host server read real randomness: getrandom; a host draws from "
                       "a generator seeded from the world's seed (sim::Random(world.seed()))",
                   text);
        BOOST_TEST(got == static_cast<ssize_t>(bytes.size()));
    }
    BOOST_TEST((drawn[0] == drawn[1]));
    BOOST_TEST((drawn[0] != std::array<unsigned char, 24>{}));

    int result = -1;
    const std::string text = real_read_error(56, [&](sim::Host&) { result = ::getentropy(drawn[0].data(), 16); });
    BOOST_TEST(text.starts_with("reactor: sim world (seed 56) host server read real randomness: getentropy; "), text);
    BOOST_TEST(result == 0);
}

BOOST_AUTO_TEST_CASE(the_first_real_read_of_a_step_names_the_error_and_a_start_function_is_watched_too) {
    const std::string text = real_read_error(57, [](sim::Host&) {
        (void)std::time(nullptr);
        (void)std::chrono::steady_clock::now();
    });
    BOOST_TEST(text.starts_with("reactor: sim world (seed 57) host server read real time: time; "), text);

    sim::World world(58);
    try {
        world.host("client", [](sim::Host& host) {
            (void)std::chrono::steady_clock::now();
            return std::shared_ptr<void>(std::make_shared<int>(host.boots()));
        });
        BOOST_FAIL("a start function's real-time read was not refused");
    } catch (const std::logic_error& e) {
        BOOST_TEST(contains(e.what(), "sim world (seed 58) host client read real time: clock_gettime(CLOCK_MONOTONIC)"),
                   e.what());
    }
}

BOOST_AUTO_TEST_CASE(cpu_time_and_a_hosts_own_clocks_are_not_real_reads) {
    const std::string text = real_read_error(59, [](sim::Host& host) {
        timespec cpu{};
        BOOST_TEST(::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu) == 0);
        BOOST_TEST(::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cpu) == 0);
        (void)host.scheduler().now();
        (void)host.scheduler().wall_clock();
    });
    BOOST_TEST(text == "(nothing thrown)");
}

BOOST_AUTO_TEST_CASE(outside_a_run_the_same_calls_read_the_real_clocks_and_randomness) {
    sim::World world(60);
    sim::Host& host = world.host("host");
    const auto check_real = [] {
        BOOST_TEST(reactor::detail::world_mark() == nullptr);
        const auto kernel_before = kernel_monotonic();
        const auto steady = std::chrono::steady_clock::now().time_since_epoch();
        const auto kernel_after = kernel_monotonic();
        BOOST_TEST((kernel_before <= steady && steady <= kernel_after));
        // The calendar is today's, decades after a world's (2000-01-01).
        BOOST_TEST((std::chrono::system_clock::now() > sim::World::kEpoch + std::chrono::hours(24 * 365 * 20)));
        BOOST_TEST(std::time(nullptr) > std::chrono::system_clock::to_time_t(sim::World::kEpoch) + 20 * 365 * 86400);
        timeval tv{};
        BOOST_TEST(::gettimeofday(&tv, nullptr) == 0);
        BOOST_TEST(tv.tv_sec > std::chrono::system_clock::to_time_t(sim::World::kEpoch) + 20 * 365 * 86400);
        std::array<unsigned char, 32> a{};
        std::array<unsigned char, 32> b{};
        BOOST_TEST(::getrandom(a.data(), a.size(), 0) == static_cast<ssize_t>(a.size()));
        BOOST_TEST(::getentropy(b.data(), b.size()) == 0);
        BOOST_TEST((a != b));  // two real draws of 256 bits
    };
    check_real();  // before any run
    host.scheduler().call_later(1s, [&] { (void)host.scheduler().now(); });
    BOOST_TEST((world.run_for(2s) == reactor::RunStatus::idle));
    check_real();  // after one
}
