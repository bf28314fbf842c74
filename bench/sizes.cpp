// SPDX-License-Identifier: MIT
// sizes: what one idle connection is made of (issue 22), in the manner of
// libuv's `sizes` benchmark, plus the heap each accepted connection adds.
//
//   sizes [N]     (N: connections per scenario, default 1000)
//
// Prints markdown tables:
//  1. sizeof of the types an idle connection is built from;
//  2. reactor::Connection's members grouped by type, added up against its
//     sizeof (the padding row is what is left: padding, or members this
//     table misses, since it mirrors connection.hpp and goes stale when
//     that changes);
//  3. per scenario, the heap one accepted idle connection adds: blocks and
//     bytes, split into per-connection objects and loop-wide storage;
//  4. per scenario, the blocks still live, by call site.
//
// How the heap is counted: this program replaces malloc, calloc, realloc,
// free and the aligned allocators (glibc's documented way of replacing
// malloc), forwarding to glibc's own (__libc_malloc, ...); operator new
// comes through them too. A block's cost is its chunk, malloc_usable_size
// + 8 bytes (glibc's size header): what the heap really gives up for it.
// Between two points ("the window") each block allocated is recorded with
// its requested size and its call stack (backtrace(); the program is linked
// -rdynamic so the frames have names), so the blocks still live at the end
// can be listed by who allocated them.
//
// Each scenario runs in a child process of its own (no heap state or
// futures pool carried over): a Scheduler (epoll), a server on 127.0.0.1:0,
// a warm-up of 16 connections (accepted, one 1-byte echo each, kept open:
// the loop's lazily made state is not charged to the measured ones), then
// the window: N client sockets connect (non-blocking, from this process),
// the loop accepts all of them, each echoes 1 byte, and they stay open. The
// clients are plain fds (socket, connect, send, recv: no heap), kept at high
// fd numbers so the server's fds are numbered from 0 as in a server process
// of its own (the loop's per-fd tables are indexed by fd).
//
// Per-connection objects or loop-wide storage: a (call site, size) seen at
// least N/2 times is per-connection; one seen a few times is loop-wide
// storage (the Scheduler's slot table and per-fd table, the selector's,
// the connection set's: std::vectors that grow by doubling and never
// shrink), charged to the N connections it grew for, net of the outgrown
// buffers it freed. Its share depends on where N falls between two powers
// of two, and on the peak, not the current, number of entries.
//
// Bounded: every wait for the loop or a socket gives up after 10 s (exit 1),
// each child after 120 s. 127.0.0.1 only.
#include <cxxabi.h>
#include <execinfo.h>
#include <fcntl.h>
#include <malloc.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <source_location>
#include <string>
#include <string_view>
#include <vector>

#include <futures/detail/state_pool.hpp>
#include <futures/futures.hpp>
#include <futures/stream.hpp>
#include <reactor/callback.hpp>
#include <reactor/callback_slot.hpp>
#include <reactor/detail/scheduler_slots.hpp>
#include <reactor/handle.hpp>
#include <reactor/intrusive_list.hpp>
#include <reactor/net/address.hpp>
#include <reactor/net/byte_buffer.hpp>
#include <reactor/net/connection.hpp>
#include <reactor/net/listener.hpp>
#include <reactor/scheduler.hpp>

// The futures' internal states (futures/src: not installed headers).
#include "stream_core.hpp"
#include "stream_server.hpp"

// ================================================================ heap counting

extern "C" {
void* __libc_malloc(size_t);
void __libc_free(void*);
void* __libc_calloc(size_t, size_t);
void* __libc_realloc(void*, size_t);
void* __libc_memalign(size_t, size_t);
}

