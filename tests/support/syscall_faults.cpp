// SPDX-License-Identifier: MIT
// The fault-injection library (see syscall_faults.hpp): the C library's
// wrappers, each failing when a fault is armed for it and forwarding to the
// real one otherwise. Lock-free, and async-signal-safe once loaded: the real
// functions are looked up when the library is loaded, never in a call.
#include "support/syscall_faults.hpp"

#include <dlfcn.h>
#include <poll.h>
#include <pthread.h>
#include <spawn.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
extern "C" {  // glibc 2.36's header lacks the C++ guard
#include <sys/pidfd.h>
}
#include <sys/resource.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>

namespace reactor_test::faults {
namespace {

struct State {
    std::atomic<bool> armed{false};
    std::atomic<int> error{0};
    std::atomic<int> after{0};
    std::atomic<int> times{0};
    std::atomic<int> fd{-1};
    std::atomic<std::uint64_t> matched{0};
    std::atomic<std::uint64_t> injected{0};
};

constinit State g_state[static_cast<int>(Call::count_)];

State& state(Call call) { return g_state[static_cast<int>(call)]; }

// True (errno set) if this call is to fail.
bool fail(Call call, int fd = -1) {
    State& s = state(call);
    if (!s.armed.load(std::memory_order_acquire)) return false;
    const int only = s.fd.load(std::memory_order_relaxed);
    if (only >= 0 && fd != only) return false;
    const std::uint64_t n = s.matched.fetch_add(1);
    const auto after = static_cast<std::uint64_t>(s.after.load(std::memory_order_relaxed));
    const int times = s.times.load(std::memory_order_relaxed);
    if (n < after) return false;
    if (times != kForever && n >= after + static_cast<std::uint64_t>(times)) return false;
    s.injected.fetch_add(1);
    errno = s.error.load(std::memory_order_relaxed);
    return true;
}

// For the calls that return the error and leave errno alone (posix_spawn,
// pthread_create): the error if this call is to fail, else 0.
int fail_returning(Call call) {
    const int saved = errno;
    if (!fail(call)) return 0;
    const int error = errno;
    errno = saved;
    return error;
}

// ---------------------------------------------------------------- the real functions

template <class F>
F* next(const char* name) {
    return reinterpret_cast<F*>(::dlsym(RTLD_NEXT, name));
}

struct Real {
    decltype(&::epoll_wait) epoll_wait = next<decltype(::epoll_wait)>("epoll_wait");
    decltype(&::epoll_pwait) epoll_pwait = next<decltype(::epoll_pwait)>("epoll_pwait");
    decltype(&::epoll_pwait2) epoll_pwait2 = next<decltype(::epoll_pwait2)>("epoll_pwait2");
    decltype(&::poll) poll = next<decltype(::poll)>("poll");
    decltype(&::ppoll) ppoll = next<decltype(::ppoll)>("ppoll");
    decltype(&::select) select = next<decltype(::select)>("select");
    decltype(&::pselect) pselect = next<decltype(::pselect)>("pselect");
    decltype(&::epoll_ctl) epoll_ctl = next<decltype(::epoll_ctl)>("epoll_ctl");
    decltype(&::epoll_create1) epoll_create1 = next<decltype(::epoll_create1)>("epoll_create1");
    decltype(&::eventfd) eventfd = next<decltype(::eventfd)>("eventfd");
    decltype(&::accept4) accept4 = next<decltype(::accept4)>("accept4");
    decltype(&::recv) recv = next<decltype(::recv)>("recv");
    decltype(&::recvfrom) recvfrom = next<decltype(::recvfrom)>("recvfrom");
    decltype(&::read) read = next<decltype(::read)>("read");
    decltype(&::send) send = next<decltype(::send)>("send");
    decltype(&::sendto) sendto = next<decltype(::sendto)>("sendto");
    decltype(&::sendmsg) sendmsg = next<decltype(::sendmsg)>("sendmsg");
    decltype(&::write) write = next<decltype(::write)>("write");
    decltype(&::writev) writev = next<decltype(::writev)>("writev");
    decltype(&::pipe2) pipe2 = next<decltype(::pipe2)>("pipe2");
    decltype(&::pidfd_open) pidfd_open = next<decltype(::pidfd_open)>("pidfd_open");
    decltype(&::posix_spawn) posix_spawn = next<decltype(::posix_spawn)>("posix_spawn");
    decltype(&::posix_spawnp) posix_spawnp = next<decltype(::posix_spawnp)>("posix_spawnp");
    decltype(&::waitpid) waitpid = next<decltype(::waitpid)>("waitpid");
    decltype(&::wait4) wait4 = next<decltype(::wait4)>("wait4");
    decltype(&::pthread_create) pthread_create = next<decltype(::pthread_create)>("pthread_create");
};

// Filled in when the library is loaded (a dynamic initializer runs before
// main and before any thread the program starts), so a call never looks up.
const Real& real() {
    static const Real r;
    return r;
}
[[maybe_unused]] const Real& g_loaded = real();

// ---------------------------------------------------------------- REACTOR_FAULTS

constexpr std::string_view kCalls[] = {"epoll_wait", "poll",   "select", "epoll_ctl",  "epoll_create1", "eventfd",
                                       "accept4",    "recv",   "read",   "send",       "write",         "writev",
                                       "pipe2",      "pidfd_open", "posix_spawn", "waitpid",     "pthread_create"};
static_assert(std::size(kCalls) == static_cast<std::size_t>(Call::count_));

[[noreturn]] void bad_spec(std::string_view spec, std::string_view why) {
    std::fprintf(stderr, "%s: '%.*s': %.*s\n", kEnvironment, static_cast<int>(spec.size()), spec.data(),
                 static_cast<int>(why.size()), why.data());
    std::_Exit(125);
}

void arm_from(std::string_view spec) {
    auto take = [&spec] {
        const std::size_t colon = spec.find(':');
        std::string_view field = spec.substr(0, colon);
        spec = colon == std::string_view::npos ? std::string_view{} : spec.substr(colon + 1);
        return field;
    };
    const std::string_view whole = spec;
    const std::string_view call_name = take();
    int call = -1;
    for (std::size_t i = 0; i < std::size(kCalls); ++i)
        if (kCalls[i] == call_name) call = static_cast<int>(i);
    if (call < 0) bad_spec(whole, "unknown call");
    Fault fault;
    const std::string_view error_name = take();
    fault.error = errno_value(error_name);
    if (fault.error == 0)
        bad_spec(whole, "unknown errno name '" + std::string(error_name) + "' (one of errno(3)'s, such as ENOMEM)");
    while (!spec.empty()) {
        const std::string_view option = take();
        auto number = [&](std::string_view prefix) { return std::atoi(std::string(option.substr(prefix.size())).c_str()); };
        if (option.starts_with("after=")) {
            fault.after = number("after=");
        } else if (option == "times=forever") {
            fault.times = kForever;
        } else if (option.starts_with("times=")) {
            fault.times = number("times=");
        } else if (option.starts_with("fd=")) {
            fault.fd = number("fd=");
        } else {
            bad_spec(whole, "unknown option (after=N, times=N|forever, fd=N)");
        }
    }
    arm(static_cast<Call>(call), fault);
}

struct FromEnvironment {
    FromEnvironment() {
        const char* value = std::getenv(kEnvironment);
        if (value == nullptr) return;
        std::string_view specs(value);
        while (!specs.empty()) {
            const std::size_t comma = specs.find(',');
            if (const std::string_view spec = specs.substr(0, comma); !spec.empty()) arm_from(spec);
            specs = comma == std::string_view::npos ? std::string_view{} : specs.substr(comma + 1);
        }
    }
} g_from_environment;

}  // namespace

void arm(Call call, Fault fault) {
    State& s = state(call);
    s.armed.store(false, std::memory_order_release);
    s.error.store(fault.error);
    s.after.store(fault.after);
    s.times.store(fault.times);
    s.fd.store(fault.fd);
    s.matched.store(0);
    s.injected.store(0);
    s.armed.store(true, std::memory_order_release);
}

void disarm(Call call) { state(call).armed.store(false, std::memory_order_release); }

void disarm_all() {
    for (int i = 0; i < static_cast<int>(Call::count_); ++i) disarm(static_cast<Call>(i));
}

// Every name glibc knows, so that any row of docs/faults.md can be
// reproduced. strerrorname_np (glibc 2.32) gives one name per value; the
// other names of a shared value are listed here.
int errno_value(std::string_view name) {
    struct Alias {
        std::string_view name;
        int value;
    };
    constexpr Alias kAliases[] = {{"EWOULDBLOCK", EWOULDBLOCK}, {"EDEADLOCK", EDEADLOCK}, {"ENOTSUP", ENOTSUP}};
    for (const Alias& a : kAliases)
        if (a.name == name) return a.value;
    // Linux's errno values are below 4096 (the kernel's MAX_ERRNO): the
    // names are found by asking for each.
    constexpr int kMaxErrno = 4095;
    for (int value = 1; value <= kMaxErrno; ++value)
        if (const char* known = ::strerrorname_np(value); known != nullptr && name == known) return value;
    return 0;
}

std::uint64_t injected(Call call) { return state(call).injected.load(); }
std::uint64_t matched(Call call) { return state(call).matched.load(); }

std::string library_path() {
    Dl_info info{};
    if (::dladdr(reinterpret_cast<void*>(&disarm_all), &info) == 0 || info.dli_fname == nullptr) return {};
    return info.dli_fname;
}

}  // namespace reactor_test::faults

