// SPDX-License-Identifier: MIT
// Streams over pipes and the standard streams: the reactor adopts the fd (and
// checks its type), the stream wraps the connection.
#include <stdexcept>
#include <utility>

#include <reactor/net/pipe.hpp>

#include "futures/stream.hpp"

namespace futures {
namespace {

// Checked before the fd is adopted: once adopted, a connection owns itself
// and a later throw would leave it open.
void check(const StreamOptions& options) {
    if (options.limit == 0) throw std::invalid_argument("Stream: limit must be positive");
}

}  // namespace

Stream Stream::adopt(reactor::Scheduler& sched, int fd, StreamOptions options) {
    check(options);
    return from(reactor::Connection::adopt(sched, fd, options.connection), options);
}

PipeStreams open_pipe(reactor::Scheduler& sched, StreamOptions options) {
    check(options);
    auto pipe = reactor::open_pipe(sched, options.connection);
    return {Stream::from(std::move(pipe.read_end), options), Stream::from(std::move(pipe.write_end), options)};
}

Stream open_stdio(reactor::Scheduler& sched, int fd, StreamOptions options) {
    check(options);
    return Stream::from(reactor::adopt_stdio(sched, fd, options.connection), options);
}

}  // namespace futures
