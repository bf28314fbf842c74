// SPDX-License-Identifier: MIT
// reactor_test::Gate: a one-time latch between the test thread and a worker.
// A job that waits on it holds its worker until the test opens it, which is
// how the thread-pool suites fill a pool or a queue without depending on
// timing.
#pragma once

#include <future>

namespace reactor_test {

struct Gate {
    std::promise<void> promise;
    std::shared_future<void> opened = promise.get_future().share();
    void open() { promise.set_value(); }
    void wait() const { opened.wait(); }
};

}  // namespace reactor_test
