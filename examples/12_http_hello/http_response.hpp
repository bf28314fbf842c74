// SPDX-License-Identifier: MIT
// The responses http_hello sends, appended to an output string: the greeting,
// an interim 100 Continue, and the errors that end a connection.
#pragma once

#include <chrono>
#include <ctime>
#include <string>
#include <string_view>

#include <fmt/format.h>

namespace http {

inline constexpr std::string_view kBody = "Hello, world!";

// The Date header for `now` (the loop's Scheduler::wall_clock(), which a
// simulated host reads from its world: a run's bytes then do not depend on
// real time), rebuilt at most once a second per thread.
inline std::string_view http_date(std::chrono::system_clock::time_point now) {
    thread_local std::time_t cached_second = -1;
    thread_local char text[64];
    const std::time_t second = std::chrono::system_clock::to_time_t(now);
    if (second != cached_second) {
        cached_second = second;
        std::tm tm{};
        ::gmtime_r(&second, &tm);
        std::strftime(text, sizeof text, "%a, %d %b %Y %H:%M:%S GMT", &tm);
    }
    return text;
}

inline std::string_view reason(int status) {
    switch (status) {
        case 100: return "Continue";
        case 200: return "OK";
        case 400: return "Bad Request";
        case 408: return "Request Timeout";
        case 413: return "Content Too Large";
        case 417: return "Expectation Failed";
        case 431: return "Request Header Fields Too Large";
        case 501: return "Not Implemented";
        case 505: return "HTTP Version Not Supported";
        default: return "Unknown";
    }
}

// The greeting, in answer to a request: HTTP/1.0 keep-alive must be said,
// HTTP/1.1 keep-alive is the default; "close" is always said.
inline void append_hello(std::string& out, std::string_view date, bool http11, bool keep_alive, bool head_method) {
    out += fmt::format(
        "HTTP/1.1 200 OK\r\nServer: reactor-http_hello\r\nDate: {}\r\nContent-Type: text/plain\r\n"
        "Content-Length: {}\r\n{}\r\n{}",
        date, kBody.size(),
        keep_alive ? (http11 ? "" : "Connection: keep-alive\r\n") : "Connection: close\r\n",
        head_method ? "" : kBody);
}

// Tells a client that sent "Expect: 100-continue" to go on with the body.
inline void append_continue(std::string& out) { out += "HTTP/1.1 100 Continue\r\n\r\n"; }

// An error; the connection closes after it.
inline void append_error(std::string& out, std::string_view date, int status) {
    std::string body = fmt::format("{} {}\n", status, reason(status));
    out += fmt::format("HTTP/1.1 {} {}\r\nServer: reactor-http_hello\r\nDate: {}\r\nContent-Type: text/plain\r\n"
                       "Content-Length: {}\r\nConnection: close\r\n\r\n{}",
                       status, reason(status), date, body.size(), body);
}

}  // namespace http
