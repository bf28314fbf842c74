// SPDX-License-Identifier: MIT
// reactor::LineReader: where lines end (reactor/net/line_reader.hpp); the
// reading itself is MessageReader's.
#include "reactor/net/line_reader.hpp"

#include <stdexcept>

namespace reactor::detail {

LineCutting::LineCutting(Transport* transport, LineOptions options)
    : MessageReader(transport, EndKind::line_too_long),
      options_(std::move(options)),
      drop_cr_(options_.delimiter == "\n") {
    if (options_.delimiter.empty()) throw std::invalid_argument("LineReader: empty delimiter");
}

LineCutting::Cut LineCutting::cut(std::string_view bytes, std::size_t scanned) const {
    const std::string& delimiter = options_.delimiter;
    // Resume the search where the last one stopped, minus a delimiter that
    // may have begun in its last bytes.
    const std::size_t from = scanned >= delimiter.size() ? scanned - delimiter.size() + 1 : 0;
    const std::size_t end = bytes.find(delimiter, from);
    if (end == std::string_view::npos) {
        // Could a line of max_length still end in these bytes? Its "\r" and
        // all but the last byte of its delimiter may be here already.
        const std::size_t slack = delimiter.size() - 1 + (drop_cr_ ? 1 : 0);
        const bool too_long = bytes.size() > slack && bytes.size() - slack > options_.max_length;
        return {too_long ? Cut::What::too_large : Cut::What::more};
    }
    std::size_t length = end;
    if (drop_cr_ && length > 0 && bytes[length - 1] == '\r') --length;
    if (length > options_.max_length) return {Cut::What::too_large};
    return {Cut::What::message, 0, length, end + delimiter.size()};
}

}  // namespace reactor::detail