// ---------------------------------------------------------------- the wrappers

using reactor_test::faults::Call;
using reactor_test::faults::fail;
using reactor_test::faults::fail_returning;
using reactor_test::faults::real;

extern "C" {

int epoll_wait(int epfd, epoll_event* events, int maxevents, int timeout) {
    if (fail(Call::epoll_wait)) return -1;
    return real().epoll_wait(epfd, events, maxevents, timeout);
}
int epoll_pwait(int epfd, epoll_event* events, int maxevents, int timeout, const sigset_t* mask) {
    if (fail(Call::epoll_wait)) return -1;
    return real().epoll_pwait(epfd, events, maxevents, timeout, mask);
}
int epoll_pwait2(int epfd, epoll_event* events, int maxevents, const timespec* timeout, const sigset_t* mask) {
    if (fail(Call::epoll_wait)) return -1;
    return real().epoll_pwait2(epfd, events, maxevents, timeout, mask);
}
int poll(pollfd* fds, nfds_t nfds, int timeout) {
    if (fail(Call::poll)) return -1;
    return real().poll(fds, nfds, timeout);
}
int ppoll(pollfd* fds, nfds_t nfds, const timespec* timeout, const sigset_t* mask) {
    if (fail(Call::poll)) return -1;
    return real().ppoll(fds, nfds, timeout, mask);
}
int select(int nfds, fd_set* r, fd_set* w, fd_set* e, timeval* timeout) {
    if (fail(Call::select)) return -1;
    return real().select(nfds, r, w, e, timeout);
}
int pselect(int nfds, fd_set* r, fd_set* w, fd_set* e, const timespec* timeout, const sigset_t* mask) {
    if (fail(Call::select)) return -1;
    return real().pselect(nfds, r, w, e, timeout, mask);
}
int epoll_ctl(int epfd, int op, int fd, epoll_event* event) noexcept {
    if (fail(Call::epoll_ctl, fd)) return -1;
    return real().epoll_ctl(epfd, op, fd, event);
}
int epoll_create1(int flags) noexcept {
    if (fail(Call::epoll_create1)) return -1;
    return real().epoll_create1(flags);
}
int eventfd(unsigned int count, int flags) noexcept {
    if (fail(Call::eventfd)) return -1;
    return real().eventfd(count, flags);
}
int accept4(int fd, sockaddr* addr, socklen_t* len, int flags) {
    if (fail(Call::accept4, fd)) return -1;
    return real().accept4(fd, addr, len, flags);
}
ssize_t recv(int fd, void* buf, size_t n, int flags) {
    if (fail(Call::recv, fd)) return -1;
    return real().recv(fd, buf, n, flags);
}
ssize_t recvfrom(int fd, void* buf, size_t n, int flags, sockaddr* addr, socklen_t* len) {
    if (fail(Call::recv, fd)) return -1;
    return real().recvfrom(fd, buf, n, flags, addr, len);
}
ssize_t read(int fd, void* buf, size_t n) {
    if (fail(Call::read, fd)) return -1;
    return real().read(fd, buf, n);
}
ssize_t send(int fd, const void* buf, size_t n, int flags) {
    if (fail(Call::send, fd)) return -1;
    return real().send(fd, buf, n, flags);
}
ssize_t sendto(int fd, const void* buf, size_t n, int flags, const sockaddr* addr, socklen_t len) {
    if (fail(Call::send, fd)) return -1;
    return real().sendto(fd, buf, n, flags, addr, len);
}
ssize_t sendmsg(int fd, const msghdr* message, int flags) {
    if (fail(Call::send, fd)) return -1;
    return real().sendmsg(fd, message, flags);
}
ssize_t write(int fd, const void* buf, size_t n) {
    if (fail(Call::write, fd)) return -1;
    return real().write(fd, buf, n);
}
ssize_t writev(int fd, const iovec* iov, int count) {
    if (fail(Call::writev, fd)) return -1;
    return real().writev(fd, iov, count);
}
int pipe2(int fds[2], int flags) noexcept {
    if (fail(Call::pipe2)) return -1;
    return real().pipe2(fds, flags);
}
int pidfd_open(pid_t pid, unsigned int flags) noexcept {
    if (fail(Call::pidfd_open)) return -1;
    return real().pidfd_open(pid, flags);
}
int posix_spawn(pid_t* pid, const char* path, const posix_spawn_file_actions_t* actions,
                const posix_spawnattr_t* attr, char* const argv[], char* const envp[]) {
    if (const int error = fail_returning(Call::posix_spawn)) return error;
    return real().posix_spawn(pid, path, actions, attr, argv, envp);
}
int posix_spawnp(pid_t* pid, const char* file, const posix_spawn_file_actions_t* actions,
                 const posix_spawnattr_t* attr, char* const argv[], char* const envp[]) {
    if (const int error = fail_returning(Call::posix_spawn)) return error;
    return real().posix_spawnp(pid, file, actions, attr, argv, envp);
}
pid_t waitpid(pid_t pid, int* status, int options) {
    if (fail(Call::waitpid)) return -1;
    return real().waitpid(pid, status, options);
}
pid_t wait4(pid_t pid, int* status, int options, rusage* usage) noexcept {
    if (fail(Call::waitpid)) return -1;
    return real().wait4(pid, status, options, usage);
}
int pthread_create(pthread_t* thread, const pthread_attr_t* attr, void* (*start)(void*), void* arg) noexcept {
    if (const int error = fail_returning(Call::pthread_create)) return error;
    return real().pthread_create(thread, attr, start, arg);
}

}  // extern "C"
