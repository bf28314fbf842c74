// SPDX-License-Identifier: MIT
// The Stream handle and the errors its reads fail with. The handle only
// forwards to its core (stream_core.cpp; stream_core.hpp says who owns
// what), with the caller's line: each future a Stream returns names it.
// Loop thread only.
#include "futures/stream.hpp"

#include <stdexcept>
#include <utility>

#include <fmt/format.h>

#include "stream_core.hpp"

namespace futures {

IncompleteReadError::IncompleteReadError(std::string partial_bytes, std::optional<std::size_t> expected_bytes)
    : std::runtime_error(expected_bytes ? fmt::format("{} bytes read on a total of {} expected bytes",
                                                      partial_bytes.size(), *expected_bytes)
                                        : fmt::format("EOF after {} bytes, before the delimiter", partial_bytes.size())),
      partial(std::move(partial_bytes)),
      expected(expected_bytes) {}

LimitOverrunError::LimitOverrunError(const std::string& what, std::size_t consumed_bytes)
    : std::runtime_error(what), consumed(consumed_bytes) {}

FrameTooLargeError::FrameTooLargeError(std::size_t size_bytes, std::size_t max_bytes, std::size_t prefix_bytes)
    : LimitOverrunError(fmt::format("stream: a frame of {} bytes is announced, over the maximum of {}", size_bytes,
                                    max_bytes),
                        prefix_bytes + size_bytes),
      size(size_bytes),
      max_size(max_bytes) {}

// ---------------------------------------------------------------- Stream

namespace {

// Deadlines given in the options apply to the connection (when created by
// open_connection or start_server, it already has them).
void apply_options(reactor::Connection& conn, const StreamOptions& options) {
    if (options.limit == 0) throw std::invalid_argument("Stream: limit must be positive");
    if (const auto& c = options.connection; c.read_timeout > reactor::Duration::zero()) conn.set_read_timeout(c.read_timeout);
    if (const auto& c = options.connection; c.write_timeout > reactor::Duration::zero()) conn.set_write_timeout(c.write_timeout);
    if (const auto& c = options.connection; c.idle_timeout > reactor::Duration::zero()) conn.set_idle_timeout(c.idle_timeout);
}

}  // namespace

Stream Stream::from(reactor::TransportPtr transport, StreamOptions options) {
    if (!transport) throw std::invalid_argument("Stream::from: null transport");
    apply_options(transport->socket(), options);
    detail::Ref<detail::StreamCore> core(new detail::StreamCore(std::move(transport), options));
    core->attach();
    return Stream(std::move(core));
}

Stream::Stream() noexcept = default;
Stream::Stream(detail::Ref<detail::StreamCore> core) noexcept : core_(std::move(core)) {}
Stream::Stream(const Stream& other) noexcept = default;
Stream::Stream(Stream&& other) noexcept = default;
Stream& Stream::operator=(const Stream& other) noexcept = default;
Stream& Stream::operator=(Stream&& other) noexcept = default;
Stream::~Stream() = default;

detail::StreamCore& Stream::core() const {
    if (!core_) throw InvalidStateError("futures: empty Stream");
    return *core_;
}

Future<std::string> Stream::read(std::size_t max, std::source_location where) {
    return core().start_read(detail::StreamCore::ReadKind::some, max, {}, where);
}

Future<std::string> Stream::read_exactly(std::size_t n, std::source_location where) {
    return core().start_read(detail::StreamCore::ReadKind::exactly, n, {}, where);
}

Future<std::string> Stream::read_until(std::string delimiter, std::source_location where) {
    if (delimiter.empty()) throw std::invalid_argument("Stream::read_until: empty delimiter");
    return core().start_read(detail::StreamCore::ReadKind::until, 0, std::move(delimiter), where);
}

Future<std::string> Stream::read_all(std::source_location where) {
    return read_all(core().limit(), where);
}

Future<std::string> Stream::read_all(std::size_t limit, std::source_location where) {
    return core().start_read(detail::StreamCore::ReadKind::all, limit, {}, where);
}

Future<std::optional<std::string>> Stream::read_line(std::source_location where) {
    return core().start_framed_read(detail::StreamCore::ReadKind::line, {}, where);
}

Lines Stream::lines() const { return Lines(*this); }

Future<std::optional<std::string>> Stream::read_frame(reactor::FrameFormat format, std::source_location where) {
    return core().start_framed_read(detail::StreamCore::ReadKind::frame, format, where);
}

bool Stream::write_frame(std::string_view payload, const reactor::FrameFormat& format) {
    detail::StreamCore& c = core();
    return c.write(reactor::make_frame(payload, format));
}

bool Stream::at_eof() const { return core().at_eof(); }
std::size_t Stream::buffered() const { return core().buffered(); }
bool Stream::write(std::string_view data) { return core().write(data); }
Future<void> Stream::drain(std::source_location where) { return core().drain(where); }
void Stream::write_eof() { core().write_eof(); }
void Stream::close() { core().close(); }
void Stream::abort() { core().abort(); }
bool Stream::is_closing() const { return core().is_closing(); }
Future<void> Stream::wait_closed(std::source_location where) { return core().wait_closed(where); }
void Stream::set_read_timeout(reactor::Duration d) { core().connection().set_read_timeout(d); }
void Stream::set_write_timeout(reactor::Duration d) { core().connection().set_write_timeout(d); }
void Stream::set_idle_timeout(reactor::Duration d) { core().connection().set_idle_timeout(d); }
reactor::Address Stream::local_address() const { return core().connection().local_address(); }
reactor::Address Stream::peer_address() const { return core().connection().peer_address(); }
reactor::Scheduler& Stream::scheduler() const { return core().scheduler(); }
reactor::tls::Connection* Stream::tls() const { return core().transport().tls(); }
reactor::Transport& Stream::transport() const { return core().transport(); }
void Stream::replace_transport(const std::function<reactor::TransportPtr(reactor::Transport&)>& make) {
    core().replace_transport(make);
}

}  // namespace futures