namespace heap {

// What a block takes from the heap: its chunk (usable size + the size header).
inline std::size_t chunk_of(void* p) { return malloc_usable_size(p) + sizeof(std::size_t); }

struct Totals {
    long live_blocks = 0;
    long live_bytes = 0;   // chunks
    long allocs = 0;       // allocations ever made
    long alloc_bytes = 0;  // their chunks
};

// Where a block was allocated: the return addresses of its call stack
// (glibc's backtrace(), which unwinds through .eh_frame: no frame pointers
// needed). Sites are interned in a fixed table.
constexpr int kFrames = 12;
constexpr std::size_t kSites = 4096;
struct Site {
    void* frames[kFrames];
    int depth;
};
Site sites[kSites];
std::size_t site_count = 0;

// Blocks allocated during the window: open addressing keyed by address,
// static (no allocation from inside malloc). Big enough for any window here;
// on overflow the listing is marked incomplete, the totals stay right.
struct Record {
    std::uintptr_t p;  // the block's address; kEmpty, or kGone once freed (a tombstone)
    std::size_t requested;
    std::uint32_t chunk;
    std::uint32_t site;  // index in sites[], or kNoSite
};
constexpr std::size_t kTable = std::size_t{1} << 18;
constexpr std::uintptr_t kEmpty = 0, kGone = 1;
constexpr std::uint32_t kNoSite = UINT32_MAX;
Record table[kTable];
bool overflowed = false;

Totals totals;
bool window = false;
bool in_backtrace = false;         // backtrace() itself may allocate (its first call loads libgcc_s)
long window_old_freed_blocks = 0;  // blocks from before the window freed during it
long window_old_freed_bytes = 0;
std::atomic_flag lock = ATOMIC_FLAG_INIT;  // malloc may be called from any thread

struct Guard {
    Guard() {
        while (lock.test_and_set(std::memory_order_acquire)) {
        }
    }
    ~Guard() { lock.clear(std::memory_order_release); }
};

// Fibonacci hashing of the address (blocks are 16-byte aligned) to 18 bits.
std::size_t slot_of(std::uintptr_t p) { return (p >> 4) * 0x9E3779B97F4A7C15ULL >> 46; }

// Under the lock.
std::uint32_t intern(void* const* frames, int depth) {
    for (std::size_t i = 0; i < site_count; ++i)
        if (sites[i].depth == depth && std::memcmp(sites[i].frames, frames, sizeof(void*) * depth) == 0)
            return static_cast<std::uint32_t>(i);
    if (site_count == kSites) return kNoSite;
    Site& s = sites[site_count];
    std::memcpy(s.frames, frames, sizeof(void*) * depth);
    s.depth = depth;
    return static_cast<std::uint32_t>(site_count++);
}

void note_alloc(void* p, std::size_t n) {
    if (!p) return;
    const std::size_t c = chunk_of(p);
    void* frames[kFrames];
    int depth = 0;
    if (window && !in_backtrace) {  // unwinding takes no lock of ours
        in_backtrace = true;
        depth = backtrace(frames, kFrames);
        in_backtrace = false;
    }
    Guard g;
    ++totals.live_blocks;
    totals.live_bytes += static_cast<long>(c);
    ++totals.allocs;
    totals.alloc_bytes += static_cast<long>(c);
    if (!window) return;
    const std::uint32_t site = depth > 0 ? intern(frames, depth) : kNoSite;
    const auto key = reinterpret_cast<std::uintptr_t>(p);
    for (std::size_t i = slot_of(key), probes = 0; probes < kTable; i = (i + 1) % kTable, ++probes) {
        if (table[i].p == kEmpty || table[i].p == kGone) {
            table[i] = {key, n, static_cast<std::uint32_t>(c), site};
            return;
        }
    }
    overflowed = true;
}

void note_free(void* p) {
    if (!p) return;
    const std::size_t c = chunk_of(p);
    Guard g;
    --totals.live_blocks;
    totals.live_bytes -= static_cast<long>(c);
    if (!window) return;
    const auto key = reinterpret_cast<std::uintptr_t>(p);
    for (std::size_t i = slot_of(key), probes = 0; probes < kTable && table[i].p != kEmpty;
         i = (i + 1) % kTable, ++probes) {
        if (table[i].p == key) {
            table[i].p = kGone;
            return;
        }
    }
    ++window_old_freed_blocks;
    window_old_freed_bytes += static_cast<long>(c);
}

// The blocks of one (site, requested size) still live at the window's end.
struct Group {
    std::uint32_t site;
    std::size_t requested;
    long blocks = 0;
    long chunk_bytes = 0;
};

struct Window {
    Totals start, end;
    long old_freed_blocks = 0, old_freed_bytes = 0;
    std::vector<Group> live;  // by site and size
    bool listing_complete = true;
};

void begin() {
    {  // the first backtrace() loads the unwinder: not inside the window
        void* f[2];
        backtrace(f, 2);
    }
    Guard g;
    std::memset(static_cast<void*>(table), 0, sizeof table);
    site_count = 0;
    overflowed = false;
    window_old_freed_blocks = window_old_freed_bytes = 0;
    window = true;
}

// Ends the window. The listing is built once the lock is released (a vector
// allocates), from a copy of the live records made under it.
Window end(const Totals& start) {
    static Record live[kTable];
    std::size_t n = 0;
    Window w;
    w.start = start;
    {
        Guard g;
        window = false;
        w.end = totals;
        w.old_freed_blocks = window_old_freed_blocks;
        w.old_freed_bytes = window_old_freed_bytes;
        w.listing_complete = !overflowed;
        for (const Record& r : table)
            if (r.p != kEmpty && r.p != kGone) live[n++] = r;
    }
    for (std::size_t i = 0; i < n; ++i) {
        auto it = std::find_if(w.live.begin(), w.live.end(), [&](const Group& g) {
            return g.site == live[i].site && g.requested == live[i].requested;
        });
        if (it == w.live.end()) it = w.live.insert(w.live.end(), Group{live[i].site, live[i].requested});
        ++it->blocks;
        it->chunk_bytes += live[i].chunk;
    }
    return w;
}

Totals now() {
    Guard g;
    return totals;
}

// "reactor::Scheduler::alloc_slot" from a frame: its symbol (the program is
// linked with -rdynamic), demangled, without parameters or template
// arguments. Empty for a frame with no symbol (a static function, a lambda).
std::string function_of(void* frame) {
    char** names = backtrace_symbols(&frame, 1);
    if (!names) return {};
    std::string raw = names[0];
    ::free(names);
    const std::size_t open = raw.find('('), plus = raw.find('+', open);
    if (open == std::string::npos || plus == std::string::npos || plus == open + 1) return {};
    const std::string mangled = raw.substr(open + 1, plus - open - 1);
    int status = 0;
    char* demangled = abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status);
    std::string full = status == 0 && demangled ? demangled : mangled;
    ::free(demangled);
    std::string out;
    int depth = 0;
    for (char ch : full) {
        if (ch == '<' || ch == '(' || ch == '[') ++depth;
        if (depth == 0) out += ch;
        if ((ch == '>' || ch == ')' || ch == ']') && depth > 0) --depth;
    }
    // A function template's name starts with its return type ("void std::vector::_M_realloc_insert").
    if (!out.starts_with("operator ") && out.find(' ') != std::string::npos) out = out.substr(out.rfind(' ') + 1);
    return out;
}

