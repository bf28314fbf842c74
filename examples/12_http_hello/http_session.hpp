// HttpSession: one connection of http_hello, the component beside
// http_hello.cpp. It turns its RequestParser's steps into responses (all
// those one read produced go out in one write) and ends the connection when
// a ConnectionTimeouts deadline passes: a late head gets 408, an idle
// connection (or one that never sent a byte) nothing; both are closed at once.
//
// Expect: 100-continue is answered with "100 Continue" as soon as its head is
// read (unless the head is refused, e.g. 413), then the body is read and
// dropped, and only then comes the answer, so the next request on the
// connection is found where it starts.
//
// Loop thread only. The connection must outlive the session: http_hello
// destroys it from the connection's close callback, after closed().
#pragma once

#include <chrono>
#include <string>

#include <reactor/net/connection.hpp>
#include <reactor/scheduler.hpp>

#include "http_request_parser.hpp"
#include "http_response.hpp"
#include "http_timeouts.hpp"

namespace http {

class HttpSession {
public:
    HttpSession(reactor::Connection& c, const Limits& limits, const Timeouts& timeouts)
        : conn_(c), parser_(limits), timeouts_(c.scheduler(), timeouts, [this](auto expired) { timed_out(expired); }) {}
    HttpSession(const HttpSession&) = delete;
    HttpSession& operator=(const HttpSession&) = delete;

    // The bytes one read brought; `out` is scratch space for the responses.
    void on_data(std::string_view data, std::string& out) {
        if (lingering_) return;
        timeouts_.received();
        parser_.feed(data);
        out.clear();
        bool keep = answer(out);
        conn_.write(out);
        if (!keep) return linger();
        if (parser_.in_head()) timeouts_.head_begun();
    }

    void closed() {
        timeouts_.cancel();
        linger_timer_.cancel();
    }

private:
    // Appends the answers to every step the input allows; false once the
    // connection must end after them.
    bool answer(std::string& out) {
        const Request& r = parser_.request();
        for (;;) {
            switch (parser_.next()) {
                case RequestParser::Step::need_more: return true;
                case RequestParser::Step::head:
                    timeouts_.head_complete();
                    if (r.expect_continue && r.content_length > 0) append_continue(out);
                    break;
                case RequestParser::Step::done:
                    append_hello(out, r.http11, r.keep_alive, r.head_method);
                    if (!r.keep_alive) return false;
                    break;
                case RequestParser::Step::error: append_error(out, parser_.error_status()); return false;
            }
        }
    }

    // The fd is freed now, not after a lingering close: a client this slow
    // has had its time (if it is still sending, the reset its bytes provoke
    // may destroy the 408 before it reads it). close() sends what the kernel
    // took; a client that stopped reading our output cannot be waited for.
    void timed_out(ConnectionTimeouts::Expired expired) {
        if (expired == ConnectionTimeouts::Expired::header && parser_.in_head()) {
            std::string out;
            append_error(out, 408);
            conn_.write(out);
        }
        if (conn_.buffered() == 0)
            conn_.close();
        else
            conn_.abort();
    }

    // After the last response: our side is shut down, and what the client
    // still sends is read and dropped until its EOF closes the connection (a
    // "lingering close": closing with unread input would send a reset, which
    // can destroy the response before the client reads it). A timer bounds it.
    void linger() {
        lingering_ = true;
        timeouts_.cancel();
        conn_.write_eof();
        linger_timer_ = conn_.scheduler().call_later(kLingerTime, [this] { conn_.abort(); });
    }

    static constexpr std::chrono::seconds kLingerTime{2};

    reactor::Connection& conn_;
    RequestParser parser_;
    ConnectionTimeouts timeouts_;
    reactor::Handle linger_timer_;
    bool lingering_ = false;
};

}  // namespace http
