// SPDX-License-Identifier: MIT
// A Stream's reads: completing the pending read from the buffered bytes
// (each kind's rule: some, exactly, until, line, frame, all), or with the
// input's end or the transport's failure, and the read buffer's upkeep.
// The rest of the stream's core is in stream_core.cpp. Loop thread only.
#include "stream_core.hpp"

#include <algorithm>
#include <cstdint>
#include <utility>

#include "futures/leaves.hpp"

namespace futures {
namespace detail {

void StreamCore::try_read() {
    if (!read_.active()) return;
    if (!read_.promise.is_pending()) {  // cancelled by its owner: the bytes stay for the next read
        read_ = PendingRead{};
        return;
    }
    PendingRead& r = read_;
    const reactor::ByteBuffer& in = this->in();
    switch (r.kind) {
    case ReadKind::some:
        if (r.n == 0 || !in.empty()) return complete(std::min<std::size_t>(r.n, in.size()));
        break;
    case ReadKind::exactly:
        if (in.size() >= r.n) return complete(r.n);
        break;
    case ReadKind::until: {
        std::string_view view = in.view();
        const std::string& delimiter = rare_->delimiter;  // made by start_read
        // Resume the search where the last one stopped, minus a partial delimiter.
        const std::size_t scanned = in_ ? in_->scanned : 0;
        std::size_t from = scanned >= delimiter.size() ? scanned - delimiter.size() + 1 : 0;
        std::size_t pos = view.find(delimiter, from);
        if (pos != std::string_view::npos) {
            std::size_t end = pos + delimiter.size();
            if (end > limit_)
                return fail(LimitOverrunError("stream: the delimiter is found, but the chunk is longer than the limit", end));
            return complete(end);
        }
        if (view.size() > limit_)
            return fail(LimitOverrunError("stream: the delimiter is not found, and the chunk exceeds the limit",
                                          view.size()));
        if (in_) in_->scanned = view.size();  // at most limit_
        break;
    }
    case ReadKind::line: {
        // As until "\n", then the end (and a '\r' before it) left out.
        std::string_view view = in.view();
        std::size_t end = view.find('\n', in_ ? in_->scanned : 0);
        if (end != std::string_view::npos) {
            if (end + 1 > limit_)
                return fail(LimitOverrunError("stream: the line end is found, but the line is longer than the limit",
                                              end + 1));
            const std::size_t length = end > 0 && view[end - 1] == '\r' ? end - 1 : end;
            return complete(0, length, end + 1);
        }
        if (view.size() > limit_)
            return fail(LimitOverrunError("stream: the line end is not found, and the line exceeds the limit",
                                          view.size()));
        if (in_) in_->scanned = view.size();  // at most limit_
        break;
    }
    case ReadKind::all:
        // Only the end completes it; the bytes wait in the buffer meanwhile
        // (reading never pauses while a read waits: wants_more).
        if (in.size() > r.n)
            return fail(LimitOverrunError("stream: read_all: the input exceeds the limit before its end", in.size()));
        break;
    case ReadKind::frame: {
        const std::size_t prefix = reactor::prefix_size(r.prefix);
        if (in.size() < prefix) break;
        const std::size_t length = reactor::decode_frame_length(r.prefix, in.data());
        if (length > r.n) return fail(FrameTooLargeError(length, r.n, prefix));
        if (in.size() - prefix >= length) return complete(prefix, length, prefix + length);
        break;
    }
    }
    if (eof_) {
        // Scheduler::close() ended the connection: what waited on it is
        // cancelled, as close() cancels tasks, not failed (a conversation it
        // ends is not an error nobody retrieved).
        if (end_ == reactor::EndKind::scheduler_closed) {
            read_.take().cancel();
            return;
        }
        if (failed()) return fail(connection_error());
        if (r.kind == ReadKind::some) return complete(0);
        if (r.kind == ReadKind::all) return complete(in.size());  // within the limit: checked above
        if (r.framed() && in.empty()) {  // a clean end: between lines or frames
            read_.take().set_end();
            return;
        }
        std::optional<std::size_t> expected;
        if (r.kind == ReadKind::exactly) expected = r.n;
        if (r.kind == ReadKind::frame) {
            const std::size_t prefix = reactor::prefix_size(r.prefix);
            expected = in.size() < prefix ? prefix : prefix + reactor::decode_frame_length(r.prefix, in.data());
        }
        std::string partial(in.view());
        in_.reset();
        return fail(IncompleteReadError(std::move(partial), expected));
    }
    // Waiting for more: make sure it can arrive even past the buffer limit.
    if (paused_) {
        paused_ = false;
        transport_->resume_reading();
    }
}

// Kept across reads when emptied; a larger buffer (a burst the reader was
// slower than) goes back to the heap, so an idle stream does not keep it.
constexpr std::size_t kKeptReadBuffer = 4096;

void StreamCore::complete(std::size_t offset, std::size_t length, std::size_t consumed) {
    std::string bytes(in().data() + offset, length);
    consume(consumed);
    deliver(std::move(bytes));
}

namespace {
constinit const reactor::ByteBuffer no_bytes{};
}  // namespace

const reactor::ByteBuffer& StreamCore::in() const noexcept { return in_ ? *in_ : no_bytes; }

reactor::ByteBuffer& StreamCore::in_to_append() {
    if (!in_) in_ = std::make_unique<ReadBuffer>();
    return *in_;
}

void StreamCore::consume(std::size_t n) noexcept {
    if (!in_) return;
    in_->consume(n);
    if (in_->empty() && in_->capacity() > kKeptReadBuffer) {
        in_.reset();
    } else if (paused_ && transport_->above_high_water()) {
        trim_read_buffer();
    }
}

void StreamCore::trim_read_buffer() noexcept {
    if (in_ && in_->capacity() > std::max(kKeptReadBuffer, 2 * in_->size())) in_->shrink_to_fit();
}

void StreamCore::deliver(std::string bytes) {
    const bool framed = read_.framed();
    ReadPromise p = read_.take();
    if (paused_ && in().size() <= limit_ && !transport_->above_high_water()) {
        paused_ = false;
        transport_->resume_reading();
    }
    p.set_value(std::move(bytes), framed);
}

template <class E>
void StreamCore::fail(E error) {
    read_.take().set_exception(std::move(error));  // an exception, or an exception_ptr
}

}  // namespace detail
}  // namespace futures