// The first frames of our own code (reactor::, futures::, this program),
// innermost first, past malloc, operator new and the standard library: the
// container or object the block belongs to, and who made it. A standard
// container right below is named too ("std::vector ..." / "std::_Hashtable").
std::string describe_site(std::uint32_t site, int want = 3) {
    if (site == kNoSite) return "(unknown)";
    const Site& s = sites[site];
    std::string out, container;
    int shown = 0;
    // Frame 0 is note_alloc (or malloc, where note_alloc is inlined).
    for (int i = 1; i < s.depth && shown < want; ++i) {
        const std::string f = function_of(s.frames[i]);
        if (f.empty() || f == "malloc" || f == "calloc" || f == "realloc" || f.starts_with("operator new")) continue;
        if (f.starts_with("std::") || f.starts_with("__gnu_cxx::")) {
            if (container.empty() && shown == 0) {
                const std::size_t last = f.rfind("::");
                container = f.substr(0, last);
            }
            continue;
        }
        if (f == "main" || f.starts_with("__libc")) break;
        out += (shown ? " < " : "") + f;
        ++shown;
    }
    if (!container.empty()) out = container + " in " + out;
    return out.empty() ? "(no symbol)" : out;
}

}  // namespace heap

extern "C" {
void* malloc(size_t n) {
    void* p = __libc_malloc(n);
    heap::note_alloc(p, n);
    return p;
}
void free(void* p) {
    heap::note_free(p);
    __libc_free(p);
}
void* calloc(size_t n, size_t size) {
    void* p = __libc_calloc(n, size);
    heap::note_alloc(p, n * size);
    return p;
}
void* realloc(void* old, size_t n) {
    heap::note_free(old);
    void* p = __libc_realloc(old, n);
    if (p) {
        heap::note_alloc(p, n);
    } else if (old && n != 0) {
        heap::note_alloc(old, 0);  // failed: the old block is still live (its size unknown)
    }
    return p;
}
void* memalign(size_t align, size_t n) {
    void* p = __libc_memalign(align, n);
    heap::note_alloc(p, n);
    return p;
}
void* aligned_alloc(size_t align, size_t n) { return memalign(align, n); }
int posix_memalign(void** out, size_t align, size_t n) {
    void* p = memalign(align, n);
    if (!p) return ENOMEM;
    *out = p;
    return 0;
}
void* valloc(size_t n) { return memalign(static_cast<size_t>(sysconf(_SC_PAGESIZE)), n); }
void* pvalloc(size_t n) {
    const auto page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    return memalign(page, (n + page - 1) / page * page);
}
}

// ================================================================ helpers

