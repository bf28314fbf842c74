// SPDX-License-Identifier: MIT
// Internal base of LineReader and FrameReader (reactor/net/line_reader.hpp,
// frame_reader.hpp): what reading messages off a Connection takes, whatever
// marks their ends. It takes over the connection's data and EOF callbacks,
// cuts complete messages out of what arrives and hands each to the user,
// keeps the bytes of the message not complete yet, and ends the connection
// when one grows past the maximum.
//
// Owned by the connection's callbacks (and by any handle the user keeps):
// dropped with them when the connection closes (so its handle on the
// connection makes no cycle past the close).
// Messages are cut straight from the bytes a read brought in, with no copy,
// when nothing was left over from the previous read; only an incomplete
// message is copied, and it never exceeds the maximum plus one read. A
// message callback that throws is reported as any connection callback's
// exception (the loop's exception handler); the messages after it are kept
// and handed over at the next read. Loop thread only; never calls back
// synchronously from a member function.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "reactor/export.hpp"
#include "reactor/net/byte_buffer.hpp"
#include "reactor/net/connection.hpp"

namespace reactor::detail {

class REACTOR_API MessageReader : public std::enable_shared_from_this<MessageReader> {
public:
    using MessageCallback = std::function<void(Connection&, std::string_view message)>;
    using EofCallback = std::function<void(Connection&, std::string_view partial)>;

    virtual ~MessageReader();
    MessageReader(const MessageReader&) = delete;
    MessageReader& operator=(const MessageReader&) = delete;

    // Stops and restarts the messages: pausing also pauses the connection's
    // reading, and the messages already received wait here; resume() hands
    // them over from the loop (never from inside the call), then reading
    // goes on. Use these, not the connection's, from a message callback.
    void pause();
    void resume();
    // Gives the connection back to plain reads: clears its data and EOF
    // callbacks (set your own next) and returns the bytes received after the
    // last message handed over, which the reader will never deliver. From a
    // message callback, no further message is delivered after it returns.
    std::string detach();
    bool attached() const noexcept { return attached_; }
    // Bytes received and not handed over yet, kept here between reads (the
    // start of the next message, or messages waiting while paused).
    std::size_t buffered() const noexcept { return in_.size(); }
    // The peer finished sending: `partial` holds the bytes after the last
    // complete message ("" at a clean end). With this callback the
    // connection stays open for writing, as with Connection's EOF callback:
    // finish with close() or write_eof(). Without it the connection closes
    // gracefully by itself, reason eof at a clean end, EndKind::truncated
    // when the input ended inside a message (whose bytes are dropped).
    void set_eof_callback(EofCallback cb) { on_eof_ = std::move(cb); }

protected:
    // What the subclass finds at the front of the bytes.
    struct Cut {
        enum class What : unsigned char { more, message, too_large } what = What::more;
        std::size_t offset = 0;    // message: where its content starts
        std::size_t length = 0;    // message: its content's size
        std::size_t consumed = 0;  // message: the bytes it takes, framing included
    };
    MessageReader(const ConnectionPtr& conn, MessageCallback on_message, EndKind too_large);
    // Takes over the connection's callbacks; once, right after construction.
    void start(Connection& conn);
    // The first message of `bytes`, which start at a message boundary. The
    // first `scanned` bytes were looked at before and hold no complete message
    // (for a search that resumes where it stopped).
    virtual Cut cut(std::string_view bytes, std::size_t scanned) const = 0;

private:
    void on_data(Connection& conn, std::string_view data);
    void on_eof(Connection& conn);
    // Hands over every complete message at the front of `bytes` while it
    // may, leaving in `bytes` what follows them (kept up to date before each
    // callback, so that a callback that throws loses nothing). Stops early on
    // pause, detach, close or a message too large (which ends the connection
    // and leaves `bytes` empty).
    void deliver(Connection& conn, std::string_view& bytes);
    // in_ keeps only `rest`, a view of its end.
    void keep_only(std::string_view rest) noexcept;
    bool may_deliver(const Connection& conn) const noexcept { return attached_ && !paused_ && conn.is_open(); }
    void deliver_buffered();  // resume(): from the loop

    ConnectionPtr conn_;
    MessageCallback on_message_;
    EofCallback on_eof_;
    ByteBuffer in_;              // the start of the next message, when a read ended inside one
    std::string_view pending_;   // during deliver(): what follows the message being handed over
    std::size_t scanned_ = 0;    // of in_: see cut()
    EndKind too_large_;        // the close reason when a message is over the maximum
    bool attached_ = false;
    bool paused_ = false;
    bool delivering_ = false;
};

}  // namespace reactor::detail
