// SPDX-License-Identifier: MIT
// reactor::sim_guard's interposers (reactor/testing/sim/real_time_guard.hpp):
// the C library's clock and randomness calls, answered from the world while
// a World runs a host on this thread, forwarded to the C library's own
// everywhere else. One translation unit: the anchor the linker is asked for
// (real_time_guarded) brings all of them out of a static archive.
#include "reactor/testing/sim/real_time_guard.hpp"

#include <dlfcn.h>
#include <link.h>
#include <sys/random.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

#include "reactor/detail/world_mark.hpp"
#include "reactor/scheduler.hpp"

namespace reactor::testing::sim {

bool real_time_guarded() noexcept { return true; }

namespace {

using reactor::detail::RealRead;
using reactor::detail::WorldMark;

// The C library's function called `name`: the next definition after ours
// in the dynamic linker's search. Looked up on first use, not when this
// library is initialised: in a program that links the static archive our
// initialisers run after the shared libraries', whose own may read a clock.
template <class F>
F next(std::atomic<F>& slot, const char* name) noexcept {
    F f = slot.load(std::memory_order_acquire);
    if (f == nullptr) {
        f = reinterpret_cast<F>(::dlsym(RTLD_NEXT, name));
        slot.store(f, std::memory_order_release);
    }
    return f;
}

// Spelled out rather than decltype(&::clock_gettime): the C library's
// declarations carry attributes (nonnull) a template argument would drop.
using ClockGettime = int (*)(clockid_t, timespec*) noexcept;
using Gettimeofday = int (*)(timeval*, void*) noexcept;
using Time = time_t (*)(time_t*) noexcept;
using Getrandom = ssize_t (*)(void*, size_t, unsigned int);
using Getentropy = int (*)(void*, size_t);
std::atomic<ClockGettime> g_clock_gettime{nullptr};
std::atomic<Gettimeofday> g_gettimeofday{nullptr};
std::atomic<Time> g_time{nullptr};
std::atomic<Getrandom> g_getrandom{nullptr};
std::atomic<Getentropy> g_getentropy{nullptr};

// The mark of the world running a host here, if it has a host's loop to
// answer from; null outside a world (the common case: one thread-local load).
const WorldMark* marked() noexcept {
    const WorldMark* mark = reactor::detail::world_mark();
    return mark != nullptr && mark->scheduler != nullptr ? mark : nullptr;
}

// True if `file` (a loaded object's path) is libssl's or libcrypto's.
bool openssl_file(std::string_view file) noexcept {
    file.remove_prefix(file.rfind('/') + 1);  // npos + 1 == 0: no directory
    return file.starts_with("libssl.so") || file.starts_with("libcrypto.so");
}

// Where libssl and libcrypto are mapped, found once (a walk of the loaded
// objects): OpenSSL reads the calendar at every handshake, and a dladdr
// per read was most of what the guard cost a TLS world's run.
struct Spans {
    static constexpr int kMax = 4;
    std::uintptr_t begin[kMax] = {};
    std::uintptr_t end[kMax] = {};
    int count = 0;
};

int add_openssl_span(dl_phdr_info* object, std::size_t, void* out) noexcept {
    auto& spans = *static_cast<Spans*>(out);
    if (object->dlpi_name == nullptr || !openssl_file(object->dlpi_name) || spans.count == Spans::kMax) return 0;
    std::uintptr_t begin = UINTPTR_MAX;
    std::uintptr_t end = 0;
    for (int i = 0; i < object->dlpi_phnum; ++i) {
        const ElfW(Phdr)& segment = object->dlpi_phdr[i];
        if (segment.p_type != PT_LOAD) continue;
        begin = std::min<std::uintptr_t>(begin, object->dlpi_addr + segment.p_vaddr);
        end = std::max<std::uintptr_t>(end, object->dlpi_addr + segment.p_vaddr + segment.p_memsz);
    }
    if (begin < end) {
        spans.begin[spans.count] = begin;
        spans.end[spans.count] = end;
        ++spans.count;
    }
    return 0;
}

// True if `caller` (a return address) is in libssl or libcrypto. OpenSSL
// reads the calendar for its certificates' validity and its sessions'
// times, and the system's randomness to seed its generators: none of it
// the test's code, and all of it left real. A certificate's validity is
// real time (it was made at the real now, not in a world's year 2000), and
// OpenSSL's randomness is made the world's by sim::TlsRandomness. An
// address outside the spans found at the first read is asked of dladdr
// (an OpenSSL loaded later, by dlopen): slower, and rare.
bool from_openssl(const void* caller) noexcept {
    static const Spans spans = [] {
        Spans found;
        ::dl_iterate_phdr(&add_openssl_span, &found);
        return found;
    }();
    const auto address = reinterpret_cast<std::uintptr_t>(caller);
    for (int i = 0; i < spans.count; ++i)
        if (spans.begin[i] <= address && address < spans.end[i]) return true;
    Dl_info info{};
    return ::dladdr(caller, &info) != 0 && info.dli_fname != nullptr && openssl_file(info.dli_fname);
}

// The first read of a step names the error: later ones add nothing.
void record(const WorldMark& mark, RealRead::Kind kind, const char* call) noexcept {
    if (mark.real_read.kind != RealRead::Kind::none) return;
    mark.real_read.kind = kind;
    mark.real_read.call = call;
}

// The host's time (monotonic) or calendar (wall), in nanoseconds of its clock's epoch.
std::chrono::nanoseconds host_time(const WorldMark& mark, RealRead::Kind kind) noexcept {
    if (kind == RealRead::Kind::calendar) return mark.scheduler->wall_clock().time_since_epoch();
    return mark.scheduler->now().time_since_epoch();
}

timespec to_timespec(std::chrono::nanoseconds t) noexcept {
    const auto seconds = std::chrono::floor<std::chrono::seconds>(t);
    return timespec{static_cast<time_t>(seconds.count()), static_cast<long>((t - seconds).count())};
}

// Which host clock a clockid reads, and the call's name for the error; none
// for the CPU-time clocks (and any other), which are forwarded.
struct ClockRead {
    RealRead::Kind kind = RealRead::Kind::none;
    const char* call = nullptr;
};

ClockRead clock_read(clockid_t id) noexcept {
    switch (id) {
        case CLOCK_MONOTONIC: return {RealRead::Kind::time, "clock_gettime(CLOCK_MONOTONIC)"};
        case CLOCK_MONOTONIC_RAW: return {RealRead::Kind::time, "clock_gettime(CLOCK_MONOTONIC_RAW)"};
        case CLOCK_MONOTONIC_COARSE: return {RealRead::Kind::time, "clock_gettime(CLOCK_MONOTONIC_COARSE)"};
        case CLOCK_BOOTTIME: return {RealRead::Kind::time, "clock_gettime(CLOCK_BOOTTIME)"};
        case CLOCK_BOOTTIME_ALARM: return {RealRead::Kind::time, "clock_gettime(CLOCK_BOOTTIME_ALARM)"};
        case CLOCK_REALTIME: return {RealRead::Kind::calendar, "clock_gettime(CLOCK_REALTIME)"};
        case CLOCK_REALTIME_COARSE: return {RealRead::Kind::calendar, "clock_gettime(CLOCK_REALTIME_COARSE)"};
        case CLOCK_REALTIME_ALARM: return {RealRead::Kind::calendar, "clock_gettime(CLOCK_REALTIME_ALARM)"};
        case CLOCK_TAI: return {RealRead::Kind::calendar, "clock_gettime(CLOCK_TAI)"};
        default: return {};
    }
}

// The world's bytes for a randomness read (its seed's stream, as
// sim::TlsRandomness draws), or false if the world has none to give.
bool fill_from_world(const WorldMark& mark, void* buffer, std::size_t length) noexcept {
    if (mark.fill_random == nullptr) return false;
    mark.fill_random(mark.random_context, static_cast<unsigned char*>(buffer), length);
    return true;
}

}  // namespace
}  // namespace reactor::testing::sim