namespace {

using namespace std::chrono_literals;

[[noreturn]] void die(const std::string& what) {
    std::fprintf(stderr, "sizes: %s\n", what.c_str());
    std::exit(1);
}

constexpr auto kWaitLimit = 10s;
constexpr int kWarmup = 16;

// Runs the loop until `done()`, at most kWaitLimit.
template <class F>
void run_until(reactor::Scheduler& sched, F done, const char* what) {
    const auto limit = std::chrono::steady_clock::now() + kWaitLimit;
    while (!done()) {
        if (std::chrono::steady_clock::now() > limit) die(std::string("the loop did not get there in 10 s: ") + what);
        sched.run_for(5ms);
    }
}

// N client sockets of this process, plain fds.
class Clients {
public:
    explicit Clients(std::size_t capacity) { fds_.reserve(capacity); }  // before any window
    Clients(const Clients&) = delete;
    Clients& operator=(const Clients&) = delete;
    ~Clients() { close_all(); }

    // Connects n more (non-blocking; the loop then accepts them). Each fd is
    // moved to the top of the fd range so the server's stay dense from 0.
    void connect(std::uint16_t port, int n) {
        for (int i = 0; i < n; ++i) {
            int s = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
            if (s < 0) die(std::string("socket: ") + std::strerror(errno));
            int high = ::fcntl(s, F_DUPFD_CLOEXEC, next_high_--);
            if (high < 0) die(std::string("fcntl(F_DUPFD): ") + std::strerror(errno));
            ::close(s);
            sockaddr_in sa{};
            sa.sin_family = AF_INET;
            sa.sin_port = htons(port);
            sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
            if (::connect(high, reinterpret_cast<sockaddr*>(&sa), sizeof sa) < 0 && errno != EINPROGRESS)
                die(std::string("connect: ") + std::strerror(errno));
            fds_.push_back(high);
        }
    }

    // One byte on each of the connections [first, size()) once it is connected.
    void send_probes(std::size_t first) {
        for (std::size_t i = first; i < fds_.size(); ++i) {
            wait_for(fds_[i], POLLOUT, "connected");
            char b = static_cast<char>('a' + i % 26);
            if (::send(fds_[i], &b, 1, MSG_NOSIGNAL) != 1) die(std::string("send: ") + std::strerror(errno));
        }
    }
    // Reads each echo back (the loop has run: it is in the socket already).
    void read_echoes(std::size_t first) {
        for (std::size_t i = first; i < fds_.size(); ++i) {
            wait_for(fds_[i], POLLIN, "echoed");
            char b = 0;
            if (::recv(fds_[i], &b, 1, 0) != 1 || b != static_cast<char>('a' + i % 26))
                die("a connection did not echo its byte");
        }
    }
    void close_all() {
        for (int fd : fds_) ::close(fd);
        fds_.clear();
    }
    std::size_t size() const { return fds_.size(); }

    static void set_top(int top) { next_high_ = top; }

private:
    static void wait_for(int fd, short events, const char* what) {
        pollfd p{fd, events, 0};
        int r = ::poll(&p, 1, 10'000);
        if (r != 1 || !(p.revents & events)) die(std::string("a client socket was not ") + what + " within 10 s");
    }
    std::vector<int> fds_;
    static inline int next_high_ = 0;
};

// ---------------------------------------------------------------- scenarios

// The server side of one scenario: how it is set up, how many connections it
// has accepted, how many bytes it has echoed.
struct Server {
    virtual ~Server() = default;
    virtual std::uint16_t port() const = 0;
    virtual std::uint64_t accepted() const = 0;
    virtual std::uint64_t echoed() const = 0;
    virtual std::size_t open() const = 0;  // connections not closed yet
};

reactor::Scheduler::Options epoll_options() {
    reactor::Scheduler::Options o;
    o.backend = reactor::Backend::epoll;
    return o;
}

reactor::ConnectionOptions with_deadlines(bool read, bool write, bool idle) {
    reactor::ConnectionOptions o;
    if (read) o.read_timeout = std::chrono::seconds(300);
    if (write) o.write_timeout = std::chrono::seconds(300);
    if (idle) o.idle_timeout = std::chrono::seconds(300);
    return o;
}

// Callback server: the accept callback sets a data callback (echo) and a
// close callback, or the data callback and the high and low water callbacks
// (examples/09_echo_server did, before ConnectionOptions::
// pause_reading_above_high_water made them unnecessary).
class CallbackServer final : public Server {
public:
    enum class Shape { data_close, echo_server };

