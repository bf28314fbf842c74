// SPDX-License-Identifier: MIT
// The loop's two per-fd tables (issue 22): an fd's owner and its watch in
// one (Scheduler::waiting_), the add_reader/add_writer/read_wait/write_wait
// callbacks in another that grows only to the largest fd given one
// (Scheduler::callback_waiters_). Over real pipes and socketpairs on every
// selector backend: a callback on a high fd next to an owned low fd and the
// reverse, an fd number passed from a callback to an owner and back, both
// directions of one fd, an owner's fd with a callback waiter too, an owned
// fd closed under both, and what live(), stats() and close() report.
#include <boost/test/unit_test.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <source_location>
#include <string>
#include <vector>

#include <reactor/scheduler.hpp>

#include "support/backends.hpp"
#include "support/check_empty.hpp"
#include "support/fd_limits.hpp"
#include "support/fds.hpp"

using reactor::Interest;
using reactor::LiveItem;
using reactor::Scheduler;
using reactor_test::Fd;
using reactor_test::on;
using reactor_test::Pipe;
using reactor_test::SocketPair;

namespace {

// Well above the fds a test process has open, and below select's FD_SETSIZE.
constexpr int kHighFd = 500;

// Records what the loop tells it and describes itself in live(); owns
// nothing (the test closes the fds).
class Recorder final : public reactor::FdOwner {
public:
    explicit Recorder(std::string name) : name_(std::move(name)) {}
    std::vector<std::string> heard;

    void on_ready(int, Interest which) override { heard.push_back(name_ + (which == Interest::read ? " read" : " write")); }
    void on_unwatchable(int, std::error_code error) override { heard.push_back(name_ + " unwatchable " + error.message()); }
    void describe(int fd, std::vector<LiveItem>& out) const override {
        LiveItem item;
        item.kind = LiveItem::Kind::other;
        item.detail = name_ + " on fd " + std::to_string(fd);
        out.push_back(item);
    }

private:
    std::string name_;
};

Scheduler::Options options() { return on(reactor_test::backend_under_test()); }

// A new number at or above `at` for the file `fd` refers to.
Fd dup_at_least(int fd, int at) {
    BOOST_REQUIRE(reactor_test::ensure_fd_limit(static_cast<rlim_t>(at) + 16));
    const int high = ::fcntl(fd, F_DUPFD_CLOEXEC, at);
    BOOST_REQUIRE(high >= at);
    return Fd(high);
}

// Level-triggered and already ready: the first iteration sees it; a few
// more allow for a backend that applies a registration one wait late.
template <class Done>
void run_until(Scheduler& s, Done done) {
    for (int i = 0; i < 5 && !done(); ++i) s.run_once();
}

bool has_item(const std::vector<LiveItem>& items, LiveItem::Kind kind, const std::string& detail) {
    return std::any_of(items.begin(), items.end(),
                       [&](const LiveItem& i) { return i.kind == kind && i.detail == detail; });
}

}  // namespace

// The callback table ends below the high fd's number until add_reader
// grows it; the owner's fd is below it, and then far below its end.
BOOST_AUTO_TEST_CASE(a_callback_on_a_high_fd_and_an_owned_low_fd_both_fire) {
    Scheduler s(options());
    Pipe low, high_pipe;
    Fd high = dup_at_least(high_pipe.r, kHighFd);
    Recorder owner("owner");
    s.set_fd_owner(low.r, owner);
    s.watch(low.r, Interest::read);
    int callbacks = 0;
    s.add_reader(high, [&] { ++callbacks; });
    low.put();
    high_pipe.put();
    run_until(s, [&] { return callbacks > 0 && !owner.heard.empty(); });
    BOOST_TEST(callbacks == 1);
    BOOST_TEST(owner.heard == (std::vector<std::string>{"owner read"}), boost::test_tools::per_element());
    BOOST_TEST(s.remove_reader(high));
    s.forget_fd(low.r);
    CHECK_EMPTY(s);
}

// The owner's fd lies beyond the callback table's end: it has no callback
// waiter, and its readiness still reaches it.
BOOST_AUTO_TEST_CASE(an_owned_high_fd_and_a_callback_on_a_low_fd_both_fire) {
    Scheduler s(options());
    Pipe low, high_pipe;
    Fd high = dup_at_least(high_pipe.r, kHighFd);
    Recorder owner("owner");
    int callbacks = 0;
    s.add_reader(low.r, [&] { ++callbacks; });
    s.set_fd_owner(high, owner);
    s.watch(high, Interest::read);
    BOOST_TEST(!s.remove_writer(high));  // beyond the callback table: nothing to remove
    low.put();
    high_pipe.put();
    run_until(s, [&] { return callbacks > 0 && !owner.heard.empty(); });
    BOOST_TEST(callbacks == 1);
    BOOST_TEST(owner.heard == (std::vector<std::string>{"owner read"}), boost::test_tools::per_element());
    BOOST_TEST(s.remove_reader(low.r));
    s.forget_fd(high);
    CHECK_EMPTY(s);
}

