// SPDX-License-Identifier: MIT
// docs/futures.md, "Promise: the producer end": a producer of your own, its
// futures naming the caller's line, and a broken promise.
#include <memory>
#include <source_location>
#include <string>
#include <utility>
#include <vector>

#include <boost/test/unit_test.hpp>
#include <futures/futures.hpp>
#include <reactor/scheduler.hpp>

namespace {

// [snippet:doorbell]
// Whoever rings completes the future of whoever waits.
class Doorbell {
public:
    explicit Doorbell(reactor::Scheduler& sched) : sched_(sched) {}

    // The caller's line goes into the future: all_tasks() and reports name it.
    futures::Future<std::string> wait(std::source_location where = std::source_location::current()) {
        waiting_ = futures::Promise<std::string>(sched_, where, "doorbell wait");
        return waiting_.get_future();
    }
    void ring(std::string who) {
        if (waiting_.is_pending()) waiting_.set_value(std::move(who));
    }

private:
    reactor::Scheduler& sched_;
    futures::Promise<std::string> waiting_;  // dropped unfulfilled: the future is cancelled
};
// [end-snippet:doorbell]

}  // namespace

BOOST_AUTO_TEST_SUITE(futures_md_promise)

BOOST_AUTO_TEST_CASE(doorbell) {
    reactor::Scheduler sched;
    std::vector<std::string> reports;
    sched.set_exception_handler([&](const reactor::ErrorContext& ctx) { reports.push_back(ctx.message); });
    const unsigned before = std::source_location::current().line();
    // [snippet:doorbell_use]
    auto bell = std::make_unique<Doorbell>(sched);
    futures::Future<std::string> first = bell->wait();
    bell->ring("postman");
    sched.run();  // first.result() == "postman"
    futures::Future<std::string> second = bell->wait();
    bell.reset();  // the producer goes unfulfilled: second is cancelled with a
    // futures::BrokenPromise: "broken promise: the doorbell wait created at
    // app.cpp:LINE will never complete" (LINE: the line of bell->wait())
    // [end-snippet:doorbell_use]
    const unsigned after = std::source_location::current().line();
    BOOST_TEST(first.result() == "postman");
    BOOST_TEST(second.cancelled());
    // The future names the line of bell->wait(), in this block, not Doorbell's.
    const unsigned second_line = second.origin().line();
    BOOST_TEST(second_line > before);
    BOOST_TEST(second_line < after);
    try {
        (void)second.result();
        BOOST_FAIL("a broken promise's future returned a value");
    } catch (const futures::BrokenPromise& e) {
        const std::string what = e.what();
        BOOST_TEST(what.find("broken promise: the doorbell wait created at ") == 0u, what);
        BOOST_TEST(what.find("promise.cpp:" + std::to_string(second_line) + " will never complete") !=
                       std::string::npos,
                   what);
    }
    sched.run();
    BOOST_TEST(reports.empty());  // a cancellation: nothing reported
}

BOOST_AUTO_TEST_SUITE_END()
