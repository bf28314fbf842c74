// SPDX-License-Identifier: MIT
// reactor/net/frame.hpp: length-prefixed frames, the second most common
// framing after lines: a big-endian unsigned length (16 or 32 bits), then
// that many bytes of payload. A zero-length frame is a valid, empty frame.
//
// One description of the format (FrameFormat) serves both layers: the
// callback layer's FrameReader (reactor/net/frame_reader.hpp) and
// write_frame() below, and futures::Stream's read_frame and write_frame.
// The maximum is checked before any payload is buffered, so a peer cannot
// make a reader hold more than max_size bytes of one frame.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "reactor/export.hpp"

namespace reactor {

class Transport;

// The width of the length prefix; both are big-endian (network order), as in
// most protocols that use one (DNS over TCP, the PostgreSQL wire protocol,
// Kafka's, many RPC systems).
enum class LengthPrefix : std::uint8_t { u16, u32 };

struct FrameFormat {
    LengthPrefix prefix = LengthPrefix::u32;
    // The largest payload accepted, the prefix not counted. A frame announced
    // larger ends the reading (FrameReader: EndKind::frame_too_large;
    // Stream::read_frame: futures::FrameTooLargeError) before its payload is
    // read. The prefix bounds it too: u16 never announces more than 65535.
    std::size_t max_size = 1024 * 1024;
};

// Bytes of the prefix: 2 or 4.
constexpr std::size_t prefix_size(LengthPrefix prefix) noexcept { return prefix == LengthPrefix::u16 ? 2 : 4; }
// The largest length the prefix can carry.
constexpr std::size_t prefix_capacity(LengthPrefix prefix) noexcept {
    return prefix == LengthPrefix::u16 ? 0xffff : 0xffffffff;
}

// The length a prefix announces; `header` holds prefix_size(prefix) bytes.
constexpr std::size_t decode_frame_length(LengthPrefix prefix, const char* header) noexcept {
    std::size_t length = 0;
    for (std::size_t i = 0; i < prefix_size(prefix); ++i)
        length = (length << 8) | static_cast<unsigned char>(header[i]);
    return length;
}

// The prefix and the payload, in one string. Throws std::length_error when
// the payload is larger than format.max_size or than the prefix can carry
// (the peer would refuse it: a bug of the writer, caught where it is made).
REACTOR_API std::string make_frame(std::string_view payload, const FrameFormat& format = {});

// Writes make_frame(payload, format) with one write (so the prefix never
// goes out alone) to `conn`, a reactor::Connection or a tls::Connection, and
// returns what that returns. Throws std::length_error as make_frame, writing
// nothing. Loop thread only.
REACTOR_API bool write_frame(Transport& conn, std::string_view payload, const FrameFormat& format = {});

}  // namespace reactor
