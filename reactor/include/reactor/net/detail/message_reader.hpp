// SPDX-License-Identifier: MIT
// Internal base of the line and frame readers (reactor/net/line_reader.hpp,
// frame_reader.hpp): what reading messages off a connection takes, whatever
// marks their ends and whatever the connection is (a plain one or a TLS
// one: both are a reactor::Transport). It cuts complete messages out of
// what arrives and hands each over, keeps the bytes of the message not
// complete yet, and ends the connection when one grows past the maximum.
//
// Three layers, so that each corner case is handled once:
//   MessageReader          the reading (message_reader.cpp), over a Transport
//   LineCutting, FrameCutting   where a message ends (line_reader.cpp, frame_reader.cpp)
//   TypedReader<Conn, Cutting>  the connection's own callbacks and the user's,
//                               typed (Conn: reactor::Connection or
//                               reactor::tls::Connection): a template, here
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
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

#include "reactor/export.hpp"
#include "reactor/net/byte_buffer.hpp"
#include "reactor/net/end.hpp"
#include "reactor/net/transport.hpp"

namespace reactor::detail {

class REACTOR_API MessageReader : public std::enable_shared_from_this<MessageReader> {
public:
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

protected:
    // What the subclass finds at the front of the bytes.
    struct Cut {
        enum class What : unsigned char { more, message, too_large } what = What::more;
        std::size_t offset = 0;    // message: where its content starts
        std::size_t length = 0;    // message: its content's size
        std::size_t consumed = 0;  // message: the bytes it takes, framing included
    };
    // Throws std::invalid_argument for a null transport.
    MessageReader(Transport* transport, EndKind too_large);
    // The first message of `bytes`, which start at a message boundary. The
    // first `scanned` bytes were looked at before and hold no complete message
    // (for a search that resumes where it stopped).
    virtual Cut cut(std::string_view bytes, std::size_t scanned) const = 0;

    // What the connection's callbacks call (the typed layer sets them).
    void on_data(Transport& transport, std::string_view data);
    void on_eof(Transport& transport);
    // The typed layer: the user's message callback; the user's EOF callback,
    // false when there is none; and detach()'s clearing of the connection's
    // data and EOF callbacks.
    virtual void tell_message(Transport& transport, std::string_view message) = 0;
    virtual bool tell_eof(Transport& transport, std::string_view partial) = 0;
    virtual void release_callbacks() = 0;
    // Marks the reader attached; the typed layer then sets the callbacks.
    void start() noexcept { attached_ = true; }
    Transport& transport() const noexcept { return *transport_; }

private:
    // Hands over every complete message at the front of `bytes` while it
    // may, leaving in `bytes` what follows them (kept up to date before each
    // callback, so that a callback that throws loses nothing). Stops early on
    // pause, detach, close or a message too large (which ends the connection
    // and leaves `bytes` empty).
    void deliver(Transport& transport, std::string_view& bytes);
    // in_ keeps only `rest`, a view of its end.
    void keep_only(std::string_view rest) noexcept;
    bool may_deliver(const Transport& transport) const noexcept {
        return attached_ && !paused_ && transport.is_open();
    }
    void deliver_buffered();  // resume(): from the loop

    TransportPtr transport_;
    ByteBuffer in_;              // the start of the next message, when a read ended inside one
    std::string_view pending_;   // during deliver(): what follows the message being handed over
    std::size_t scanned_ = 0;    // of in_: see cut()
    EndKind too_large_;          // the close reason when a message is over the maximum
    bool attached_ = false;
    bool paused_ = false;
    bool delivering_ = false;
};

// The typed layer over a cutting (LineCutting, FrameCutting): the callbacks
// of the connection type `Conn`, and the user's, which take a `Conn&`.
template <class Conn, class Cutting>
class TypedReader : public Cutting {
public:
    // `message` and `partial` are valid only during the call: copy what you keep.
    using MessageCallback = std::function<void(Conn&, std::string_view message)>;
    using EofCallback = std::function<void(Conn&, std::string_view partial)>;

    // The peer finished sending (a FIN; under TLS its close_notify):
    // `partial` holds the bytes after the last complete message ("" at a
    // clean end). With this callback the connection stays open for writing,
    // as with the connection's own EOF callback: finish with close() or
    // write_eof(). Without it the connection closes gracefully by itself,
    // reason eof at a clean end, EndKind::truncated when the input ended
    // inside a message (whose bytes are dropped).
    void set_eof_callback(EofCallback cb) { on_eof_ = std::move(cb); }

protected:
    template <class... CuttingArgs>
    TypedReader(const reactor::Ref<Conn>& conn, MessageCallback on_message, CuttingArgs&&... cutting_args)
        : Cutting(conn.get(), std::forward<CuttingArgs>(cutting_args)...), on_message_(std::move(on_message)) {
        if (!on_message_) throw std::invalid_argument("reader: empty message callback");
    }

    // Takes over the connection's data and EOF callbacks, which own the
    // reader from now on (until the connection has closed, or detach());
    // once, right after construction.
    void take_callbacks() {
        this->start();
        Conn& conn = typed();
        const auto self = std::static_pointer_cast<TypedReader>(this->shared_from_this());
        conn.set_data_callback([self](Conn& c, std::string_view data) { self->on_data(c, data); });
        conn.set_eof_callback([self](Conn& c) { self->on_eof(c); });
    }

private:
    Conn& typed() const noexcept { return static_cast<Conn&>(this->transport()); }
    void tell_message(Transport& transport, std::string_view message) final {
        on_message_(static_cast<Conn&>(transport), message);
    }
    bool tell_eof(Transport& transport, std::string_view partial) final {
        if (!on_eof_) return false;
        on_eof_(static_cast<Conn&>(transport), partial);
        return true;
    }
    void release_callbacks() final {
        typed().set_data_callback(nullptr);
        typed().set_eof_callback(nullptr);
    }

    MessageCallback on_message_;
    EofCallback on_eof_;
};

}  // namespace reactor::detail
