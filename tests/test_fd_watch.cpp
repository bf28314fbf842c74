// SPDX-License-Identifier: MIT
// Scheduler::watch: an fd's owner watched without a callback slot, the loop
// calling FdOwner::on_ready (what Connection uses), over real pipes and
// socketpairs on every selector backend: readiness per direction and in
// order, work that keeps run() going, the end of a watch (forget_fd, a new
// owner, Interest::none), readiness queued for an owner that let the fd go
// while the number went to another, exceptions naming the owner's line, and
// the bad calls (no owner, fd >= FD_SETSIZE on select).
#include <boost/test/unit_test.hpp>

#include <sys/select.h>
#include <unistd.h>

#include <functional>
#include <memory>
#include <source_location>
#include <stdexcept>
#include <string>
#include <vector>

#include <reactor/scheduler.hpp>

#include "support/backends.hpp"
#include "support/check_empty.hpp"
#include "support/fd_limits.hpp"
#include "support/fds.hpp"

using reactor::Interest;
using reactor::Scheduler;
using reactor_test::on;
using reactor_test::Pipe;
using reactor_test::SocketPair;

namespace {

// Records what the loop tells it; owns nothing (the test closes the fds).
class Recorder final : public reactor::FdOwner {
public:
    explicit Recorder(std::string name, std::source_location where = std::source_location::current())
        : name_(std::move(name)), where_(where) {}
    std::vector<std::string> heard;
    std::function<void(int, Interest)> also;  // runs after recording

    void on_ready(int fd, Interest which) override {
        heard.push_back(name_ + (which == Interest::read ? " read" : " write"));
        if (also) also(fd, which);
    }
    void on_unwatchable(int, std::error_code error) override { heard.push_back(name_ + " unwatchable " + error.message()); }
    std::source_location origin() const noexcept override { return where_; }

private:
    std::string name_;
    std::source_location where_;
};

Scheduler::Options options() { return on(reactor_test::backend_under_test()); }

}  // namespace

BOOST_AUTO_TEST_CASE(read_readiness_reaches_the_owner_until_unwatched) {
    Scheduler s(options());
    Pipe p;
    Recorder owner("a");
    s.set_fd_owner(p.r, owner);
    s.watch(p.r, Interest::read);
    BOOST_TEST(s.waiter_count() == 1u);  // work: run() waits for it
    p.put();                              // never drained: ready every iteration
    s.run_once();
    s.run_once();
    BOOST_TEST(owner.heard == (std::vector<std::string>{"a read", "a read"}), boost::test_tools::per_element());
    s.watch(p.r, Interest::none);
    BOOST_TEST(s.waiter_count() == 0u);
    s.run();  // returns: nothing is watched
    BOOST_TEST(owner.heard.size() == 2u);
    s.forget_fd(p.r);
    CHECK_EMPTY(s);
}

BOOST_AUTO_TEST_CASE(both_directions_read_first_and_each_only_while_watched) {
    Scheduler s(options());
    SocketPair sp;
    Recorder owner("a");
    s.set_fd_owner(sp.a, owner);
    s.watch(sp.a, Interest::read_write);
    BOOST_TEST(s.waiter_count() == 2u);
    BOOST_REQUIRE(::write(sp.b, "x", 1) == 1);
    // The read side stops watching for writes: the write readiness already
    // queued in this batch is not delivered.
    owner.also = [&](int fd, Interest which) {
        if (which == Interest::read) s.watch(fd, Interest::read);
    };
    s.run_once();
    BOOST_TEST(owner.heard == (std::vector<std::string>{"a read"}), boost::test_tools::per_element());
    s.forget_fd(sp.a);
    BOOST_TEST(s.waiter_count() == 0u);
    CHECK_EMPTY(s);
}

BOOST_AUTO_TEST_CASE(an_owner_and_a_waiter_on_one_fd_are_both_called) {
    Scheduler s(options());
    Pipe p;
    Recorder owner("owner");
    int waiter = 0;
    s.set_fd_owner(p.r, owner);
    s.watch(p.r, Interest::read);
    s.add_reader(p.r, [&] { ++waiter; });
    p.put();
    s.run_once();
    BOOST_TEST(owner.heard.size() == 1u);
    BOOST_TEST(waiter == 1);
    BOOST_TEST(s.remove_reader(p.r));
    s.run_once();  // the owner's watch is untouched by removing the waiter
    BOOST_TEST(owner.heard.size() == 2u);
    s.forget_fd(p.r);
    CHECK_EMPTY(s);
}

// A readiness queued for fd N is not delivered once its owner let N go, even
// when N went to another owner in the same batch: that one was not ready.
// Two owned pipes are ready in one iteration; whichever owner runs first
// lets the other's fd go and hands its number to a fresh owner.
BOOST_AUTO_TEST_CASE(readiness_queued_for_an_owner_that_let_the_fd_go_is_dropped) {
    Scheduler s(options());
    std::unique_ptr<Pipe> pipes[2] = {std::make_unique<Pipe>(), std::make_unique<Pipe>()};
    Recorder owners[2] = {Recorder("0"), Recorder("1")};
    Recorder fresh("fresh");
    std::unique_ptr<Pipe> third;
    for (int i = 0; i < 2; ++i) {
        owners[i].also = [&, other = 1 - i](int, Interest) {
            if (third) return;
            const int number = pipes[other]->r;
            s.forget_fd(number);
            pipes[other].reset();
            third = std::make_unique<Pipe>();  // the lowest free numbers: the other's
            BOOST_REQUIRE(third->r.get() == number);
            s.set_fd_owner(third->r, fresh);
            s.watch(third->r, Interest::read);
        };
        s.set_fd_owner(pipes[i]->r, owners[i]);
        s.watch(pipes[i]->r, Interest::read);
        pipes[i]->put();
    }
    s.run_once();
    BOOST_TEST(owners[0].heard.size() + owners[1].heard.size() == 1u);  // the other's readiness was dropped
    BOOST_TEST(fresh.heard.empty());                                      // and not handed to the new owner
    third->put();
    s.run_once();
    BOOST_TEST(fresh.heard == (std::vector<std::string>{"fresh read"}), boost::test_tools::per_element());
    for (auto& p : pipes)
        if (p) s.forget_fd(p->r);
    s.forget_fd(third->r);
    CHECK_EMPTY(s);
}

