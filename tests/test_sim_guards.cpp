// SPDX-License-Identifier: MIT
// What would escape a simulated world (sim::World, reactor/detail/
// world_mark.hpp): a real socket opened while a host runs is refused with
// an error naming the call and the world; thread pool jobs of a host run on
// its own loop; futures::resolve on a host asks the world's names;
// futures::submit_to between hosts of one world runs as simulated work,
// replays from the seed, and is refused between a host and any other loop;
// a host's clock is virtual.
// Virtual time only; the one real socket (a listener made outside any run,
// to show the mark is gone) is on 127.0.0.1.
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include <futures/executor.hpp>
#include <futures/promise.hpp>
#include <futures/resolve.hpp>
#include <futures/submit_to.hpp>
#include <reactor/detail/world_mark.hpp>
#include <reactor/net/connection.hpp>
#include <reactor/net/connector.hpp>
#include <reactor/net/listener.hpp>
#include <reactor/net/udp_socket.hpp>
#include <reactor/testing/sim/determinism.hpp>
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

// submit_to between hosts of one world: fn runs on the target's loop, in a
// step of the target, and its value comes back to the caller; the target
// was at rest (nothing to do since the world began), so only the post
// woke it, and no virtual time passed beyond the caller's timer.
BOOST_AUTO_TEST_CASE(submit_to_between_hosts_runs_fn_on_the_target_host_as_simulated_work) {
    sim::World world(45);
    sim::Host& a = world.host("a");
    sim::Host& b = world.host("b");
    world.run_for(1ms);  // b rests from here on: nothing scheduled on it
    std::string ran_in;
    reactor::Scheduler* ran_on = nullptr;
    std::optional<futures::Future<std::string>> value;
    std::optional<futures::Future<int>> failed;
    std::optional<futures::Future<int>> own;  // a host to itself
    a.scheduler().call_later(1s, [&] {
        value = futures::submit_to(b.scheduler(), [&] {
            ran_on = reactor::Scheduler::running();
            ran_in = std::string(reactor::detail::world_mark()->host);
            return "from " + ran_in;
        });
        failed = futures::submit_to(a.scheduler(), b.scheduler(),
                                    []() -> int { throw std::runtime_error("boom on b"); });
        own = futures::submit_to(a.scheduler(), [] { return 3; });
    });
    BOOST_REQUIRE(world.run_until([&] { return value && value->done() && failed->done() && own->done(); }, 1min));
    BOOST_TEST(value->result() == "from b");
    BOOST_TEST((ran_on == &b.scheduler()));
    BOOST_TEST(ran_in == "b");
    BOOST_CHECK_EXCEPTION(failed->result(), std::runtime_error,
                          [](const std::runtime_error& e) { return std::string(e.what()) == "boom on b"; });
    BOOST_TEST(own->result() == 3);
    BOOST_TEST((world.elapsed() == 1s));  // the posts took no virtual time
    BOOST_TEST(a.scheduler().empty());    // nothing waits for a reply any more
    BOOST_TEST(b.scheduler().empty());

    // Any cross-loop post from a host wakes the host at rest: call_soon_threadsafe too.
    bool posted_ran = false;
    a.scheduler().call_later(1s, [&] { b.scheduler().call_soon_threadsafe([&] { posted_ran = true; }); });
    BOOST_REQUIRE(world.run_until([&] { return posted_ran; }, 1min));
    BOOST_TEST((world.elapsed() == 2s));
}

