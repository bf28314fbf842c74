// SPDX-License-Identifier: MIT
// docs/scheduler.md, "Extending the loop": a user's own socket type (a
// Beacon) that ends with its loop through a LoopService of its own, and a
// WorkHold.
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <memory>
#include <source_location>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <boost/test/unit_test.hpp>
#include <fmt/format.h>
#include <reactor/fd_owner.hpp>
#include <reactor/intrusive_list.hpp>
#include <reactor/loop_service.hpp>
#include <reactor/scheduler.hpp>
#include <reactor/work_hold.hpp>
#include <futures/futures.hpp>
#include <reactor/net/connection.hpp>
#include <reactor/net/connection_set.hpp>
#include <reactor/net/connector.hpp>
#include <reactor/net/listener.hpp>
#include <reactor/net/udp_socket.hpp>
#include <reactor/thread_pool.hpp>

using namespace std::chrono_literals;

namespace {

// [snippet:beacon]
class Beacon;

// The beacons of one loop: made by the first Beacon (sched.service<Beacons>()),
// told of the loop's end, destroyed with the Scheduler.
class Beacons final : public reactor::LoopService {
public:
    explicit Beacons(reactor::Scheduler& sched) : LoopService(sched) {}
    void add(Beacon& b) noexcept { open_.push_back(b); }
    void close() override;                  // Scheduler::close(): end each one, telling its owner
    void abandon() noexcept override;       // ~Scheduler (and close()'s phase 4): end each one silently
    void describe(std::vector<reactor::LiveItem>& out) const override;  // live(): one item each

private:
    reactor::IntrusiveList<Beacon> open_;  // a beacon leaves by itself as it closes or dies
};

// Owns one end of a socketpair and counts the bytes that come in. The program
// owns the Beacon; the loop only ends its use of the fd, so a Beacon may
// outlive its Scheduler (closed, it never touches the loop again).
class Beacon final : private reactor::ListMember<Beacon>, private reactor::FdOwner {
public:
    using EndCallback = std::function<void(std::string_view why)>;

    Beacon(reactor::Scheduler& sched, int fd, EndCallback on_end,
           std::source_location where = std::source_location::current())
        : sched_(sched), fd_(fd), where_(where), on_end_(std::move(on_end)) {
        sched_.set_fd_owner(fd_, *this);             // live() asks the service what this fd is
        sched_.watch(fd_, reactor::Interest::read);  // on_ready below, no callback slot; work: keeps run() going
        sched_.service<Beacons>().add(*this);
    }
    Beacon(const Beacon&) = delete;
    Beacon& operator=(const Beacon&) = delete;
    ~Beacon() { release(); }

    bool is_open() const noexcept { return fd_ >= 0; }
    int flashes() const noexcept { return flashes_; }

private:
    friend class Beacons;
    friend class reactor::IntrusiveList<Beacon>;

    // The loop calls it for what watch() asked (libuv's handles work this way).
    void on_ready(int, reactor::Interest) override {
        char buf[64];
        ssize_t n = ::read(fd_, buf, sizeof buf);
        if (n > 0) flashes_ += static_cast<int>(n);
        if (n == 0) end("the peer closed");
    }
    // Scheduler::close(): the owner hears it on the loop (close() runs what is ready).
    void end(std::string_view why) {
        release();
        if (EndCallback cb = std::exchange(on_end_, nullptr)) {
            sched_.call_soon([cb = std::move(cb), why = std::string(why)] { cb(why); }, where_);
        }
    }
    // Abandoned: the callback is destroyed unrun (objects it captures may be gone).
    void end_silently() noexcept {
        release();
        on_end_ = nullptr;
    }
    // The one way out: leave the service, stop being watched, close the fd.
    void release() noexcept {
        if (fd_ < 0) return;
        unlink();               // out of Beacons::open_ (ListMember)
        sched_.forget_fd(fd_);  // ends the watch and the ownership, before the close
        ::close(std::exchange(fd_, -1));
    }
    void on_unwatchable(int, std::error_code) override { end("the loop cannot watch it"); }
    std::source_location origin() const noexcept override { return where_; }  // for reports

    reactor::Scheduler& sched_;
    int fd_;
    std::source_location where_;  // the user's line, for live()
    EndCallback on_end_;
    int flashes_ = 0;
};

void Beacons::close() {
    while (Beacon* b = open_.pop_front()) b->end("the loop was closed");
}
void Beacons::abandon() noexcept {
    while (Beacon* b = open_.pop_front()) b->end_silently();
}
void Beacons::describe(std::vector<reactor::LiveItem>& out) const {
    open_.for_each([&out](const Beacon& b) {
        out.push_back({reactor::LiveItem::Kind::other, fmt::format("beacon, fd {}", b.fd_), b.where_, true});
    });
}
// [end-snippet:beacon]

struct SocketPair {
    int ours = -1;
    int theirs = -1;
    SocketPair() {
        int sv[2];
        BOOST_REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) == 0);
        ours = sv[0];
        theirs = sv[1];
    }
    ~SocketPair() {
        if (theirs >= 0) ::close(theirs);
    }
};

}  // namespace

