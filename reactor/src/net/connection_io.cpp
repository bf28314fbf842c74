// SPDX-License-Identifier: MIT
// reactor::Connection's reading and writing: the reader's interest, the
// receive path to the protocol, the send path with its output buffer, the
// water marks, the drain and the half-close. Its lifetime, protocol and
// closing are in connection.cpp.
#include "reactor/net/connection.hpp"

#include <sys/socket.h>

#include <cerrno>
#include <string_view>

#include "deadline_queues.hpp"
#include "reactor/detail/kernel_calls.hpp"
#include "socket_ops.hpp"

namespace reactor {

// ---------------------------------------------------------------- reading

void Connection::pause_reading() {
    check_thread("Connection::pause_reading");
    reading_wanted_ = false;
    update_reader();
}

void Connection::resume_reading() {
    check_thread("Connection::resume_reading");
    reading_wanted_ = true;
    update_reader();
}

// The one place that decides whether the fd is watched for reading.
void Connection::update_reader() {
    const bool held_back = pause_above_high_ && above_high_;  // ConnectionOptions::pause_reading_above_high_water
    bool want = state_ == State::open && (watch_reader_gone_ || (reading_wanted_ && !held_back && !read_eof_));
    if (want == reader_registered_) return;
    watch_fd(want, writer_registered_);  // our own count keeps `this` alive while watched
    reader_registered_ = want;
    if (!has_deadlines()) return;
    if (want) {
        reading_started();  // the read timeout counts from here
    } else {
        reading_stopped();
    }
}

// The loop calls on_ready for what we watch: no callback slot of our own.
// Throws (select: fd >= FD_SETSIZE) with nothing changed.
void Connection::watch_fd(bool read, bool write) {
    scheduler().watch(fd_, (read ? Interest::read : Interest::none) | (write ? Interest::write : Interest::none));
}

void Connection::on_ready(int /*fd*/, Interest which) {
    if (which == Interest::read) {
        on_readable();
    } else {
        on_writable();
    }
}

void Connection::on_readable() {
    if (watch_reader_gone_) return fail(EPIPE);  // see adapt_to_fd_kind
    char* buf = detail::read_scratch(profile_->read_size);
    ssize_t n;
    do {
        n = direct_ ? ::recv(fd_, buf, profile_->read_size, 0) : transfer_in_indirect(buf, profile_->read_size);
    } while (n < 0 && errno == EINTR);
    if (n > 0) {
        note_read();
        const std::string_view data(buf, static_cast<std::size_t>(n));
        // The callbacks' protocol is called as what it is (a final class: no
        // virtual call), so a callback connection's read costs what its data
        // callback did before the callbacks were a protocol.
        if (protocol_ == callbacks_.get()) {
            if (protocol_) callbacks_->on_data(data);
        } else {
            protocol_->on_data(data);
        }
        return;
    }
    if (n == 0) return on_eof();
    if (errno == EAGAIN || errno == EWOULDBLOCK) return;  // spurious readiness: wait again
    fail(errno);
}

void Connection::on_eof() {
    read_eof_ = true;
    update_reader();
    if (!protocol_ || !protocol_->on_eof()) return begin_close(EndKind::eof);
    // Both directions are finished: nothing more can happen on this socket.
    if (state_ == State::open && write_shut_) finish_close({EndKind::eof, {}}, false);
}

// ---------------------------------------------------------------- writing

bool Connection::write(std::string_view data) {
    if (state_ != State::open || shutdown_requested_) return false;
    scheduler().check_owner_thread("Connection::write", nullptr, &where(), "connection");  // debug mode only
    if (data.empty()) return true;
    if (!has_output()) {
        // Nothing queued, so order allows sending straight away: the common
        // case costs one send(2) and no copy.
        ssize_t n = transfer_out(data.data(), data.size());
        if (n < 0) {
            if (errno != EAGAIN && errno != EWOULDBLOCK) {
                fail(errno);
                return false;
            }
            n = 0;
        }
        if (static_cast<std::size_t>(n) == data.size()) {
            note_written();
            if (drain_wanted_) schedule_drain();
            return true;
        }
        data.remove_prefix(static_cast<std::size_t>(n));
        output().append(data);
        register_writer();
        if (has_deadlines()) output_queued();
    } else {
        out_->append(data);  // the writer is registered: it sends in order
    }
    // Last, so the callback sees a consistent connection and may do anything.
    if (!above_high_ && out_->size() > profile_->high_water) {
        above_high_ = true;
        if (pause_above_high_) update_reader();
        if (protocol_) protocol_->on_pause_writing();
        // An abort() in the callback (or a failed write from it) discarded the
        // buffer, `data` included: say so. close() or write_eof() there
        // still flush it, so that data counts as accepted.
        return state_ != State::closed;
    }
    return true;
}

void Connection::register_writer() {
    if (writer_registered_) return;
    watch_fd(reader_registered_, true);
    writer_registered_ = true;
}

void Connection::on_writable() {
    if (has_output()) {
        ssize_t n = transfer_out(out_->data(), out_->size());
        if (n < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK) return;
            return fail(errno);
        }
        out_->consume(static_cast<std::size_t>(n));
        note_written();
        if (out_->empty()) drop_output();  // an idle connection keeps no buffer
    }
    if (above_high_ && buffered() <= profile_->low_water) {
        above_high_ = false;
        if (pause_above_high_) update_reader();
        // Either may write, close, abort...
        if (protocol_) protocol_->on_resume_writing();
        if (state_ == State::closed) return;
    }
    if (has_output()) return;

    watch_fd(reader_registered_, false);
    writer_registered_ = false;
    if (state_ == State::closing) return finish_close({closing_kind_, {}}, false);
    if (shutdown_requested_) return do_write_eof();
    if (drain_wanted_) protocol_->on_drained();
}

void Connection::schedule_drain() {
    if (drain_scheduled_) return;
    drain_scheduled_ = true;
    scheduler().call_soon(
        [self = shared_from_this()] {
            self->drain_scheduled_ = false;
            // Later writes may have queued output again: on_writable reports that drain.
            if (self->state_ == State::open && !self->has_output() && self->drain_wanted_) self->protocol_->on_drained();
        },
        where());
}

void Connection::write_eof() {
    if (state_ != State::open || shutdown_requested_) return;
    scheduler().check_owner_thread("Connection::write_eof", nullptr, &where(), "connection");
    shutdown_requested_ = true;
    if (!has_output()) do_write_eof();  // else on_writable does it once flushed
}

void Connection::do_write_eof() {
    // ENOTCONN: the peer already reset; reading reports that, nothing to do here.
    // Not a socket: a write-only pipe has read_eof_ set, so it closes just
    // below (its reader sees EOF); a terminal cannot half-close.
    if (is_socket_) detail::sys::shutdown(kernel(), fd_, SHUT_WR);
    write_shut_ = true;
    if (read_eof_) finish_close({EndKind::eof, {}}, false);
}

}  // namespace reactor
