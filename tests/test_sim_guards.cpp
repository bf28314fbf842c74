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