// A post wakes its host at once: drawn among the runnable hosts at the next
// step, not once the others come to rest. Host c is busy with a chain of 64
// callbacks at the instant a submits to b; b's job (and a call_soon_threadsafe
// made with it) runs before that chain ends (each step draws among the
// runnable hosts: the seed decides, and never draws c 64 times in a row here).
BOOST_AUTO_TEST_CASE(a_submit_to_wakes_the_target_host_at_the_next_draw) {
    sim::World world(51);
    sim::Host& a = world.host("a");
    sim::Host& b = world.host("b");
    sim::Host& c = world.host("c");
    world.run_for(1ms);
    int chain = 0;
    int chain_when_job_ran = -1;
    int chain_when_post_ran = -1;
    std::function<void()> link = [&] {
        if (++chain < 64) c.scheduler().call_soon(link);
    };
    std::optional<futures::Future<int>> f;
    c.scheduler().call_later(1s, link);
    a.scheduler().call_later(1s, [&] {
        f = futures::submit_to(b.scheduler(), [&] {
            chain_when_job_ran = chain;
            return 1;
        });
        b.scheduler().call_soon_threadsafe([&] { chain_when_post_ran = chain; });
    });
    BOOST_REQUIRE(world.run_until([&] { return f && f->done() && chain == 64; }, 1min));
    BOOST_TEST(chain_when_job_ran >= 0);
    BOOST_TEST(chain_when_job_ran < 64);
    BOOST_TEST(chain_when_post_ran == chain_when_job_ran);  // posted after the job: in the same batch
    BOOST_TEST((world.elapsed() == 1s));
}

// Cancelled by the caller before the reply: before fn started, fn is
// skipped; after, the future fn returned is cancelled on the target.
BOOST_AUTO_TEST_CASE(a_cancelled_submit_to_reaches_the_target_host) {
    sim::World world(47);
    sim::Host& a = world.host("a");
    sim::Host& b = world.host("b");
    bool skipped_ran = false;
    std::optional<futures::Future<int>> skipped;
    std::optional<futures::Future<int>> followed;
    std::optional<futures::Future<int>> remote;  // the future fn returned, on b
    std::optional<futures::Promise<int>> promise;
    a.scheduler().call_soon([&] {
        skipped = futures::submit_to(b.scheduler(), [&] {
            skipped_ran = true;
            return 1;
        });
        BOOST_TEST(skipped->cancel());  // before b took the post
        followed = futures::submit_to(b.scheduler(), [&] {
            promise.emplace(b.scheduler());
            remote = promise->get_future();
            return *remote;
        });
    });
    BOOST_REQUIRE(world.run_until([&] { return remote.has_value(); }, 1min));
    BOOST_TEST(!followed->done());
    a.scheduler().call_soon([&] { BOOST_TEST(followed->cancel()); });
    BOOST_REQUIRE(world.run_until([&] { return remote->done(); }, 1min));
    BOOST_TEST(remote->cancelled());  // the cancellation reached b
    BOOST_TEST(!promise->is_pending());
    BOOST_TEST(followed->cancelled());
    BOOST_TEST(skipped->cancelled());
    BOOST_TEST(!skipped_ran);
    BOOST_TEST((world.elapsed() == 0s));
    promise.reset();
    world.run_for(1s);
    BOOST_TEST(a.scheduler().empty());
}

// The target crashes with the job still in its inbox: fn never runs, the
// caller's future fails as for any ended target.
BOOST_AUTO_TEST_CASE(a_target_host_crashed_before_the_job_ran_fails_the_future) {
    sim::World world(48);
    sim::Host& a = world.host("a");
    sim::Host& b = world.host("b");
    bool ran = false;
    auto token = std::make_shared<int>(1);
    std::optional<futures::Future<int>> f;
    a.scheduler().call_later(1s, [&] {
        f = futures::submit_to(b.scheduler(), [&ran, token] {
            ran = true;
            return 1;
        });
        world.crash(b);  // after this step, before b is stepped again
    });
    BOOST_REQUIRE(world.run_until([&] { return f && f->done(); }, 1min));
    BOOST_TEST(!ran);
    BOOST_TEST(token.use_count() == 1);  // fn destroyed with b's loop
    BOOST_CHECK_EXCEPTION(f->result(), futures::LoopClosedError, [](const futures::LoopClosedError& e) {
        return contains(e.what(), "the target loop ended before the function submitted at");
    });
    BOOST_TEST(!b.up());
    BOOST_TEST((world.elapsed() == 1s));
}

