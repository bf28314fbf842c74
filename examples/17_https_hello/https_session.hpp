// SPDX-License-Identifier: MIT
// HttpsSession: one HTTPS connection of https_hello. Answers each request
// head with "Hello over TLS!" (HTTP/1.1, keep-alive), and closes with 400
// (no body support: a request that announces one), 431 (a head above 8 KiB)
// or when the client asks ("Connection: close"). Small on purpose: the
// strict HTTP/1.1 of step 12 is http_hello; this step is about TLS.
#pragma once

#include <cctype>
#include <string>
#include <string_view>

#include <reactor/tls/connection.hpp>

namespace https {

inline constexpr std::size_t kMaxHead = 8 * 1024;

// A header line of `head` has this name (case-insensitive).
inline bool has_header(std::string_view head, std::string_view name) {
    std::string lower;
    for (char c : head) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return lower.find("\r\n" + std::string(name) + ":") != std::string::npos;
}

inline bool asks_to_close(std::string_view head) {
    std::string lower;
    for (char c : head) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return lower.find("\r\nconnection: close") != std::string::npos;
}

class HttpsSession {
public:
    // Bytes the client sent: answers every complete request head in them.
    void on_data(reactor::tls::Connection& conn, std::string_view data) {
        pending_ += data;
        for (;;) {
            const auto end = pending_.find("\r\n\r\n");
            if (end == std::string::npos) {
                if (pending_.size() > kMaxHead) return refuse(conn, "431 Request Header Fields Too Large");
                return;
            }
            const std::string head = pending_.substr(0, end + 2);
            pending_.erase(0, end + 4);
            if (has_header(head, "content-length") || has_header(head, "transfer-encoding"))
                return refuse(conn, "400 Bad Request");
            ++requests_;
            const bool close = asks_to_close(head);
            conn.write(response("200 OK", "Hello over TLS!\n", close));
            if (close) return conn.close();  // close_notify once the answer is out
        }
    }
    long requests() const { return requests_; }

private:
    static std::string response(std::string_view status, std::string_view body, bool close) {
        return std::string("HTTP/1.1 ") + std::string(status) + "\r\nContent-Type: text/plain\r\nContent-Length: " +
               std::to_string(body.size()) + (close ? "\r\nConnection: close" : "") + "\r\n\r\n" + std::string(body);
    }
    void refuse(reactor::tls::Connection& conn, std::string_view status) {
        conn.write(response(status, "", true));
        conn.close();
        pending_.clear();
    }

    std::string pending_;
    long requests_ = 0;
};

}  // namespace https
