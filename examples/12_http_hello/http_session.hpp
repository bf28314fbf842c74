// HttpSession: one HTTP/1.1 connection's parser, the component beside
// http_hello.cpp. It knows nothing of sockets: feed() takes the bytes a read
// brought and appends the responses to send, answering every request with
// "Hello, world!"; linger() is the one place it touches the connection.
//
// Supported: keep-alive (HTTP/1.1 default; HTTP/1.0 with "Connection:
// keep-alive"), pipelining (requests already received are answered in order),
// Content-Length request bodies (read and ignored), HEAD. Refused, then the
// connection closes:
//   400 malformed request line, header line or Content-Length
//   413 body larger than max_body          431 head larger than max_head
//   505 HTTP version other than 1.0/1.1    501 Transfer-Encoding (no chunked bodies)
// Loop thread only.
#pragma once

#include <algorithm>
#include <cctype>
#include <chrono>
#include <ctime>
#include <string>
#include <string_view>

#include <fmt/format.h>
#include <reactor/scheduler.hpp>
#include <reactor/net/connection.hpp>

namespace http {

using reactor::Connection;

inline constexpr std::string_view kBody = "Hello, world!";

struct Limits {
    std::size_t max_head;
    std::size_t max_body;
};

// The Date header, rebuilt at most once a second.
inline std::string_view http_date() {
    static std::time_t cached_second = 0;
    static char text[64];
    std::time_t now = std::time(nullptr);
    if (now != cached_second) {
        cached_second = now;
        std::tm tm{};
        ::gmtime_r(&now, &tm);
        std::strftime(text, sizeof text, "%a, %d %b %Y %H:%M:%S GMT", &tm);
    }
    return text;
}

inline bool iequals(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
        if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) return false;
    return true;
}

inline std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
    return s;
}

inline bool is_token(std::string_view s) {
    if (s.empty()) return false;
    for (char c : s)
        if (c <= ' ' || c >= 127 || std::string_view("()<>@,;:\\\"/[]?={}").find(c) != std::string_view::npos) return false;
    return true;
}

// One HTTP connection: an input buffer and a parser over it.
class HttpSession {
public:
    explicit HttpSession(const Limits& limits) : limits_(limits) {}

    // After the last response: our side is shut down, and what the client
    // still sends is read and dropped until it closes (a "lingering close":
    // closing with unread input would send RST, which can destroy the
    // response before the client reads it). A timer bounds the wait.
    bool lingering() const { return lingered_; }
    void linger(reactor::Scheduler& sched, Connection& c) {
        lingered_ = true;
        c.write_eof();
        linger_timer_ = sched.call_later(kLingerTime, [conn = c.shared_from_this()] { conn->abort(); });
    }
    void closed() { linger_timer_.cancel(); }

