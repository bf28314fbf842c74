// SPDX-License-Identifier: MIT
// The name a server's lifetime gives the signal that stopped it, in its
// reports ("SIGINT: stopped accepting ..."): ServerLifetime and
// GroupServerLifetime alike.
#pragma once

#include <csignal>
#include <string_view>

namespace reactor::detail {

inline std::string_view stop_signal_name(int signo) noexcept {
    switch (signo) {
        case SIGINT: return "SIGINT";
        case SIGTERM: return "SIGTERM";
        case SIGHUP: return "SIGHUP";
        case SIGQUIT: return "SIGQUIT";
        case SIGUSR1: return "SIGUSR1";
        case SIGUSR2: return "SIGUSR2";
        default: return "a stop signal";
    }
}

}  // namespace reactor::detail