// The interposers: the C library's names and signatures, visible to the
// dynamic linker whatever the library's default visibility.
namespace guard = reactor::testing::sim;

#pragma GCC visibility push(default)
extern "C" {

int clock_gettime(clockid_t id, timespec* out) noexcept {
    if (const auto* mark = guard::marked(); mark != nullptr) [[unlikely]] {
        const guard::ClockRead read = guard::clock_read(id);
        if (read.kind != guard::RealRead::Kind::none && !guard::from_openssl(__builtin_return_address(0))) {
            guard::record(*mark, read.kind, read.call);
            *out = guard::to_timespec(guard::host_time(*mark, read.kind));
            return 0;
        }
    }
    return guard::next(guard::g_clock_gettime, "clock_gettime")(id, out);
}

int gettimeofday(timeval* __restrict out, void* __restrict zone) noexcept {
    if (const auto* mark = guard::marked(); mark != nullptr && !guard::from_openssl(__builtin_return_address(0)))
        [[unlikely]] {
        guard::record(*mark, guard::RealRead::Kind::calendar, "gettimeofday");
        const auto t = guard::host_time(*mark, guard::RealRead::Kind::calendar);
        const auto seconds = std::chrono::floor<std::chrono::seconds>(t);
        *out = timeval{static_cast<time_t>(seconds.count()),
                       static_cast<suseconds_t>(std::chrono::duration_cast<std::chrono::microseconds>(t - seconds).count())};
        if (zone != nullptr) std::memset(zone, 0, sizeof(struct timezone));  // UTC, as Linux has kept it
        return 0;
    }
    return guard::next(guard::g_gettimeofday, "gettimeofday")(out, zone);
}

time_t time(time_t* out) noexcept {
    if (const auto* mark = guard::marked(); mark != nullptr && !guard::from_openssl(__builtin_return_address(0)))
        [[unlikely]] {
        guard::record(*mark, guard::RealRead::Kind::calendar, "time");
        const auto t = guard::host_time(*mark, guard::RealRead::Kind::calendar);
        const auto seconds = static_cast<time_t>(std::chrono::floor<std::chrono::seconds>(t).count());
        if (out != nullptr) *out = seconds;
        return seconds;
    }
    return guard::next(guard::g_time, "time")(out);
}

ssize_t getrandom(void* buffer, size_t length, unsigned int flags) {
    if (const auto* mark = guard::marked(); mark != nullptr && !guard::from_openssl(__builtin_return_address(0)))
        [[unlikely]] {
        guard::record(*mark, guard::RealRead::Kind::randomness, "getrandom");
        if (guard::fill_from_world(*mark, buffer, length)) return static_cast<ssize_t>(length);
    }
    return guard::next(guard::g_getrandom, "getrandom")(buffer, length, flags);
}

int getentropy(void* buffer, size_t length) {
    if (const auto* mark = guard::marked(); mark != nullptr && !guard::from_openssl(__builtin_return_address(0)))
        [[unlikely]] {
        guard::record(*mark, guard::RealRead::Kind::randomness, "getentropy");
        if (length > 256) {  // getentropy(3)'s limit
            errno = EIO;
            return -1;
        }
        if (guard::fill_from_world(*mark, buffer, length)) return 0;
    }
    return guard::next(guard::g_getentropy, "getentropy")(buffer, length);
}

}  // extern "C"
#pragma GCC visibility pop
