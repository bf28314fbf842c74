// SPDX-License-Identifier: MIT
// reactor::LineReader: line mode for a Connection. Attached to an open
// connection, it calls the line callback once per complete line, so a line
// protocol over callbacks needs no hand-written buffer:
//
//     reactor::LineReader::attach(conn, [](reactor::Connection& c, std::string_view line) {
//         c.write(fmt::format("Got: {}\n", line));
//     });
//
// Line ends. With the default delimiter "\n", a '\r' right before it is
// dropped too: "abc\n" and "abc\r\n" are both the line "abc" (what HTTP,
// SMTP and telnet peers send is read the same as Unix text); a '\r' anywhere
// else is part of the line. Any other delimiter is matched exactly and only
// it is dropped. The line given to the callback never holds its end; an
// empty line is "" (and delivered).
//
// The maximum. A line longer than LineOptions::max_length (its end not
// counted) closes the connection gracefully with EndKind::line_too_long,
// as soon as the excess is seen, whether or not its end has arrived: the
// reader never holds more than max_length plus one read's worth of bytes.
//
// The end of input. When the peer's EOF comes after bytes that are no
// complete line, the reader's EOF callback (set_eof_callback) gets them as
// `partial`; without one, the connection closes with EndKind::truncated
// (EndKind::eof at a clean end, as a connection without EOF callback).
//
// Ownership: the reader takes over the connection's data and EOF callbacks
// and is owned by them (keep the returned pointer only to pause, resume or
// detach); it ends with the connection. Loop thread only.
//
// Over TLS: reactor::tls::LineReader (reactor/tls/readers.hpp), the same
// reader over a reactor::tls::Connection, whose callbacks take one.
// BasicLineReader<Conn> is both; the reading is written once, untyped
// (reactor/net/detail/message_reader.hpp).
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "reactor/export.hpp"
#include "reactor/net/connection.hpp"
#include "reactor/net/detail/message_reader.hpp"

namespace reactor {

struct LineOptions {
    // The longest line accepted, in bytes, its end not counted.
    std::size_t max_length = 64 * 1024;
    // Non-empty. "\n" also takes "\r\n" (see the header comment).
    std::string delimiter = "\n";
};

namespace detail {

// Where lines end, for every connection type (line_reader.cpp).
class REACTOR_API LineCutting : public MessageReader {
public:
    const LineOptions& options() const noexcept { return options_; }

protected:
    // Throws std::invalid_argument for a null transport or an empty delimiter.
    LineCutting(Transport* transport, LineOptions options);

private:
    Cut cut(std::string_view bytes, std::size_t scanned) const final;

    LineOptions options_;
    bool drop_cr_;  // the delimiter is "\n": a "\r" before it goes too
};

}  // namespace detail

template <class Conn>
class BasicLineReader final : public detail::TypedReader<Conn, detail::LineCutting> {
    using Base = detail::TypedReader<Conn, detail::LineCutting>;
    struct Passkey {};

public:
    // `line` is valid only during the call: copy what you keep.
    using LineCallback = typename Base::MessageCallback;
    using typename Base::EofCallback;

    // Takes over `conn`'s data and EOF callbacks and calls `on_line` for
    // each complete line from the next read on. Throws
    // std::invalid_argument for a null connection, an empty callback or an
    // empty delimiter. Lines from inside the callback: the callback may
    // write, close (no more lines then), pause() (the lines already received
    // wait) or detach() (the rest goes back to you).
    static std::shared_ptr<BasicLineReader> attach(const Ref<Conn>& conn, LineCallback on_line,
                                                   LineOptions options = {}) {
        auto reader = std::make_shared<BasicLineReader>(Passkey{}, conn, std::move(on_line), std::move(options));
        reader->take_callbacks();
        return reader;
    }

    BasicLineReader(Passkey, const Ref<Conn>& conn, LineCallback on_line, LineOptions options)
        : Base(conn, std::move(on_line), std::move(options)) {}
};

using LineReader = BasicLineReader<Connection>;

}  // namespace reactor