namespace {
// Three hosts submitting to each other at one instant: each fn notes in the
// trace where it ran and what it carries, so the order the world chose is
// part of the trace the determinism check compares.
void submit_round(sim::World& w, std::vector<std::string>* order) {
    std::vector<sim::Host*> hosts{&w.host("h0"), &w.host("h1"), &w.host("h2")};
    for (std::size_t from = 0; from < hosts.size(); ++from) {
        hosts[from]->scheduler().call_soon([&w, hosts, from, order] {
            for (std::size_t i = 0; i < 4; ++i) {
                sim::Host& to = *hosts[(from + 1 + i) % hosts.size()];
                const std::string what = fmt::format("{}>{}#{}", hosts[from]->name(), to.name(), i);
                (void)futures::submit_to(to.scheduler(), [&w, what, order] {
                    w.trace().add(std::string_view(what));
                    w.trace().event(what);
                    if (order) order->push_back(what);
                    return 0;
                });
            }
        });
    }
    w.run_for(1s);
}
}  // namespace

BOOST_AUTO_TEST_CASE(submit_to_between_hosts_replays_from_the_seed) {
    for (std::uint64_t seed : {1u, 2u, 3u}) {
        const sim::DeterminismReport report =
            sim::check_determinism(seed, [](sim::World& w) { submit_round(w, nullptr); });
        BOOST_TEST(report.same, report.to_string());
        BOOST_TEST(report.events[0] >= 12u, report.to_string());  // every fn ran and was noted
    }
    // And the order is the world's, drawn from the seed: not always the order of submission.
    std::set<std::vector<std::string>> orders;
    for (std::uint64_t seed = 1; seed <= 8; ++seed) {
        sim::World w(seed);
        std::vector<std::string> order;
        submit_round(w, &order);
        BOOST_TEST(order.size() == 12u);
        orders.insert(order);
    }
    BOOST_TEST(orders.size() > 1u);
}

// What stays refused: a host and a loop that is not one of its world's.
BOOST_AUTO_TEST_CASE(submit_to_between_a_host_and_another_loop_is_refused_naming_both) {
    sim::World world(49);
    sim::Host& a = world.host("a");
    sim::World other(50);
    sim::Host& c = other.host("c");
    reactor::Scheduler real;
    const std::string to_real = refusal_in_step(world, a, [&] {
        (void)futures::submit_to(a.scheduler(), real, [] { return 1; });
    });
    BOOST_TEST(to_real ==
                   "reactor: futures::submit_to from the Scheduler of sim a to a Scheduler that is no world's host "
                   "while sim world (seed 49) host a runs: one is a world's host and the other is not; only the "
                   "hosts of one world post to each other (the world steps them on its one thread, in an order "
                   "drawn from its seed), and any other post would make a run depend on more than its seed; "
                   "submit between hosts of one world, call fn on this loop (call_soon), or connect to the other "
                   "host instead",
               to_real);
    const std::string across = refusal_in_step(world, a, [&] {
        (void)futures::submit_to(a.scheduler(), c.scheduler(), [] { return 1; });
    });
    BOOST_TEST(contains(across, "the two are hosts of different worlds"), across);
    const std::string between_real = refusal_in_step(world, a, [&] {
        reactor::Scheduler other_real;
        (void)futures::submit_to(real, other_real, [] { return 1; });
    });
    BOOST_TEST(contains(between_real, "a world runs all its hosts on one thread"), between_real);
    // From a real loop (any thread but the world's steps) to a host.
    try {
        (void)futures::submit_to(real, a.scheduler(), [] { return 1; });
        BOOST_FAIL("submit_to from a real loop to a host was not refused");
    } catch (const std::logic_error& e) {
        BOOST_TEST(contains(e.what(), "from a Scheduler that is no world's host to the Scheduler of sim a: one is"),
                   e.what());
    }
    BOOST_TEST(real.empty());  // nothing was posted anywhere
    BOOST_TEST(a.scheduler().empty());
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
