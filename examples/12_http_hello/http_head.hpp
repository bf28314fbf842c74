// SPDX-License-Identifier: MIT
// http::parse_head: what one complete HTTP/1.1 request head says, or the
// status that refuses it (RFC 9112). Strict on purpose: a server behind a
// proxy must never read the framing of a request differently from the proxy
// (request smuggling), so every ambiguity is refused rather than guessed at.
// Pure functions over a string_view; nothing is allocated or kept.
#pragma once

#include <cstddef>
#include <string_view>

#include "http_syntax.hpp"

namespace http {

// The parts of a head the server acts on.
struct Request {
    bool http11 = true;
    bool head_method = false;      // HEAD: answer without a body
    bool keep_alive = true;        // HTTP/1.1 default; HTTP/1.0 only with "Connection: keep-alive"
    bool expect_continue = false;  // HTTP/1.1 "Expect: 100-continue" (HTTP/1.0 must ignore it)
    std::size_t content_length = 0;
};

// "METHOD SP target SP HTTP/d.d", single spaces. 0, 400 or 505.
inline int parse_request_line(std::string_view line, Request& r) {
    std::size_t sp1 = line.find(' ');
    std::size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
    if (sp2 == std::string_view::npos) return 400;
    std::string_view method = line.substr(0, sp1), target = line.substr(sp1 + 1, sp2 - sp1 - 1),
                     version = line.substr(sp2 + 1);
    if (!is_token(method) || target.empty()) return 400;
    for (char c : target)
        if (c <= ' ' || c >= 127) return 400;
    auto digit = [](char c) { return c >= '0' && c <= '9'; };
    if (version.size() != 8 || !version.starts_with("HTTP/") || !digit(version[5]) || version[6] != '.' ||
        !digit(version[7]))
        return 400;
    if (version != "HTTP/1.1" && version != "HTTP/1.0") return 505;
    r.http11 = version == "HTTP/1.1";
    r.head_method = method == "HEAD";
    return 0;
}

// Parses `head`: the request line and field lines, each ending in CRLF, then
// the empty line. RequestParser has already refused any CR or LF that is not
// part of a CRLF. Returns 0 and fills `r`, or the status to answer:
//   400 malformed line, leading whitespace or obs-fold, a control character in
//       a value, HTTP/1.1 without Host, two Host or two Content-Length lines
//       (even with equal values), a Content-Length that is not 1-18 digits
//   417 an Expect other than 100-continue    505 a version other than 1.0/1.1
//   501 Transfer-Encoding: this server implements no transfer coding (not
//       even chunked), and RFC 9112 6.1 names 501 for one it does not
//       understand; the connection then closes, so the body is never read.
inline int parse_head(std::string_view head, Request& r) {
    r = Request{};
    std::size_t eol = head.find("\r\n");
    if (eol == std::string_view::npos) return 400;
    if (int status = parse_request_line(head.substr(0, eol), r)) return status;
    head.remove_prefix(eol + 2);
    bool host = false, length = false, chunked = false, close = false, keep_alive = false;
    while ((eol = head.find("\r\n")) != 0) {  // up to the empty line
        if (eol == std::string_view::npos) return 400;
        std::string_view line = head.substr(0, eol);
        head.remove_prefix(eol + 2);
        std::size_t colon = line.find(':');
        if (colon == std::string_view::npos || !is_token(line.substr(0, colon))) return 400;
        std::string_view name = line.substr(0, colon), value = trim_ows(line.substr(colon + 1));
        if (!is_field_value(value)) return 400;
        if (iequals(name, "Host")) {
            if (host || value.find_first_of(" \t") != std::string_view::npos) return 400;
            host = true;
        } else if (iequals(name, "Content-Length")) {
            if (length || value.empty() || value.size() > 18) return 400;
            for (char c : value) {
                if (c < '0' || c > '9') return 400;
                r.content_length = r.content_length * 10 + static_cast<std::size_t>(c - '0');
            }
            length = true;
        } else if (iequals(name, "Transfer-Encoding")) {
            chunked = true;
        } else if (iequals(name, "Expect")) {
            if (!iequals(value, "100-continue")) return 417;
            r.expect_continue = r.http11;
        } else if (iequals(name, "Connection")) {
            close = close || has_option(value, "close");
            keep_alive = keep_alive || has_option(value, "keep-alive");
        }
    }
    if (r.http11 && !host) return 400;
    if (chunked) return 501;
    r.keep_alive = !close && (r.http11 || keep_alive);
    return 0;
}

}  // namespace http
