// SPDX-License-Identifier: MIT
// reactor::FrameReader: where frames end (reactor/net/frame_reader.hpp); the
// reading itself is MessageReader's.
#include "reactor/net/frame_reader.hpp"

namespace reactor::detail {

FrameCutting::FrameCutting(Transport* transport, FrameFormat format)
    : MessageReader(transport, EndKind::frame_too_large), format_(format) {}

FrameCutting::Cut FrameCutting::cut(std::string_view bytes, std::size_t /*scanned*/) const {
    const std::size_t header = prefix_size(format_.prefix);
    if (bytes.size() < header) return {Cut::What::more};
    const std::size_t length = decode_frame_length(format_.prefix, bytes.data());
    if (length > format_.max_size) return {Cut::What::too_large};
    if (bytes.size() - header < length) return {Cut::What::more};
    return {Cut::What::message, header, length, header + length};
}

}  // namespace reactor::detail
