// SPDX-License-Identifier: MIT
// https_fetch's URL: https://HOST[:PORT][/PATH], HOST a name or an IP
// address ([::1] for IPv6). Nothing else is taken (no user, query kept in the
// path as it is). The host is also the name the server's certificate must
// carry.
#pragma once

#include <cstdint>
#include <optional>
#include <regex>
#include <string>

namespace https_fetch {

struct Url {
    std::string host;
    std::uint16_t port = 443;
    std::string path = "/";
};

inline std::optional<Url> parse_url(const std::string& text) {
    static const std::regex form(R"(^https://(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+)(?::([0-9]{1,5}))?(/[^ ]*)?$)");
    std::smatch m;
    if (!std::regex_match(text, m, form)) return std::nullopt;
    Url url{m[1], 443, m[3].matched ? std::string(m[3]) : "/"};
    if (url.host.starts_with('[')) url.host = url.host.substr(1, url.host.size() - 2);
    if (m[2].matched) {
        const int port = std::stoi(m[2]);
        if (port == 0 || port > 65535) return std::nullopt;
        url.port = static_cast<std::uint16_t>(port);
    }
    return url;
}

}  // namespace https_fetch