BOOST_AUTO_TEST_CASE(a_number_whose_callback_was_removed_goes_to_an_owner_with_no_stale_callback) {
    Scheduler s(options());
    Pipe first, second;
    Fd number = dup_at_least(first.r, kHighFd);
    int stale = 0;
    s.add_reader(number, [&] { ++stale; });
    BOOST_TEST(s.remove_reader(number));
    s.forget_fd(number);
    number.become(second.r);  // closed and the same number reused for another file
    Recorder owner("owner");
    s.set_fd_owner(number, owner);
    s.watch(number, Interest::read);
    first.put();
    second.put();
    run_until(s, [&] { return !owner.heard.empty(); });
    BOOST_TEST(owner.heard == (std::vector<std::string>{"owner read"}), boost::test_tools::per_element());
    BOOST_TEST(stale == 0);
    s.forget_fd(number);
    CHECK_EMPTY(s);
}

BOOST_AUTO_TEST_CASE(a_number_an_owner_forgot_goes_to_a_callback_and_the_owner_hears_nothing) {
    Scheduler s(options());
    Pipe first, second;
    Fd number = dup_at_least(first.r, kHighFd);
    Recorder owner("owner");
    s.set_fd_owner(number, owner);
    s.watch(number, Interest::read);
    s.forget_fd(number);
    number.become(second.r);
    int callbacks = 0;
    s.add_reader(number, [&] { ++callbacks; });
    first.put();
    second.put();
    run_until(s, [&] { return callbacks > 0; });
    BOOST_TEST(callbacks == 1);
    BOOST_TEST(owner.heard.empty());
    BOOST_TEST(s.remove_reader(number));
    CHECK_EMPTY(s);
}

// Readable and writable at once: removing one direction leaves the other
// registered and watched.
BOOST_AUTO_TEST_CASE(read_and_write_callbacks_on_one_fd_each_survive_the_other_s_removal) {
    for (const bool remove_read : {false, true}) {
        BOOST_TEST_CONTEXT("removed: " << (remove_read ? "reader" : "writer")) {
            Scheduler s(options());
            SocketPair sp;
            Fd fd = dup_at_least(sp.a, kHighFd);
            int reads = 0, writes = 0;
            s.add_reader(fd, [&] { ++reads; });
            s.add_writer(fd, [&] { ++writes; });
            BOOST_REQUIRE(::write(sp.b, "x", 1) == 1);
            run_until(s, [&] { return reads > 0 && writes > 0; });
            BOOST_TEST(reads == 1);
            BOOST_TEST(writes == 1);
            BOOST_TEST((remove_read ? s.remove_reader(fd) : s.remove_writer(fd)));
            BOOST_TEST(s.waiter_count() == 1u);
            run_until(s, [&] { return reads + writes > 2; });
            BOOST_TEST(reads == (remove_read ? 1 : 2));
            BOOST_TEST(writes == (remove_read ? 2 : 1));
            BOOST_TEST((remove_read ? s.remove_writer(fd) : s.remove_reader(fd)));
            CHECK_EMPTY(s);
        }
    }
}

// What a connect in progress does: an owned fd with a callback waiter of
// its own. Both fire; removing the callback leaves the owner's watch.
BOOST_AUTO_TEST_CASE(an_owned_fd_with_a_callback_waiter_hears_both_and_keeps_its_watch) {
    Scheduler s(options());
    SocketPair sp;
    Fd fd = dup_at_least(sp.a, kHighFd);
    Recorder owner("owner");
    s.set_fd_owner(fd, owner);
    s.watch(fd, Interest::read);
    int writes = 0;
    s.write_wait(fd, [&] { ++writes; });  // one-shot: gone once it has run
    BOOST_REQUIRE(::write(sp.b, "x", 1) == 1);
    run_until(s, [&] { return writes > 0 && !owner.heard.empty(); });
    BOOST_TEST(writes == 1);
    BOOST_TEST(owner.heard.size() == 1u);
    BOOST_TEST(s.waiter_count() == 1u);  // the owner's watch
    run_until(s, [&] { return owner.heard.size() > 1; });
    BOOST_TEST(owner.heard == (std::vector<std::string>{"owner read", "owner read"}),
               boost::test_tools::per_element());
    BOOST_TEST(writes == 1);
    s.forget_fd(fd);
    CHECK_EMPTY(s);
}

