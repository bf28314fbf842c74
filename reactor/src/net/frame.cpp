// SPDX-License-Identifier: MIT
// Length-prefixed frames: the writer's half (reactor/net/frame.hpp).
#include "reactor/net/frame.hpp"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

#include "reactor/net/transport.hpp"

namespace reactor {

std::string make_frame(std::string_view payload, const FrameFormat& format) {
    const std::size_t most = std::min(format.max_size, prefix_capacity(format.prefix));
    if (payload.size() > most)
        throw std::length_error(fmt::format("frame: a payload of {} bytes is over the maximum of {} ({} prefix)",
                                            payload.size(), most,
                                            format.prefix == LengthPrefix::u16 ? "u16" : "u32"));
    const std::size_t header = prefix_size(format.prefix);
    std::string frame;
    frame.reserve(header + payload.size());
    for (std::size_t i = header; i-- > 0;) frame.push_back(static_cast<char>((payload.size() >> (8 * i)) & 0xff));
    frame.append(payload);
    return frame;
}

bool write_frame(Transport& conn, std::string_view payload, const FrameFormat& format) {
    return conn.write(make_frame(payload, format));
}

}  // namespace reactor