BOOST_AUTO_TEST_SUITE(scheduler_md_services)

BOOST_AUTO_TEST_CASE(beacon_closed_and_destroyed) {
    SocketPair pair;
    SocketPair pair2;
    std::vector<std::string> reports;
    const unsigned before = std::source_location::current().line();
    // [snippet:beacon_use]
    reactor::Scheduler sched;
    sched.set_exception_handler([&](const reactor::ErrorContext& ctx) { reports.push_back(ctx.message); });
    std::string ended;
    Beacon beacon(sched, pair.ours, [&](std::string_view why) { ended = why; });
    ssize_t sent = ::write(pair.theirs, "!!", 2);  // the peer flashes twice
    sched.run_for(10ms);                           // beacon.flashes() == 2
    std::vector<reactor::LiveItem> alive = sched.live();  // {"other (beacon, fd N) created at app.cpp:LINE"}
    sched.close();  // ended == "the loop was closed", !beacon.is_open()

    // Destroyed instead of closed: the beacon ends silently, and may outlive the loop.
    std::string ended2;
    auto loop2 = std::make_unique<reactor::Scheduler>();
    auto beacon2 = std::make_unique<Beacon>(*loop2, pair2.ours, [&](std::string_view why) { ended2 = why; });
    loop2.reset();    // ended2 == "", !beacon2->is_open()
    beacon2.reset();  // after its Scheduler: fine
    // [end-snippet:beacon_use]
    const unsigned after = std::source_location::current().line();

    BOOST_TEST(sent == 2);
    BOOST_TEST(beacon.flashes() == 2);
    // live() lists the beacon once, by the line of this block that made it (not
    // its fd's reader as well: the Beacon owns the fd).
    BOOST_REQUIRE(alive.size() == 1u);
    BOOST_TEST((alive[0].kind == reactor::LiveItem::Kind::other));
    BOOST_TEST(alive[0].where_known);
    BOOST_TEST(std::string_view(alive[0].where.file_name()).ends_with("services.cpp"));
    BOOST_TEST(alive[0].where.line() > before);
    BOOST_TEST(alive[0].where.line() < after);
    BOOST_TEST(alive[0].to_string().find("other (beacon, fd ") == 0u);
    // close() reported it, then the summary, then ended it in order.
    BOOST_REQUIRE(reports.size() == 2u);
    BOOST_TEST(reports[0].find("still alive at close: other (beacon, fd ") == 0u);
    BOOST_TEST(reports[1].find("close: 1 item(s) were still alive") == 0u);
    BOOST_TEST(ended == "the loop was closed");
    BOOST_TEST(!beacon.is_open());
    BOOST_TEST(sched.live().empty());
    BOOST_TEST(sched.empty());
    // The second loop ended its beacon without running its callback.
    BOOST_TEST(ended2.empty());
    // The beacon's fd was closed: the peer reads EOF.
    char c;
    BOOST_TEST(::read(pair.theirs, &c, 1) == 0);
    BOOST_TEST(::read(pair2.theirs, &c, 1) == 0);
}

BOOST_AUTO_TEST_CASE(beacon_closed_by_its_peer) {
    SocketPair pair;
    reactor::Scheduler sched;
    std::string ended;
    Beacon beacon(sched, pair.ours, [&](std::string_view why) { ended = why; });
    ::close(std::exchange(pair.theirs, -1));
    sched.run();  // the reader sees EOF: the beacon closes and run() has nothing left
    BOOST_TEST(ended == "the peer closed");
    BOOST_TEST(!beacon.is_open());
    BOOST_TEST(sched.live().empty());
}

BOOST_AUTO_TEST_CASE(work_hold) {
    reactor::Scheduler sched;
    // [snippet:work_hold]
    reactor::WorkHold hold = sched.hold_work();  // live(): "work hold created at app.cpp:LINE"
    reactor::RunStatus a = sched.run_for(10ms);    // timed_out: nothing is scheduled, but the hold is work
    sched.call_later(1ms, [&] { hold.release(); });  // or destroy it; from another thread, post the release
    reactor::RunStatus b = sched.run_for(1h);      // idle: it returned once the hold was released
    // [end-snippet:work_hold]
    BOOST_TEST((a == reactor::RunStatus::timed_out));
    BOOST_TEST((b == reactor::RunStatus::idle));
    BOOST_TEST(!hold.holds());

    // close() releases a hold still held (after reporting it); its owner finds it empty.
    std::vector<std::string> reports;
    sched.set_exception_handler([&](const reactor::ErrorContext& ctx) { reports.push_back(ctx.message); });
    reactor::WorkHold kept = sched.hold_work();
    BOOST_TEST(sched.live().size() == 1u);
    sched.close();
    BOOST_TEST(!kept.holds());
    BOOST_REQUIRE(reports.size() == 2u);
    BOOST_TEST(reports[0].find("still alive at close: work hold created at") == 0u);
    kept.release();  // harmless

    // Destroyed first: the hold is released too, and may be destroyed after.
    auto loop2 = std::make_unique<reactor::Scheduler>();
    reactor::WorkHold outliving = loop2->hold_work();
    loop2.reset();
    BOOST_TEST(!outliving.holds());
}