    CallbackServer(reactor::Scheduler& sched, Shape shape, reactor::ConnectionOptions options) {
        reactor::Listener::Options lo;
        lo.connection = options;
        listener_ = reactor::Listener::listen(
            sched, reactor::Address::loopback_v4(0),
            [this, shape](const reactor::ConnectionPtr& c) {
                c->set_data_callback([this](reactor::Connection& c, std::string_view d) {
                    echoed_ += d.size();
                    c.write(d);
                });
                if (shape == Shape::data_close) {
                    c->set_close_callback([this](reactor::Connection&, const reactor::CloseReason&) { ++closed_; });
                } else {
                    c->set_high_water_callback([](reactor::Connection& c) { c.pause_reading(); });
                    c->set_low_water_callback([](reactor::Connection& c) { c.resume_reading(); });
                }
            },
            lo);
    }
    std::uint16_t port() const override { return listener_->address().port(); }
    std::uint64_t accepted() const override { return listener_->accepted(); }
    std::uint64_t echoed() const override { return echoed_; }
    std::size_t open() const override { return listener_->connections().size(); }

private:
    reactor::ListenerPtr listener_;
    std::uint64_t echoed_ = 0;
    std::uint64_t closed_ = 0;
};

// One stream conversation as examples/10_echo_server_streams has it: read,
// write, drain, read again; idle, it is parked in a read.
class EchoSession {
public:
    EchoSession(futures::Stream stream, std::uint64_t& echoed) : stream_(std::move(stream)), echoed_(&echoed) {}

