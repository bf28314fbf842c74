// SPDX-License-Identifier: MIT
// Test support for the futures suites (and any case that checks an error): a
// recorder for the Scheduler's exception handler, what() of an exception_ptr
// and of a future's error, the "the loop holds nothing" check every test ends
// with (CHECK_EMPTY), and a type that counts its live instances.
#pragma once

#include <exception>
#include <string>
#include <vector>

#include <boost/test/unit_test.hpp>
#include <reactor/scheduler.hpp>
#include "support/check_empty.hpp"

namespace reactor_test {

// Counts live instances, to prove that captures, payloads and continuations
// are freed (Tracked::live is back to where it was).
struct Tracked {
    static inline long live = 0;
    Tracked() { ++live; }
    Tracked(const Tracked&) { ++live; }
    Tracked(Tracked&&) noexcept { ++live; }
    ~Tracked() { --live; }
};

// Installs itself as `sched`'s exception handler and keeps every report.
struct Reports {
    explicit Reports(reactor::Scheduler& sched) {
        sched.set_exception_handler([this](const reactor::ErrorContext& ctx) { list.push_back(ctx); });
    }
    std::size_t size() const { return list.size(); }
    const reactor::ErrorContext& operator[](std::size_t i) const { return list.at(i); }
    std::vector<reactor::ErrorContext> list;
};

// what() of an exception_ptr ("" for none, "?" for a non-std exception).
inline std::string what(const std::exception_ptr& e) {
    if (!e) return "";
    try {
        std::rethrow_exception(e);
    } catch (const std::exception& ex) {
        return ex.what();
    } catch (...) {
        return "?";
    }
}

// What result() of a complete future throws (null if it is done).
template <class F>
std::exception_ptr error_of(const F& future) {
    try {
        future.result();
    } catch (...) {
        return std::current_exception();
    }
    return nullptr;
}

// True if the error's what() contains `text`.
inline bool mentions(const std::exception_ptr& e, const std::string& text) {
    return what(e).find(text) != std::string::npos;
}

}  // namespace reactor_test

