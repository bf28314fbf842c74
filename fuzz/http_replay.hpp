// SPDX-License-Identifier: MIT
// What http::RequestParser makes of some input fed in given pieces, as text:
// one line per step ("head HTTP/1.1 keep-alive 100-continue length=5",
// "done", "error 400"), then "partial head" if a head was left unfinished.
// need_more is left out: where it comes depends on the pieces, and nothing
// else may. Shared by the fuzz target and tests/test_http_parser.cpp.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "../examples/12_http_hello/http_request_parser.hpp"

namespace http_replay {

// The limits both use: small, so the 431 and 413 paths are easy to reach.
inline constexpr http::Limits kLimits{1024, 65536};

inline std::string describe(const http::Request& r) {
    std::string s = r.http11 ? "head HTTP/1.1" : "head HTTP/1.0";
    if (r.head_method) s += " HEAD";
    s += r.keep_alive ? " keep-alive" : " close";
    if (r.expect_continue) s += " 100-continue";
    return s + " length=" + std::to_string(r.content_length);
}

// Feeds `input` cut at each offset of `cuts` (ascending, each at most
// input.size()), calling next() until need_more after every piece.
inline std::string replay(std::string_view input, const std::vector<std::size_t>& cuts,
                          const http::Limits& limits = kLimits) {
    http::RequestParser parser(limits);
    std::string out;
    std::size_t from = 0;
    for (std::size_t i = 0; i <= cuts.size(); ++i) {
        std::size_t to = i < cuts.size() ? cuts[i] : input.size();
        parser.feed(input.substr(from, to - from));
        from = to;
        for (;;) {
            auto step = parser.next();
            if (step == http::RequestParser::Step::need_more) break;
            if (step == http::RequestParser::Step::head) out += describe(parser.request()) + "\n";
            if (step == http::RequestParser::Step::done) out += "done\n";
            if (step == http::RequestParser::Step::error) {
                out += "error " + std::to_string(parser.error_status()) + "\n";
                return out;  // it stays in error: nothing more to see
            }
        }
    }
    if (parser.in_head()) out += "partial head\n";
    return out;
}

inline std::string whole(std::string_view input) { return replay(input, {}); }
inline std::string in_two(std::string_view input, std::size_t cut) { return replay(input, {cut}); }
inline std::string bytewise(std::string_view input) {
    std::vector<std::size_t> cuts;
    for (std::size_t i = 1; i < input.size(); ++i) cuts.push_back(i);
    return replay(input, cuts);
}

}  // namespace http_replay
