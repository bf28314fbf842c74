// SPDX-License-Identifier: MIT
// Test support for the futures::Scope suites (test_scope, test_scope_lifetime):
// "file:line" of a line of the calling suite, a search of the exception
// handler's reports, and a task that sleeps long and records how it ended.
#pragma once

#include <chrono>
#include <source_location>
#include <string>

#include <futures/futures.hpp>

#include "support/futures_util.hpp"

namespace reactor_test {

// "test_x.cpp:<line>" for a line of the suite that calls it.
inline std::string at(unsigned line, std::source_location here = std::source_location::current()) {
    std::string file = here.file_name();
    if (auto slash = file.rfind('/'); slash != std::string::npos) file.erase(0, slash + 1);
    return file + ":" + std::to_string(line);
}

inline bool any_report_mentions(const Reports& reports, const std::string& text) {
    for (const auto& r : reports.list)
        if (reactor::describe(r).find(text) != std::string::npos) return true;
    return false;
}

// A task that waits on a 100 s sleep and records how it ended.
struct Sleeper {
    reactor::Scheduler& sched;
    std::string* ended;
    futures::Future<void> nap{};
    int step = 0;
    futures::Step<void> resume() {
        using namespace std::chrono_literals;
        if (step++ == 0) return nap = futures::sleep(sched, 100s);
        try {
            nap.result();
            *ended = "slept";
        } catch (const futures::CancelledError&) {
            *ended = "cancelled";
            throw;
        }
        return futures::finished;
    }
};

}  // namespace reactor_test
