// SPDX-License-Identifier: MIT
// reactor_test::StderrCapture: redirects this process's stderr (fd 2) to a
// temporary file until finish() (or destruction), for tests of what the
// library writes there (debug-mode reports, the default exception handler).
// Use inside a Boost.Test case.
#pragma once

#include <unistd.h>

#include <cstdio>
#include <string>

#include <boost/test/unit_test.hpp>

namespace reactor_test {

class StderrCapture {
public:
    StderrCapture() {
        std::fflush(stderr);
        file_ = std::tmpfile();
        BOOST_REQUIRE(file_ != nullptr);
        saved_ = ::dup(2);
        BOOST_REQUIRE(saved_ >= 0);
        BOOST_REQUIRE(::dup2(::fileno(file_), 2) == 2);
    }
    ~StderrCapture() {
        restore();
        if (file_) std::fclose(file_);
    }
    StderrCapture(const StderrCapture&) = delete;
    StderrCapture& operator=(const StderrCapture&) = delete;

    // Restores stderr and returns everything written to it meanwhile.
    std::string finish() {
        restore();
        std::string text;
        std::rewind(file_);
        char buf[512];
        std::size_t n;
        while ((n = std::fread(buf, 1, sizeof buf, file_)) > 0) text.append(buf, n);
        return text;
    }

private:
    void restore() {
        if (saved_ < 0) return;
        std::fflush(stderr);
        ::dup2(saved_, 2);
        ::close(saved_);
        saved_ = -1;
    }
    std::FILE* file_ = nullptr;
    int saved_ = -1;
};

}  // namespace reactor_test
