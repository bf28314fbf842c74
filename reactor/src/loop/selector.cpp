// SPDX-License-Identifier: MIT
// Backend names and the factory that picks a Selector implementation.
#include <stdexcept>

#include <fmt/format.h>

#include "reactor/selector.hpp"

namespace reactor {

std::string_view to_string(Backend backend) noexcept {
    switch (backend) {
    case Backend::select: return "select";
    case Backend::poll: return "poll";
    case Backend::epoll: return "epoll";
    }
    return "unknown";
}

std::optional<Backend> parse_backend(std::string_view name) noexcept {
    for (Backend b : {Backend::select, Backend::poll, Backend::epoll}) {
        if (name == to_string(b)) return b;
    }
    return std::nullopt;
}

std::unique_ptr<Selector> make_selector(Backend backend) {
    switch (backend) {
    case Backend::select: return make_select_selector();
    case Backend::poll: return make_poll_selector();
    case Backend::epoll: return make_epoll_selector();
    }
    throw std::invalid_argument(fmt::format("reactor: the {} backend is not available in this build", to_string(backend)));
}

}  // namespace reactor