// The owner hears the fd is closed; the callback waiters it left go after.
BOOST_AUTO_TEST_CASE(an_owned_fd_closed_under_its_watch_and_a_callback_drops_both) {
    Scheduler s(options());
    Pipe p;
    Fd doomed = dup_at_least(p.w, kHighFd);
    Recorder owner("owner");
    int reports = 0, writes = 0;
    s.set_exception_handler([&](const reactor::ErrorContext&) { ++reports; });
    s.set_fd_owner(doomed, owner);
    s.watch(doomed, Interest::read);  // a pipe's write end: never readable
    s.add_writer(doomed, [&] { ++writes; });
    doomed.close();  // without forget_fd: the promise broken, as a bug would
    auto guard = s.call_later(std::chrono::seconds(2), [&] { s.stop(); });
    for (int i = 0; i < 10 && owner.heard.empty(); ++i) s.run_once();
    BOOST_TEST(guard.cancel());
    BOOST_TEST(owner.heard == (std::vector<std::string>{"owner unwatchable Bad file descriptor"}),
               boost::test_tools::per_element());
    BOOST_TEST(reports == 0);
    BOOST_TEST(writes == 0);
    BOOST_TEST(s.waiter_count() == 0u);  // the writer went with the watch
    CHECK_EMPTY(s);
}

BOOST_AUTO_TEST_CASE(live_and_stats_report_callbacks_on_a_high_fd_and_owners_once) {
    Scheduler s(options());
    Pipe low;
    SocketPair sp;
    Fd high = dup_at_least(sp.a, kHighFd);
    const std::string high_fd = "fd " + std::to_string(high.get());
    s.add_reader(high, [] {});
    s.write_wait(high, [] {});
    Recorder owner("owner");
    s.set_fd_owner(low.r, owner);
    s.watch(low.r, Interest::read);
    s.add_writer(low.r, [] {});  // the owner's fd: the owner describes it, once

    const std::vector<LiveItem> items = s.live();
    BOOST_TEST(items.size() == 3u);
    BOOST_TEST(has_item(items, LiveItem::Kind::reader, high_fd));
    BOOST_TEST(has_item(items, LiveItem::Kind::writer, high_fd + ", one-shot"));
    BOOST_TEST(has_item(items, LiveItem::Kind::other, "owner on fd " + std::to_string(low.r.get())));
    const reactor::LoopStats stats = s.stats();
    BOOST_TEST(stats.readers == 2u);  // the high fd's callback, the owner's watch
    BOOST_TEST(stats.writers == 2u);  // the high fd's one-shot, the callback on the owner's fd
    BOOST_TEST(s.waiter_count() == 4u);

    BOOST_TEST(s.remove_reader(high));
    BOOST_TEST(s.remove_writer(high));
    BOOST_TEST(s.remove_writer(low.r));
    s.watch(low.r, Interest::none);
    BOOST_TEST(s.stats().readers == 0u);
    BOOST_TEST(s.stats().writers == 0u);
    const std::vector<LiveItem> after = s.live();
    BOOST_TEST(after.empty());  // an owner that watches nothing is not alive
    s.forget_fd(low.r);
    CHECK_EMPTY(s);
}

// close() empties both tables: the loop may run again, and a number that had
// a callback starts afresh.
BOOST_AUTO_TEST_CASE(close_reports_a_high_fd_s_callback_and_the_loop_takes_it_again) {
    Scheduler s(options());
    Pipe p;
    Fd high = dup_at_least(p.r, kHighFd);
    int before = 0, after = 0;
    s.add_reader(high, [&] { ++before; });
    const std::vector<LiveItem> closed = s.close();
    BOOST_TEST(closed.size() == 1u);
    BOOST_TEST(has_item(closed, LiveItem::Kind::reader, "fd " + std::to_string(high.get())));
    BOOST_TEST(s.waiter_count() == 0u);
    BOOST_TEST(s.stats().readers == 0u);
    BOOST_TEST(!s.remove_reader(high));
    s.add_reader(high, [&] { ++after; });
    p.put();
    run_until(s, [&] { return after > 0; });
    BOOST_TEST(before == 0);
    BOOST_TEST(after == 1);
    BOOST_TEST(s.remove_reader(high));
    CHECK_EMPTY(s);
}