// docs/scheduler.md, "What outlives what": what the table says may be kept past
// close() or the destructor, kept, read and destroyed after it (under ASan in CI).
// Loopback and socketpairs only; the child is killed at once.
BOOST_AUTO_TEST_CASE(what_outlives_what) {
    const reactor::Address loopback = reactor::Address::parse("127.0.0.1", 0);
    reactor::ThreadPool pool(1);
    for (bool close_first : {true, false}) {
        BOOST_TEST_CONTEXT("close_first " << close_first) {
            auto sched = std::make_unique<reactor::Scheduler>();
            sched->set_exception_handler([](const reactor::ErrorContext&) {});
            SocketPair pair;
            reactor::ConnectionPtr conn = reactor::Connection::adopt(*sched, std::exchange(pair.ours, -1));
            reactor::EndKind conn_closed = reactor::EndKind::local;
            bool conn_close_ran = false;
            conn->set_close_callback([&](reactor::Connection&, const reactor::End& why) {
                conn_close_ran = true;
                conn_closed = why.kind;
            });
            auto set = reactor::ConnectionSet::create(*sched);
            set->add(conn);
            bool set_emptied = false;
            set->when_empty([&] { set_emptied = true; });
            auto listener = reactor::Listener::listen(*sched, loopback, [](const reactor::ConnectionPtr&) {});
            bool listener_closed = false;
            listener->wait_closed([&] { listener_closed = true; });
            auto udp = reactor::UdpSocket::bind(*sched, loopback);
            bool connected = false;
            auto connector = reactor::connect(*sched, listener->address(),
                                              [&](reactor::ConnectionPtr, std::error_code) { connected = true; });
            reactor::WorkHold hold = sched->hold_work();
            bool timer_ran = false;
            reactor::Handle timer = sched->call_later(1h, [&] { timer_ran = true; });
            futures::Future<int> hand_made(*sched);
            futures::Queue<int> queue(*sched);
            futures::Future<int> parked = queue.get();
            futures::PipeStreams pipe = futures::open_pipe(*sched);
            futures::Future<std::string> read = pipe.read_end.read(10);
            bool done_ran = false;
            reactor::Job job = pool.submit(*sched, [] { return 1; }, [&](reactor::JobResult<int>&&) { done_ran = true; });
            futures::Process child = futures::spawn_process(*sched, {"/bin/sleep", "5"});
            futures::Future<int> exit = child.wait();

            if (close_first) {
                sched->close();
            } else {
                sched.reset();
            }

            BOOST_TEST(!conn->is_open());
            BOOST_TEST(conn_close_ran == close_first);
            if (close_first) BOOST_TEST((conn_closed == reactor::EndKind::scheduler_closed));
            BOOST_TEST(!conn->write("x"));
            conn->close();
            conn->abort();
            BOOST_TEST(set->empty());
            BOOST_TEST(set_emptied == close_first);
            BOOST_TEST(!listener->is_listening());
            BOOST_TEST(listener_closed == close_first);
            BOOST_TEST(!udp->is_open());
            if (close_first) {
                // Its connect may complete while close() runs the close callbacks
                // (phase 3 polls the fds without waiting): then its callback ran;
                // otherwise it was dropped unrun and still says is_pending().
                BOOST_TEST(connected != connector->is_pending());
            } else {
                BOOST_TEST(!connected);
                BOOST_TEST(connector->is_pending());  // not told: see the table
            }
            BOOST_TEST(!hold.holds());
            BOOST_TEST(!timer_ran);
            BOOST_TEST(hand_made.cancelled());
            BOOST_TEST(parked.cancelled());
            BOOST_TEST(read.cancelled());
            BOOST_TEST(!done_ran);
            BOOST_TEST(!job.is_pending());
            BOOST_TEST(!job.cancel());
            BOOST_TEST(exit.cancelled());
            BOOST_TEST(child.wait().cancelled());  // a later wait() too
            BOOST_TEST(child.kill());              // the child is still ours to signal
            if (close_first) {
                BOOST_TEST(!timer.is_pending());
                if (connector->is_pending()) BOOST_TEST(connector->cancel());  // closes its socket
                BOOST_TEST(sched->live().empty());
            }
            // Everything above is destroyed now, after its Scheduler when it was destroyed.
            conn.reset();
            set.reset();
            listener.reset();
            udp.reset();
            connector.reset();
            hold.release();
        }
    }
}

BOOST_AUTO_TEST_SUITE_END()