    futures::Step<void> resume() {
        for (;;) {
            // Each finished future taken out of its member as its result is
            // taken, as examples/10's session does: kept, its state would stay
            // allocated through the next wait.
            if (draining_) {
                std::exchange(drain_, {}).result();
                draining_ = false;
                return read_ = stream_.read();
            }
            if (!read_.valid()) return read_ = stream_.read();
            std::string data = std::exchange(read_, {}).result();
            if (data.empty()) return futures::finished;  // EOF
            *echoed_ += data.size();
            stream_.write(data);
            draining_ = true;
            return drain_ = stream_.drain();
        }
    }

private:
    futures::Stream stream_;
    std::uint64_t* echoed_;
    bool draining_ = false;
    futures::Future<std::string> read_;
    futures::Future<void> drain_;
};

class StreamServer final : public Server {
public:
    StreamServer(reactor::Scheduler& sched, reactor::ConnectionOptions options) {
        futures::StreamOptions so;
        so.connection = options;
        server_ = futures::start_server(
            sched, reactor::Address::loopback_v4(0),
            [this, &sched](futures::Stream s) {
                return futures::spawn(sched, EchoSession(std::move(s), echoed_));
            },
            so);
    }
    std::uint16_t port() const override { return server_.address().port(); }
    std::uint64_t accepted() const override { return server_.accepted(); }
    std::uint64_t echoed() const override { return echoed_; }
    std::size_t open() const override { return server_.active(); }

private:
    futures::StreamServer server_;
    std::uint64_t echoed_ = 0;
};

struct Scenario {
    const char* name;
    std::function<std::unique_ptr<Server>(reactor::Scheduler&)> make;
};

struct Measured {
    heap::Window w;
    long n;
    long pool_blocks, pool_bytes;  // growth of the futures' pool of free states
};

// Opens `n` connections against `server` and runs the loop until each is
// accepted and has echoed one byte.
void open_connections(reactor::Scheduler& sched, Server& server, Clients& clients, int n) {
    const std::size_t first = clients.size();
    const std::uint64_t accepted = server.accepted() + static_cast<std::uint64_t>(n);
    const std::uint64_t echoed = server.echoed() + static_cast<std::uint64_t>(n);
    clients.connect(server.port(), n);
    run_until(sched, [&] { return server.accepted() >= accepted; }, "accepting");
    clients.send_probes(first);
    run_until(sched, [&] { return server.echoed() >= echoed; }, "echoing");
    clients.read_echoes(first);
    // What the echoes scheduled (a drain's completion, a session's next read)
    // runs before the window closes.
    sched.run_for(20ms);
}

Measured measure(const Scenario& s, int n) {
    reactor::Scheduler sched(epoll_options());
    std::unique_ptr<Server> server = s.make(sched);
    Clients clients(static_cast<std::size_t>(kWarmup + n));
    open_connections(sched, *server, clients, kWarmup);

    const long pool_blocks = static_cast<long>(futures::detail::pooled_state_blocks());
    const long pool_bytes = static_cast<long>(futures::detail::pooled_state_bytes());
    const heap::Totals start = heap::now();
    heap::begin();
    open_connections(sched, *server, clients, n);
    Measured m{heap::end(start), n, static_cast<long>(futures::detail::pooled_state_blocks()) - pool_blocks,
               static_cast<long>(futures::detail::pooled_state_bytes()) - pool_bytes};

    clients.close_all();
    run_until(sched, [&] { return server->open() == 0; }, "closing");
    return m;
}

// ---------------------------------------------------------------- printing

void row(const char* name, std::size_t size, const char* note = "") {
    std::printf("| `%s` | %zu | %s |\n", name, size, note);
}

void print_sizes() {
    std::printf("## sizeof\n\n| type | bytes | note |\n|---|---:|---|\n");
    row("reactor::Connection", sizeof(reactor::Connection), "one per connection, one heap block (its count inside)");
    row("reactor::Address", sizeof(reactor::Address), "what local_address()/peer_address() return");
    row("sockaddr_storage", sizeof(sockaddr_storage), "inside Address");
    row("reactor::detail::PackedAddress", sizeof(reactor::detail::PackedAddress),
        "one per connection: the peer's (IPv4, and IPv6 without flow label or scope, inline; a Unix path on the heap)");
    row("reactor::ByteBuffer", sizeof(reactor::ByteBuffer),
        "output buffer: a heap block from the first partial write until drained");
    row("reactor::detail::CallbackProtocol<Connection>", sizeof(reactor::detail::CallbackProtocol<reactor::Connection>),
        "a connection's callbacks: a Protocol of its own, a heap block made when the first callback is set");
    row("reactor::CallbackSlot<void(Connection&)>", sizeof(reactor::CallbackSlot<void(reactor::Connection&)>),
        "two in the CallbackProtocol (data, close); eof, drain, high, low in a block made when one is set");
    row("reactor::SlotFunction<void(Connection&)>", sizeof(reactor::SlotFunction<void(reactor::Connection&)>),
        "inside a CallbackSlot; a target above 16 bytes, or whose move may throw, goes to the heap");
    row("std::function<void(Connection&)>", sizeof(std::function<void(reactor::Connection&)>),
        "what a CallbackSlot held before (with a generation)");
    row("reactor::ConnectionOptions", sizeof(reactor::ConnectionOptions), "");
    row("reactor::Handle", sizeof(reactor::Handle), "what call_later returns (a connection's deadlines have none)");
    row("reactor::Callback", sizeof(reactor::Callback), "inside a Slot: 48-byte inline buffer");
    row("reactor::detail::Slot", sizeof(reactor::detail::Slot),
        "Scheduler::slots_: one per timer and per waiter (a Connection watches its fd and times its deadlines without one)");
    row("reactor::detail::FdWaiters", sizeof(reactor::detail::FdWaiters),
        "Scheduler::waiting_: one per fd number (an fd's owner and its watch)");
    row("reactor::detail::FdCallbacks", sizeof(reactor::detail::FdCallbacks),
        "Scheduler::callback_waiters_: one per fd number up to the largest given add_reader & co (none for connections)");
    row("reactor::detail::Timer", sizeof(reactor::detail::Timer),
        "Scheduler::sleeping_: one per armed timer (a connection with deadlines: none; its group of equal timeouts: one)");
    row("deadline clocks of one fd (2 TimePoint, 2 detail::FdLinks)",
        2 * sizeof(reactor::TimePoint) + 2 * sizeof(reactor::detail::FdLinks),
        "DeadlineQueues' table by fd: the read and idle clocks and queue links of a connection with deadlines");
    row("reactor::detail::Ref", sizeof(reactor::detail::Ref), "");
    row("std::source_location", sizeof(std::source_location), "");
    row("std::shared_ptr<T>", sizeof(std::shared_ptr<int>), "");
    row("reactor::Listener", sizeof(reactor::Listener), "one per server");
    row("reactor::Scheduler", sizeof(reactor::Scheduler), "one per loop");
    row("futures::Stream", sizeof(futures::Stream), "a handle: a counted pointer to StreamCore");
    row("futures::detail::StreamCore", sizeof(futures::detail::StreamCore), "one per stream, a heap block of its own (it counts its handles)");
    row("futures::StreamOptions", sizeof(futures::StreamOptions), "what start_server and Stream::from take; a StreamCore keeps its limit alone");
    row("futures::Future<std::string>", sizeof(futures::Future<std::string>), "a handle to a pooled state");
    row("futures::Promise<std::string>", sizeof(futures::Promise<std::string>), "");
    row("futures::Promise<void>", sizeof(futures::Promise<void>), "");
    std::printf("\n");
}

// reactor::Connection's members by type, as declared in
// reactor/net/connection.hpp; the sum against sizeof shows the padding (or
// a member this list misses, if the header changed).
void print_connection_fields() {
    using reactor::Connection;
    using reactor::Duration;
    using reactor::TimePoint;
    struct Field {
        const char* what;
        std::size_t bytes;
    };
    const Field fields[] = {
        {"bases FdOwner and Transport (a vtable pointer each)", 2 * sizeof(void*)},
        {"the count (reactor::RefCounted, Transport's base: its handles and its own), fd_ (int)", 4 + sizeof(int)},
        {"profile_ (its loop, line, water marks and read size, shared: detail::ConnectionProfile)", sizeof(void*)},
        {"set_ (ConnectionSet*)", sizeof(void*)},
        {"out_ (unique_ptr: made on first use), timeouts_ (its deadline group, if any), protocol_ (Protocol*), callbacks_ (unique_ptr<CallbackProtocol>: made when a callback is first set)", 4 * sizeof(void*)},
        {"peer_ (PackedAddress; the local address is asked of the kernel)", sizeof(reactor::detail::PackedAddress)},
        {"state_, closing_kind_ (uint8 enums), 17 one-bit flags", 2 + 3},
    };
    std::size_t sum = 0;
    std::printf("## reactor::Connection, member by member\n\n| members | bytes |\n|---|---:|\n");
    for (const Field& f : fields) {
        std::printf("| %s | %zu |\n", f.what, f.bytes);
        sum += f.bytes;
    }
    const std::ptrdiff_t rest = static_cast<std::ptrdiff_t>(sizeof(Connection)) - static_cast<std::ptrdiff_t>(sum);
    std::printf("| padding (or members not listed) | %td |\n", rest);
    std::printf("| **sizeof(reactor::Connection)** | **%zu** |\n\n", sizeof(Connection));
    // Padding is under one alignment unit per member group: more, or less
    // than nothing, means the members changed and this list did not.
    if (rest < 0 || rest > 64)
        std::printf("**This list is stale**: reactor/net/connection.hpp has changed; update "
                    "print_connection_fields() in bench/sizes.cpp.\n\n");
    std::printf("adopt() makes it with new: one heap block, its count inside (the Connection::adopt blocks "
                "below).\n\n");
}

// One scenario's row of the summary table, then its blocks by call site.
// A (site, size) seen fewer than N/2 times is loop-wide storage (a vector
// grown for the N connections); the others are per-connection objects.
std::string format_report(const char* name, const Measured& m) {
    const double n = static_cast<double>(m.n);
    const heap::Window& w = m.w;
    std::vector<heap::Group> groups = w.live;
    std::sort(groups.begin(), groups.end(), [](const heap::Group& a, const heap::Group& b) {
        return a.chunk_bytes > b.chunk_bytes;
    });
    long loop_wide = 0;
    for (const heap::Group& g : groups)
        if (g.blocks * 2 < m.n) loop_wide += g.chunk_bytes;
    loop_wide -= w.old_freed_bytes;  // what the grown vectors' old buffers gave back
    std::string out;
    char line[1024];
    std::snprintf(line, sizeof line, "| %s | %.2f | %.0f | %.0f | %.0f | %.2f | %.0f |\n", name,
                  static_cast<double>(w.end.live_blocks - w.start.live_blocks) / n,
                  static_cast<double>(w.end.live_bytes - w.start.live_bytes) / n,
                  static_cast<double>(w.end.live_bytes - w.start.live_bytes - loop_wide) / n,
                  static_cast<double>(loop_wide) / n, static_cast<double>(w.end.allocs - w.start.allocs) / n,
                  static_cast<double>(w.end.alloc_bytes - w.start.alloc_bytes) / n);
    out += line;
    out += '\n';  // the summary row ends here; the details follow
    std::snprintf(line, sizeof line, "### %s\n\n", name);
    out += line;
    out += "| blocks | per conn | requested bytes | heap bytes / conn | allocated by (innermost first) |\n"
           "|---:|---:|---:|---:|---|\n";
    for (const heap::Group& g : groups) {
        std::snprintf(line, sizeof line, "| %ld | %.3f | %zu | %.1f | %s |\n", g.blocks,
                      static_cast<double>(g.blocks) / n, g.requested, static_cast<double>(g.chunk_bytes) / n,
                      heap::describe_site(g.site).c_str());
        out += line;
    }
    if (w.old_freed_blocks != 0) {
        std::snprintf(line, sizeof line,
                      "| -%ld | | | -%.1f | older blocks freed: the outgrown buffers of those vectors |\n",
                      w.old_freed_blocks, static_cast<double>(w.old_freed_bytes) / n);
        out += line;
    }
    if (!w.listing_complete) out += "\n(listing incomplete: the record table overflowed)\n";
    if (m.pool_blocks != 0) {
        std::snprintf(line, sizeof line,
                      "\nThe futures' pool of free states grew by %ld blocks (%ld bytes): future states that "
                      "completed and were freed to the pool, which keeps them for the next futures.\n",
                      m.pool_blocks, m.pool_bytes);
        out += line;
    }
    out += '\n';
    return out;
}

// Runs a scenario in a child process of its own, so none inherits another's
// heap or futures pool; returns its report (empty on failure).
std::string run_isolated(const Scenario& s, int n) {
    int fds[2];
    if (::pipe(fds) < 0) die("pipe");
    std::fflush(stdout);
    const pid_t pid = ::fork();
    if (pid < 0) die("fork");
    if (pid == 0) {
        ::close(fds[0]);
        ::alarm(120);  // every wait is bounded already; this bounds the whole
        const std::string report = format_report(s.name, measure(s, n));
        for (std::size_t off = 0; off < report.size();) {
            const ssize_t w = ::write(fds[1], report.data() + off, report.size() - off);
            if (w <= 0) ::_exit(1);
            off += static_cast<std::size_t>(w);
        }
        ::_exit(0);
    }
    ::close(fds[1]);
    std::string report;
    char buf[4096];
    for (ssize_t r; (r = ::read(fds[0], buf, sizeof buf)) != 0;) {
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) break;
        report.append(buf, static_cast<std::size_t>(r));
    }
    ::close(fds[0]);
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return {};
    return report;
}

}  // namespace

