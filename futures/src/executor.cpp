// The process's default thread pool (futures/executor.hpp).
#include "futures/executor.hpp"

namespace futures {

reactor::ThreadPool& default_executor() {
    // A function-local static: made on first use (thread-safe), destroyed at
    // normal exit, which shuts it down and joins its workers.
    static reactor::ThreadPool pool;
    return pool;
}

}  // namespace futures