BOOST_AUTO_TEST_CASE(a_new_owner_starts_unwatched) {
    Scheduler s(options());
    Pipe p;
    Recorder a("a");
    Recorder b("b");
    s.set_fd_owner(p.r, a);
    s.watch(p.r, Interest::read);
    s.set_fd_owner(p.r, b);
    BOOST_TEST(s.waiter_count() == 0u);
    p.put();
    s.run_for(std::chrono::seconds(0));
    BOOST_TEST(a.heard.empty());
    BOOST_TEST(b.heard.empty());
    s.forget_fd(p.r);
    CHECK_EMPTY(s);
}

BOOST_AUTO_TEST_CASE(an_exception_from_on_ready_names_the_owners_line) {
    Scheduler s(options());
    Pipe p;
    Recorder owner("a");  // this line is the owner's origin()
    const unsigned line = std::source_location::current().line() - 1;
    std::vector<reactor::ErrorContext> errors;
    s.set_exception_handler([&](const reactor::ErrorContext& ctx) { errors.push_back(ctx); });
    owner.also = [](int, Interest) { throw std::runtime_error("boom"); };
    s.set_fd_owner(p.r, owner);
    s.watch(p.r, Interest::read);
    p.put();
    s.run_once();
    BOOST_REQUIRE(errors.size() == 1u);
    BOOST_TEST(errors[0].origin_known);
    BOOST_TEST(errors[0].origin.line() == line);
    BOOST_TEST(std::string(errors[0].origin.file_name()).find("test_fd_watch.cpp") != std::string::npos);
    BOOST_TEST(s.waiter_count() == 1u);  // the loop carries on, still watching
    s.forget_fd(p.r);
    CHECK_EMPTY(s);
}

// The loop cannot watch a closed number: the owner hears once (not the
// exception handler), and its watch ends with the ownership.
BOOST_AUTO_TEST_CASE(an_fd_closed_under_its_watch_tells_the_owner_and_ends_the_watch) {
    Scheduler s(options());
    Pipe doomed;
    Recorder owner("a");
    int reports = 0;
    s.set_exception_handler([&](const reactor::ErrorContext&) { ++reports; });
    s.set_fd_owner(doomed.r, owner);
    s.watch(doomed.r, Interest::read);
    doomed.r.close();  // without forget_fd: the promise broken, as a bug would
    auto guard = s.call_later(std::chrono::seconds(2), [&] { s.stop(); });
    for (int i = 0; i < 10 && owner.heard.empty(); ++i) s.run_once();
    BOOST_TEST(guard.cancel());
    BOOST_TEST(owner.heard == (std::vector<std::string>{"a unwatchable Bad file descriptor"}),
               boost::test_tools::per_element());
    BOOST_TEST(reports == 0);
    BOOST_TEST(s.waiter_count() == 0u);  // run() does not wait for it any more
    CHECK_EMPTY(s);
}

BOOST_AUTO_TEST_CASE(watching_an_fd_without_an_owner_is_a_logic_error) {
    Scheduler s(options());
    Pipe p;
    BOOST_CHECK_THROW(s.watch(p.r, Interest::read), std::logic_error);
    BOOST_CHECK_THROW(s.watch(-1, Interest::read), std::logic_error);
    Recorder owner("a");
    s.set_fd_owner(p.r, owner);
    s.forget_fd(p.r);  // the ownership ends here
    BOOST_CHECK_THROW(s.watch(p.r, Interest::read), std::logic_error);
    BOOST_TEST(s.waiter_count() == 0u);
    CHECK_EMPTY(s);
}

BOOST_AUTO_TEST_CASE(an_fd_select_cannot_watch_throws_and_changes_nothing) {
    constexpr int kBigFd = 1500;
    static_assert(kBigFd >= FD_SETSIZE);
    if (!reactor_test::ensure_fd_limit(kBigFd + 1)) {
        BOOST_TEST_MESSAGE("skipped: RLIMIT_NOFILE hard limit is below " << kBigFd + 1);
        return;
    }
    Scheduler s(options());
    Pipe p;
    BOOST_REQUIRE(::dup2(p.r, kBigFd) == kBigFd);
    reactor_test::Fd big(kBigFd);
    Recorder owner("a");
    s.set_fd_owner(kBigFd, owner);
    if (reactor_test::backend_under_test() == reactor::Backend::select) {
        BOOST_CHECK_THROW(s.watch(kBigFd, Interest::read), std::invalid_argument);
        BOOST_TEST(s.waiter_count() == 0u);
    } else {
        p.put();
        s.watch(kBigFd, Interest::read);  // poll and epoll take any fd
        s.run_once();
        BOOST_TEST(owner.heard == (std::vector<std::string>{"a read"}), boost::test_tools::per_element());
    }
    s.forget_fd(kBigFd);
    CHECK_EMPTY(s);
}
