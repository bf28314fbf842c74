// SPDX-License-Identifier: MIT
// A Stream's core: the transport's protocol, its lifetime, writes to the
// transport, and the flow control that pauses reading while too much waits
// unread (stream_core.hpp says who owns what); the reads that complete
// futures from the buffered bytes are in stream_reads.cpp. Loop thread only.
#include "stream_core.hpp"

#include <algorithm>
#include <cstdint>
#include <new>
#include <stdexcept>
#include <utility>

#include <fmt/format.h>

#include "futures/leaves.hpp"

namespace futures {
namespace detail {

// ---------------------------------------------------------------- StreamCore

// The promises (read_, rare_) break as the members go: nobody can
// complete them any more.
StreamCore::~StreamCore() {
    // The transport tells us through a plain pointer: nothing may arrive
    // after us. Without a protocol the connection closes by itself at the
    // peer's EOF.
    if (!closed_) transport_->set_protocol(nullptr);
    if (transport_->is_open()) transport_->close();  // the last handle went: finish politely
}

void StreamCore::last_reference_gone() noexcept {
    if (closed_ || !waits_pending()) {
        delete this;
        return;
    }
    refs_ = 1;  // its own, until the waits complete (release_orphan)
    orphaned_ = true;
    if (closing_) return;
    try {
        close();
    } catch (...) {  // a transport whose close failed: as ~StreamCore, give up now
        orphaned_ = false;
        delete this;
    }
}

bool StreamCore::waits_pending() const noexcept {
    if (read_.promise.is_pending()) return true;
    if (!rare_) return false;
    const auto pending = [](const Promise<void>& p) { return p.is_pending(); };
    return std::any_of(rare_->drain.begin(), rare_->drain.end(), pending) ||
           std::any_of(rare_->close.begin(), rare_->close.end(), pending);
}

// Called with a reference of the caller's still held (on_closed's and
// on_abandoned's `keep`), which then lets the stream go.
void StreamCore::release_orphan() noexcept {
    if (!orphaned_) return;
    orphaned_ = false;
    --refs_;
}

void StreamCore::attach() {
    eof_ = transport_->at_eof();  // a write-only pipe never reads: reads end at once
    if (!transport_->is_open()) {
        closed_ = eof_ = true;  // closing or closed: no stream's any more (nothing to read, nothing to write)
        return;
    }
    transport_->set_protocol(this);
}

// The new transport takes the connection over from the old one, which is
// dropped (without closing it). Nothing is read in between: the loop does not
// run while we are here.
void StreamCore::replace_transport(
    const std::function<reactor::TransportPtr(reactor::Transport&)>& make) {
    if (closing_ || closed_ || !transport_->is_open())
        throw InvalidStateError("stream: cannot replace the transport of a closing or closed stream");
    if (eof_) throw InvalidStateError("stream: cannot replace the transport after the peer's EOF");
    if (!in().empty())
        throw InvalidStateError(fmt::format(
            "stream: cannot replace the transport with {} bytes received and not read (they would be the new "
            "layer's: the peer spoke before its turn)",
            in().size()));
    transport_->set_protocol(nullptr);
    reactor::TransportPtr next;
    try {
        next = make(*transport_);
        if (!next) throw std::invalid_argument("stream: replace_transport: no transport made");
    } catch (...) {
        transport_->set_protocol(this);
        throw;
    }
    transport_ = std::move(next);  // the old one: the new one is its protocol now
    transport_->set_protocol(this);
}

void StreamCore::on_abandoned() noexcept {
    if (closed_) return;
    // Breaking a promise schedules its waiters (which keeps them, and what
    // they hold, alive until the loop drops them); should that fail, they
    // go at once, and with them maybe the last handle to this stream.
    const Ref<StreamCore> keep(this);
    closed_ = true;
    eof_ = true;
    read_ = PendingRead{};  // a promise still pending breaks, naming its line
    rare_.reset();
    release_orphan();
}

void StreamCore::check_no_read_pending() const {
    if (read_.promise.is_pending()) {
        const std::source_location other = read_.promise.where();
        throw InvalidStateError(fmt::format("stream: another read is already pending (the one made at {}:{})",
                                            other.file_name(), other.line()));
    }
}

Future<std::string> StreamCore::start_read(ReadKind kind, std::size_t n, std::string delimiter,
                                           std::source_location where) {
    check_no_read_pending();
    if (kind == ReadKind::until) rare().delimiter = std::move(delimiter);
    if (in_) in_->scanned = 0;
    Future<std::string> f;
    read_ = PendingRead{.promise = ReadPromise::make(scheduler(), where, f),
                        .n = n,
                        .kind = kind};
    try_read();
    return f;
}

Future<std::optional<std::string>> StreamCore::start_framed_read(ReadKind kind, reactor::FrameFormat format,
                                                                 std::source_location where) {
    check_no_read_pending();
    if (in_) in_->scanned = 0;
    Future<std::optional<std::string>> f;
    read_ = PendingRead{.promise = ReadPromise::make(scheduler(), where, f),
                        .n = kind == ReadKind::frame ? format.max_size : 0,
                        .kind = kind,
                        .prefix = format.prefix};
    try_read();
    return f;
}

Future<void> StreamCore::drain(std::source_location where) {
    reactor::Scheduler& sched = scheduler();
    if (failed()) return make_exception_future<void>(sched, connection_error(), where);
    if (closed_ || !transport_->above_high_water()) return make_ready_future(sched, where);
    std::vector<Promise<void>>& drains = rare().drain;
    std::erase_if(drains, [](const Promise<void>& p) { return !p.is_pending(); });  // cancelled ones
    return drains.emplace_back(sched, where, "stream drain").get_future();
}

void StreamCore::close() {
    closing_ = true;
    transport_->close();
}

void StreamCore::abort() {
    closing_ = true;
    transport_->abort();
}

void StreamCore::follow(Ref<ActiveCount> count, const Future<void>& conversation) {
    if (!conversation.valid()) return close();
    ++count->active;
    conversation_ = std::move(count);
    add_ref();  // the waiter's, dropped by dispose()
    try {
        Access::state(conversation).add_user_callback(this);
    } catch (...) {  // disposed of already (out of memory for a second waiter)
        close();
        throw;
    }
    // The server's scope waits for it through this same waiter: no second
    // waiter, no entry of its own (ScopeState::adopt_counted).
    if (conversation_->scope) {
        try {
            conversation_->scope->adopt_counted(conversation.origin());
            in_scope_ = true;
        } catch (...) {
            // The scope ended with its loop: the conversation runs on outside it.
        }
    }
}

void StreamCore::run(StateBase& done) {
    // First: what close() might throw does not leave the conversation counted.
    conversation_over_ = true;
    --conversation_->active;
    if (in_scope_) {
        in_scope_ = false;
        conversation_->scope->counted_done(&done, done.origin());
    }
    close();
}

void StreamCore::dispose() noexcept {
    if (!conversation_over_) {  // dropped unrun: removed, or its loop abandoned
        conversation_over_ = true;
        --conversation_->active;
    }
    if (in_scope_) {
        in_scope_ = false;
        conversation_->scope->counted_done(nullptr, where());
    }
    conversation_ = {};
    release();
}

Future<void> StreamCore::wait_closed(std::source_location where) {
    if (closed_) return make_ready_future(scheduler(), where);
    std::vector<Promise<void>>& closes = rare().close;
    std::erase_if(closes, [](const Promise<void>& p) { return !p.is_pending(); });  // cancelled ones
    return closes.emplace_back(scheduler(), where, "wait for the stream to close").get_future();
}

void StreamCore::on_data(std::string_view d) {
    const Ref<StreamCore> keep(this);  // a read's continuation may drop the last handle
    // A read waiting on an empty buffer takes the bytes straight from the
    // connection's loop-wide read buffer: a stream whose reader keeps up
    // keeps no buffer of its own (uvloop's streams do the same).
    if (in().empty() && wants_more() && read_.kind == ReadKind::some) {
        const std::size_t n = std::min<std::size_t>(read_.n, d.size());
        deliver(std::string(d.substr(0, n)));
        d.remove_prefix(n);
        if (d.empty()) return;
    }
    in_to_append().append(d);
    try_read();
    pause_if_unwanted();
}

bool StreamCore::write(std::string_view data) {
    if (closing_ || !transport_->write(data)) return false;
    pause_if_unwanted();
    return true;
}

void StreamCore::pause_if_unwanted() {
    if (paused_ || wants_more() || closed_) return;
    if (in().size() > 2 * std::size_t{limit_} || transport_->above_high_water()) {
        paused_ = true;
        transport_->pause_reading();
        if (transport_->above_high_water()) trim_read_buffer();
    }
}

bool StreamCore::on_eof() {
    const Ref<StreamCore> keep(this);
    eof_ = true;
    try_read();
    return true;
}

void StreamCore::on_resume_writing() {
    const Ref<StreamCore> keep(this);
    if (paused_ && in().size() <= limit_) {  // paused for the output (pause_if_unwanted)
        paused_ = false;
        transport_->resume_reading();
    }
    finish_drains();
}

void StreamCore::on_closed(const reactor::End& end) {
    if (closed_) return;  // the loop's end came first (on_abandoned)
    const Ref<StreamCore> keep(this);
    closed_ = true;
    eof_ = true;  // nothing more can arrive; bytes already here can still be read
    end_ = end.kind;
    if (failed()) {
        try {
            rare().error = std::make_exception_ptr(StreamError(end));
        } catch (const std::bad_alloc&) {
            // Out of memory: reads and drains fail with an error made of the kind alone.
        }
    }
    finish_drains();
    if (rare_) {
        for (auto& p : std::exchange(rare_->close, {}))
            if (p.is_pending()) p.set_value();
    }
    try_read();
    release_orphan();  // every wait has its outcome now
}

// What a read or drain fails with after the transport failed (StreamError).
std::exception_ptr StreamCore::connection_error() const {
    if (rare_ && rare_->error) return rare_->error;
    return std::make_exception_ptr(StreamError(reactor::End(end_)));
}

void StreamCore::finish_drains() {
    if (!rare_) return;
    for (auto& p : std::exchange(rare_->drain, {})) {
        if (!p.is_pending()) continue;  // cancelled by its owner
        if (end_ == reactor::EndKind::scheduler_closed) {
            p.cancel();  // Scheduler::close(): see try_read
        } else if (failed()) {
            p.set_exception(connection_error());
        } else {
            p.set_value();
        }
    }
}

}  // namespace detail

}  // namespace futures
