// SPDX-License-Identifier: MIT
// reactor_test::Child: runs a program (usually one of the examples) with its
// stdin, stdout and stderr on pipes, so tests can talk to it and check what it
// prints. Every wait is bounded; the destructor kills a child still running.
// Not thread-safe; one Child per test.
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include <fmt/format.h>

namespace reactor_test {

// Absolute path of a built example program.
inline std::string example_path(const std::string& name) { return std::string(EXAMPLES_DIR) + "/" + name; }

class Child {
public:
    Child(const std::string& path, const std::vector<std::string>& args) {
        int in[2], out[2], err[2];
        if (::pipe2(in, O_CLOEXEC) || ::pipe2(out, O_CLOEXEC) || ::pipe2(err, O_CLOEXEC))
            throw std::system_error(errno, std::generic_category(), "pipe2");
        std::vector<std::string> argv_storage{path};
        argv_storage.insert(argv_storage.end(), args.begin(), args.end());
        std::vector<char*> argv;
        for (auto& a : argv_storage) argv.push_back(a.data());
        argv.push_back(nullptr);
        pid_ = ::fork();
        if (pid_ < 0) throw std::system_error(errno, std::generic_category(), "fork");
        if (pid_ == 0) {
            ::dup2(in[0], 0);
            ::dup2(out[1], 1);
            ::dup2(err[1], 2);
            ::execv(path.c_str(), argv.data());
            ::_exit(127);
        }
        ::close(in[0]);
        ::close(out[1]);
        ::close(err[1]);
        stdin_ = in[1];
        stdout_ = out[0];
        stderr_ = err[0];
    }
    Child(const Child&) = delete;
    Child& operator=(const Child&) = delete;

    ~Child() {
        if (pid_ > 0) {
            ::kill(pid_, SIGKILL);
            ::waitpid(pid_, nullptr, 0);
        }
        for (int fd : {stdin_, stdout_, stderr_})
            if (fd >= 0) ::close(fd);
    }

    // The next stdout line (without '\n'), or nullopt on EOF or timeout.
    std::optional<std::string> read_line(std::chrono::milliseconds timeout) {
        auto deadline = std::chrono::steady_clock::now() + timeout;
        for (;;) {
            if (auto nl = out_buf_.find('\n'); nl != std::string::npos) {
                std::string line = out_buf_.substr(0, nl);
                out_buf_.erase(0, nl + 1);
                return line;
            }
            if (!fill(stdout_, out_buf_, deadline)) return std::nullopt;
        }
    }

    // Everything left on stdout until EOF (or the timeout).
    std::string read_all(std::chrono::milliseconds timeout) {
        auto deadline = std::chrono::steady_clock::now() + timeout;
        while (fill(stdout_, out_buf_, deadline)) {
        }
        return std::exchange(out_buf_, {});
    }

    // Everything on stderr until EOF (or the timeout).
    std::string read_stderr(std::chrono::milliseconds timeout) {
        auto deadline = std::chrono::steady_clock::now() + timeout;
        while (fill(stderr_, err_buf_, deadline)) {
        }
        return std::exchange(err_buf_, {});
    }

    void write_stdin(std::string_view data) {
        while (!data.empty()) {
            ssize_t n = ::write(stdin_, data.data(), data.size());
            if (n < 0 && errno == EINTR) continue;
            if (n < 0) throw std::system_error(errno, std::generic_category(), "write to child");
            data.remove_prefix(static_cast<std::size_t>(n));
        }
    }

    void close_stdin() {
        if (stdin_ >= 0) ::close(stdin_);
        stdin_ = -1;
    }

    // The exit code (128+N if killed by signal N). Throws on timeout, after
    // killing the child, so a hung example fails the test instead of hanging it.
    int wait(std::chrono::milliseconds timeout) {
        auto deadline = std::chrono::steady_clock::now() + timeout;
        for (;;) {
            int status = 0;
            pid_t r = ::waitpid(pid_, &status, WNOHANG);
            if (r == pid_) {
                pid_ = -1;
                return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
            }
            if (std::chrono::steady_clock::now() >= deadline) {
                ::kill(pid_, SIGKILL);
                ::waitpid(pid_, nullptr, 0);
                pid_ = -1;
                throw std::runtime_error(fmt::format("child did not exit within {} ms", timeout.count()));
            }
            ::usleep(2000);
        }
    }

    pid_t pid() const { return pid_; }

private:
    // Reads what is available into buf; false on EOF or deadline.
    static bool fill(int fd, std::string& buf, std::chrono::steady_clock::time_point deadline) {
        for (;;) {
            auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
            if (left.count() <= 0) return false;
            pollfd p{fd, POLLIN, 0};
            int r = ::poll(&p, 1, static_cast<int>(left.count()));
            if (r < 0 && errno == EINTR) continue;
            if (r <= 0) return false;
            char chunk[4096];
            ssize_t n = ::read(fd, chunk, sizeof chunk);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) return false;
            buf.append(chunk, static_cast<std::size_t>(n));
            return true;
        }
    }

    pid_t pid_ = -1;
    int stdin_ = -1, stdout_ = -1, stderr_ = -1;
    std::string out_buf_, err_buf_;
};

inline std::vector<std::string> lines_of(const std::string& text) {
    std::vector<std::string> out;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) out.push_back(line);
    return out;
}

// What a program that ran to the end printed, and how it exited.
struct Run {
    std::vector<std::string> out;  // stdout, line by line
    std::string err;
    int code = -1;
};

// Runs an example to the end with stdin closed at once.
inline Run run_example(const std::string& name, const std::vector<std::string>& args) {
    using namespace std::chrono_literals;
    Child child(example_path(name), args);
    child.close_stdin();
    Run r;
    r.out = lines_of(child.read_all(20s));
    r.err = child.read_stderr(5s);
    r.code = child.wait(10s);
    return r;
}

// Starts an example at its own pace (stdin left open, so a program reading
// it waits), sends SIGINT once the first stdout line is out, and collects the
// rest: Ctrl-C in a test.
inline Run interrupt_after_first_line(const std::string& name, const std::vector<std::string>& args) {
    using namespace std::chrono_literals;
    Child child(example_path(name), args);
    Run r;
    if (auto first = child.read_line(20s)) r.out.push_back(*first);
    if (!r.out.empty()) ::kill(child.pid(), SIGINT);
    for (auto& line : lines_of(child.read_all(20s))) r.out.push_back(line);
    r.err = child.read_stderr(5s);
    r.code = child.wait(10s);
    return r;
}

}  // namespace reactor_test
