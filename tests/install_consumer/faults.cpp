// SPDX-License-Identifier: MIT
// The installed fault seam (libsyscall_faults.so, docs/faults.md) as a user
// runs it: this program runs itself again with the library preloaded
// (FAULTS_LIBRARY: its installed path, from CMake's reactor::syscall_faults
// or pkg-config's reactor-syscall-faults) and REACTOR_FAULTS=eventfd:EMFILE;
// that run's loop cannot be made, and says why. Linked with reactor only:
// nothing links the seam.
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <system_error>

#include <reactor/scheduler.hpp>

#ifndef FAULTS_LIBRARY
#error "FAULTS_LIBRARY: the installed libsyscall_faults.so"
#endif

int main(int, char** argv) {
    if (std::getenv("REACTOR_FAULTS") == nullptr) {
        { reactor::Scheduler unharmed; }  // without the seam, a loop is made
        ::setenv("LD_PRELOAD", FAULTS_LIBRARY, 1);
        ::setenv("REACTOR_FAULTS", "eventfd:EMFILE", 1);
#if defined(__SANITIZE_ADDRESS__)
        // A sanitizer build's seam is instrumented too: preloaded, it comes
        // before the sanitizer's runtime, which ASan checks by default.
        const char* asan = std::getenv("ASAN_OPTIONS");
        ::setenv("ASAN_OPTIONS", (std::string(asan ? asan : "") + ":verify_asan_link_order=0").c_str(), 1);
#endif
        ::execv("/proc/self/exe", argv);
        std::perror("faults: execv /proc/self/exe");
        return 1;
    }
    try {
        reactor::Scheduler sched;
        std::printf("faults: the loop was made: %s did not make eventfd fail\n", FAULTS_LIBRARY);
        return 1;
    } catch (const std::system_error& e) {
        std::printf("faults: preloaded, the loop says: %s\n", e.what());
        return e.code().value() == EMFILE ? 0 : 1;
    }
}