    // Consumes what it can from the bytes received, appending responses to
    // `out`. Returns false when the connection must close after `out`.
    bool feed(std::string_view data, std::string& out) {
        in_.append(data);
        for (;;) {
            if (body_left_ > 0) {  // skipping a request body
                std::size_t n = std::min(body_left_, in_.size() - pos_);
                body_left_ -= n;
                pos_ += n;
                if (body_left_ > 0) break;
            }
            std::string_view rest = std::string_view(in_).substr(pos_);
            std::size_t end = rest.find("\r\n\r\n");
            std::size_t sep = 4;
            if (std::size_t lf = rest.find("\n\n"); lf < end) end = lf, sep = 2;  // tolerate bare LF
            if (end == std::string_view::npos) {
                if (rest.size() > limits_.max_head) return error(out, 431, "Request Header Fields Too Large");
                break;
            }
            if (end + sep > limits_.max_head) return error(out, 431, "Request Header Fields Too Large");
            pos_ += end + sep;
            if (!handle(rest.substr(0, end), out)) return false;
        }
        in_.erase(0, pos_);  // keep only the unparsed tail
        pos_ = 0;
        return true;
    }

private:
    bool handle(std::string_view head, std::string& out) {
        std::size_t eol = head.find('\n');
        std::string_view request_line = trim(head.substr(0, eol));
        std::string_view headers = eol == std::string_view::npos ? std::string_view() : head.substr(eol + 1);

        // METHOD SP request-target SP HTTP-version
        std::size_t sp1 = request_line.find(' ');
        std::size_t sp2 = sp1 == std::string_view::npos ? sp1 : request_line.find(' ', sp1 + 1);
        if (sp2 == std::string_view::npos || request_line.find(' ', sp2 + 1) != std::string_view::npos)
            return error(out, 400, "Bad Request");
        std::string_view method = request_line.substr(0, sp1);
        std::string_view target = request_line.substr(sp1 + 1, sp2 - sp1 - 1);
        std::string_view version = request_line.substr(sp2 + 1);
        if (!is_token(method) || target.empty() || !version.starts_with("HTTP/") || version.size() != 8 ||
            version[6] != '.')
            return error(out, 400, "Bad Request");
        if (version != "HTTP/1.1" && version != "HTTP/1.0") return error(out, 505, "HTTP Version Not Supported");

        bool http11 = version == "HTTP/1.1";
        bool keep_alive = http11;
        bool has_length = false;
        std::size_t length = 0;
        while (!headers.empty()) {
            std::size_t nl = headers.find('\n');
            std::string_view line = trim(headers.substr(0, nl));
            headers = nl == std::string_view::npos ? std::string_view() : headers.substr(nl + 1);
            if (line.empty()) continue;
            std::size_t colon = line.find(':');
            if (colon == std::string_view::npos || !is_token(line.substr(0, colon))) return error(out, 400, "Bad Request");
            std::string_view name = line.substr(0, colon);
            std::string_view value = trim(line.substr(colon + 1));
            if (iequals(name, "Connection")) {
                if (iequals(value, "close")) keep_alive = false;
                if (iequals(value, "keep-alive")) keep_alive = true;
            } else if (iequals(name, "Content-Length")) {
                std::size_t n = 0;
                if (value.empty() || value.size() > 18) return error(out, 400, "Bad Request");
                for (char c : value) {
                    if (c < '0' || c > '9') return error(out, 400, "Bad Request");
                    n = n * 10 + static_cast<std::size_t>(c - '0');
                }
                if (has_length && n != length) return error(out, 400, "Bad Request");
                has_length = true;
                length = n;
            } else if (iequals(name, "Transfer-Encoding")) {
                return error(out, 501, "Not Implemented");
            }
        }
        if (length > limits_.max_body) return error(out, 413, "Content Too Large");
        body_left_ = length;

        bool head_only = method == "HEAD";
        out += fmt::format(
            "HTTP/1.1 200 OK\r\nServer: reactor-http_hello\r\nDate: {}\r\nContent-Type: text/plain\r\n"
            "Content-Length: {}\r\n{}\r\n{}",
            http_date(), kBody.size(),
            keep_alive ? (http11 ? "" : "Connection: keep-alive\r\n") : "Connection: close\r\n",
            head_only ? "" : kBody);
        return keep_alive;
    }

    bool error(std::string& out, int status, std::string_view reason) {
        std::string body = fmt::format("{} {}\n", status, reason);
        out += fmt::format("HTTP/1.1 {} {}\r\nServer: reactor-http_hello\r\nDate: {}\r\nContent-Type: text/plain\r\n"
                           "Content-Length: {}\r\nConnection: close\r\n\r\n{}",
                           status, reason, http_date(), body.size(), body);
        return false;
    }

    static constexpr std::chrono::seconds kLingerTime{2};

    const Limits& limits_;
    reactor::Handle linger_timer_;
    bool lingered_ = false;
    std::string in_;
    std::size_t pos_ = 0;        // parsed up to here
    std::size_t body_left_ = 0;  // request body bytes still to skip
};

}  // namespace http