int main(int argc, char** argv) {
    const int n = argc > 1 ? std::atoi(argv[1]) : 1000;
    if (n < 1) die("usage: sizes [N]   (N >= 1 connections per scenario)");
    rlimit rl{};
    if (::getrlimit(RLIMIT_NOFILE, &rl) < 0) die("getrlimit");
    rl.rlim_cur = rl.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &rl);
    ::getrlimit(RLIMIT_NOFILE, &rl);
    const long fd_limit = rl.rlim_cur == RLIM_INFINITY ? 1 << 20 : static_cast<long>(rl.rlim_cur);
    if (fd_limit < 2L * (n + kWarmup) + 64) die("not enough fds for N (raise ulimit -n)");
    Clients::set_top(static_cast<int>(std::min<long>(fd_limit - 1, 1 << 20)));

    print_sizes();
    print_connection_fields();

    using Shape = CallbackServer::Shape;
    const Scenario scenarios[] = {
        {"callbacks: data + close",
         [](reactor::Scheduler& s) {
             return std::make_unique<CallbackServer>(s, Shape::data_close, reactor::ConnectionOptions{});
         }},
        {"callbacks: data + close, read/write/idle timeouts",
         [](reactor::Scheduler& s) {
             return std::make_unique<CallbackServer>(s, Shape::data_close, with_deadlines(true, true, true));
         }},
        {"callbacks with water marks (data, high/low water; idle + write timeouts)",
         [](reactor::Scheduler& s) {
             return std::make_unique<CallbackServer>(s, Shape::echo_server, with_deadlines(false, true, true));
         }},
        {"futures Stream, task parked in read",
         [](reactor::Scheduler& s) { return std::make_unique<StreamServer>(s, reactor::ConnectionOptions{}); }},
        {"futures Stream as examples/10 (idle + write timeouts)",
         [](reactor::Scheduler& s) { return std::make_unique<StreamServer>(s, with_deadlines(false, true, true)); }},
    };
    std::printf("## heap added per idle connection (N = %d, epoll)\n\n", n);
    std::printf("| scenario | blocks / conn | heap bytes / conn | of which per-connection objects | of which loop-wide "
                "storage | allocations / conn (incl. freed) | bytes allocated / conn (incl. freed) |\n"
                "|---|---:|---:|---:|---:|---:|---:|\n");
    std::string details;
    int failures = 0;
    for (const Scenario& s : scenarios) {
        const std::string report = run_isolated(s, n);
        if (report.empty()) {
            std::printf("| %s | failed | | | | | |\n", s.name);
            ++failures;
            continue;
        }
        const std::size_t row_end = report.find("\n\n");
        std::printf("%s", report.substr(0, row_end + 1).c_str());
        details += report.substr(row_end + 2);
    }
    std::printf("\nHeap bytes are chunks: malloc_usable_size + 8, what the heap gives up per block. Loop-wide "
                "storage: blocks of a (site, size) seen fewer than N/2 times, net of the outgrown buffers freed.\n\n");
    std::printf("## the blocks, by call site\n\n%s", details.c_str());
    return failures == 0 ? 0 : 1;
}

