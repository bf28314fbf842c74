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
// (reactor/net/line_reader.hpp). Loop thread only.
#pragma once

#include <memory>
#include <string_view>

#include "reactor/export.hpp"
#include "reactor/net/connection.hpp"
#include "reactor/net/detail/message_reader.hpp"
#include "reactor/net/frame.hpp"

namespace reactor {

class REACTOR_API FrameReader final : public detail::MessageReader {
    struct Passkey {};

public:
    // `payload` is valid only during the call: copy what you keep.
    using FrameCallback = MessageCallback;

    // Takes over `conn`'s data and EOF callbacks and calls `on_frame` for
    // each complete frame from the next read on. Throws
    // std::invalid_argument for a null connection or an empty callback.
    static std::shared_ptr<FrameReader> attach(const ConnectionPtr& conn, FrameCallback on_frame,
                                               FrameFormat format = {});

    FrameReader(Passkey, const ConnectionPtr& conn, FrameCallback on_frame, FrameFormat format);
    const FrameFormat& format() const noexcept { return format_; }

private:
    Cut cut(std::string_view bytes, std::size_t scanned) const override;

    FrameFormat format_;
};

}  // namespace reactor
