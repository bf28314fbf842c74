// SPDX-License-Identifier: MIT
// reactor::FrameReader: length-prefixed frames off a Connection (the format:
// reactor/net/frame.hpp). Attached to an open connection, it calls the frame
// callback once per complete frame with its payload (the prefix removed; a
// zero-length frame is delivered as ""); write the other way with
// reactor::write_frame.
//
// The maximum. A prefix announcing more than FrameFormat::max_size closes
// the connection gracefully with EndKind::frame_too_large as soon as the
// prefix is read, before any of the payload is kept.
//
// The end of input. When the peer's EOF comes inside a frame (in its prefix
// or its payload), the reader's EOF callback (set_eof_callback) gets the
// bytes received of it, prefix included, as `partial`; without one, the
// connection closes with EndKind::truncated (EndKind::eof at a clean end).
//
// Ownership, pause, resume and detach as LineReader's
// (reactor/net/line_reader.hpp); so is the TLS one, reactor::tls::FrameReader
// (reactor/tls/readers.hpp). Loop thread only.
#pragma once

#include <cstddef>
#include <memory>
#include <string_view>
#include <utility>

#include "reactor/export.hpp"
#include "reactor/net/connection.hpp"
#include "reactor/net/detail/message_reader.hpp"
#include "reactor/net/frame.hpp"

namespace reactor {
namespace detail {

// Where frames end, for every connection type (frame_reader.cpp).
class REACTOR_API FrameCutting : public MessageReader {
public:
    const FrameFormat& format() const noexcept { return format_; }

protected:
    // Throws std::invalid_argument for a null transport.
    FrameCutting(Transport* transport, FrameFormat format);

private:
    Cut cut(std::string_view bytes, std::size_t scanned) const final;

    FrameFormat format_;
};

}  // namespace detail

template <class Conn>
class BasicFrameReader final : public detail::TypedReader<Conn, detail::FrameCutting> {
    using Base = detail::TypedReader<Conn, detail::FrameCutting>;
    struct Passkey {};

public:
    // `payload` is valid only during the call: copy what you keep.
    using FrameCallback = typename Base::MessageCallback;
    using typename Base::EofCallback;

    // Takes over `conn`'s data and EOF callbacks and calls `on_frame` for
    // each complete frame from the next read on. Throws
    // std::invalid_argument for a null connection or an empty callback.
    static std::shared_ptr<BasicFrameReader> attach(const Ref<Conn>& conn, FrameCallback on_frame,
                                                    FrameFormat format = {}) {
        auto reader = std::make_shared<BasicFrameReader>(Passkey{}, conn, std::move(on_frame), format);
        reader->take_callbacks();
        return reader;
    }

    BasicFrameReader(Passkey, const Ref<Conn>& conn, FrameCallback on_frame, FrameFormat format)
        : Base(conn, std::move(on_frame), format) {}
};

using FrameReader = BasicFrameReader<Connection>;

}  // namespace reactor
