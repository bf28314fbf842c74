// SPDX-License-Identifier: MIT
// What every example's main() shares besides its command line (cli.hpp):
// say(), one line on stdout, flushed so whoever reads the output reads it
// live; and guarded_main(), the one way an example fails.
//
// Every callback's exception goes to the loop's exception handler, but some
// errors do reach main(): Scheduler::run() throws std::system_error when its
// selector fails for good (the loop's own state is broken), a future main()
// reads may hold an error (a failed wait for a child, a thread the pool could
// not start). Uncaught, each would end the program in std::terminate (SIGABRT,
// a core dump, clients dropped without a word). guarded_main() catches it and
// ends the program with ONE line on stderr, "<program>: <what>", and exit
// status 1:
//
//   int main(int argc, char** argv) { return examples::guarded_main("hello", run, argc, argv); }
#pragma once

#include <cstdio>
#include <exception>
#include <string_view>

#include <fmt/format.h>

namespace examples {

inline void say(std::string_view line) {
    fmt::print("{}\n", line);
    std::fflush(stdout);
}

// The exit status of a program that failed (a bad command line is 2: cli.hpp).
inline constexpr int kFailed = 1;

// stdio, not fmt: nothing here may throw.
inline void report_failure(std::string_view program, const char* what) noexcept {
    std::fflush(stdout);
    std::fprintf(stderr, "%.*s: %s\n", static_cast<int>(program.size()), program.data(), what);
}

// Runs `body(argc, argv)` and returns its exit status; an exception escaping
// it is printed as "<program>: <what>" on stderr, and the status is kFailed.
// What the program printed on stdout before is flushed first, so the two
// streams read in order.
template <class Body>
int guarded_main(std::string_view program, Body&& body, int argc, char** argv) noexcept {
    const char* what = "unknown exception";
    try {
        return body(argc, argv);
    } catch (const std::exception& e) {
        what = e.what();  // valid while the handler runs: print it here
        report_failure(program, what);
    } catch (...) {
        report_failure(program, what);
    }
    return kFailed;
}

}  // namespace examples
