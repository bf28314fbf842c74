// SPDX-License-Identifier: MIT
// reactor_test::OutsideProgram: a program that is not ours (openssl, curl),
// run for an interop case, its stdout and stderr on one pipe that the test's
// loop reads (a Connection adopted on the read end), its stdin on a pipe the
// test writes. Every wait is bounded; the destructor kills it if it still
// runs, so a case that fails never leaves one behind.
//   find_program("openssl")  the absolute path in $PATH, or nullopt
//   needs_program("curl")    a Boost.Test precondition that skips the case,
//                            with the reason printed, when it is missing
// Not thread-safe; loop thread only.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <chrono>
#include <cstdlib>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <vector>

#include <boost/test/unit_test.hpp>

#include <reactor/net/connection.hpp>
#include <reactor/scheduler.hpp>

namespace reactor_test {

inline std::optional<std::string> find_program(const std::string& name) {
    const char* path = std::getenv("PATH");
    std::istringstream dirs(path ? path : "/usr/bin:/bin");
    for (std::string dir; std::getline(dirs, dir, ':');) {
        std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
        if (::access(candidate.c_str(), X_OK) == 0) return candidate;
    }
    return std::nullopt;
}

inline boost::unit_test::precondition needs_program(const char* name) {
    return boost::unit_test::precondition([name](boost::unit_test::test_unit_id id) {
        const bool found = find_program(name).has_value();
        boost::test_tools::assertion_result result(found);
        result.message() << "the '" << name << "' program is not installed (.ci/run installs it)";
        // Printed at every log level: a skipped interop case must not look like a pass.
        if (!found)
            std::fprintf(stderr, "%s: skipped: the '%s' program is not installed (.ci/run installs it)\n",
                         boost::unit_test::framework::get(id, boost::unit_test::TUT_ANY).p_name->c_str(), name);
        return result;
    });
}

class OutsideProgram {
public:
    // Starts `name` (found in $PATH) with `args`; its output is read into
    // output() by the loop of `sched`.
    OutsideProgram(reactor::Scheduler& sched, const std::string& name, const std::vector<std::string>& args) {
        auto path = find_program(name);
        BOOST_REQUIRE_MESSAGE(path, name << " is not installed");
        int in[2], out[2];
        BOOST_REQUIRE(::pipe2(in, O_CLOEXEC) == 0);
        BOOST_REQUIRE(::pipe2(out, O_CLOEXEC) == 0);
        std::vector<std::string> storage{*path};
        storage.insert(storage.end(), args.begin(), args.end());
        std::vector<char*> argv;
        for (auto& a : storage) argv.push_back(a.data());
        argv.push_back(nullptr);
        pid_ = ::fork();
        BOOST_REQUIRE(pid_ >= 0);
        if (pid_ == 0) {
            ::dup2(in[0], 0);
            ::dup2(out[1], 1);
            ::dup2(out[1], 2);
            ::execv(path->c_str(), argv.data());
            ::_exit(127);
        }
        ::close(in[0]);
        ::close(out[1]);
        stdin_ = in[1];
        output_conn_ = reactor::Connection::adopt(sched, out[0]);
        output_conn_->set_data_callback([this](reactor::Connection&, std::string_view d) { output_ += d; });
        output_conn_->set_close_callback([this](reactor::Connection&, const reactor::CloseReason&) { output_closed_ = true; });
    }
    ~OutsideProgram() {
        close_stdin();
        if (output_conn_) {  // its callbacks point here: dropped before it closes
            output_conn_->set_data_callback({});
            output_conn_->set_close_callback({});
            output_conn_->abort();
        }
        if (pid_ > 0) {
            ::kill(pid_, SIGKILL);
            ::waitpid(pid_, nullptr, 0);
        }
    }
    OutsideProgram(const OutsideProgram&) = delete;
    OutsideProgram& operator=(const OutsideProgram&) = delete;

    const std::string& output() const noexcept { return output_; }
    // Its output pipe closed: it exited (or closed both on purpose).
    bool output_closed() const noexcept { return output_closed_; }

    void write_stdin(std::string_view data) {
        while (!data.empty()) {
            ssize_t n = ::write(stdin_, data.data(), data.size());
            if (n < 0 && errno == EINTR) continue;
            BOOST_REQUIRE(n > 0);
            data.remove_prefix(static_cast<std::size_t>(n));
        }
    }
    void close_stdin() {
        if (stdin_ >= 0) ::close(stdin_);
        stdin_ = -1;
    }

    // Its exit code, waiting at most `timeout` (then killed: -1).
    int wait(std::chrono::milliseconds timeout) {
        const auto deadline = std::chrono::steady_clock::now() + timeout;
        for (;;) {
            int status = 0;
            if (::waitpid(pid_, &status, WNOHANG) == pid_) {
                pid_ = -1;
                return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
            }
            if (std::chrono::steady_clock::now() >= deadline) {
                ::kill(pid_, SIGKILL);
                ::waitpid(pid_, nullptr, 0);
                pid_ = -1;
                return -1;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(2));
        }
    }

private:
    pid_t pid_ = -1;
    int stdin_ = -1;
    reactor::ConnectionPtr output_conn_;
    std::string output_;
    bool output_closed_ = false;
};

}  // namespace reactor_test
