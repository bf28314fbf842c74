// SPDX-License-Identifier: MIT
// HttpSession: one connection of http_hello, the component beside
// http_hello.cpp. It turns its RequestParser's steps into responses (all
// those one read produced go out in one write) and ends the connection when
// a ConnectionTimeouts deadline passes: a late head or body gets 408, an
// idle connection (or one that never sent a byte) nothing; all are closed at
// once. Answers never pile up beyond the connection's high-water mark: see
// serve().
//
// Expect: 100-continue is answered with "100 Continue" as soon as its head is
// read (unless the head is refused, e.g. 413), then the body is read and
// dropped, and only then comes the answer, so the next request on the
// connection is found where it starts.
//
// Over a plain reactor::Connection (HTTP) or a reactor::tls::Connection
// (HTTPS, http_hello --tls-cert): both have the calls used here, so the
// session is a template on the connection type rather than an interface.
// Under TLS, close() and write_eof() send close_notify first.
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

// The loop a connection runs on: a TLS connection's is its transport's.
template <class Conn>
reactor::Scheduler& scheduler_of(Conn& c) {
    if constexpr (requires { c.transport(); })
        return c.transport().scheduler();
    else
        return c.scheduler();
}

template <class Conn = reactor::Connection>
class HttpSession {
public:
    HttpSession(Conn& c, const Limits& limits, const Timeouts& timeouts)
        : conn_(c), parser_(limits), timeouts_(scheduler_of(c), timeouts, [this](auto expired) { timed_out(expired); }) {}
    HttpSession(const HttpSession&) = delete;
    HttpSession& operator=(const HttpSession&) = delete;

    // The bytes one read brought; `out` is scratch space for the responses.
    void on_data(std::string_view data, std::string& out) {
        if (lingering_) return;
        timeouts_.received();
        parser_.feed(data);
        serve(out);
    }

    // The connection's output fell to its low-water mark (its high-water
    // callback paused reading): answer the requests left waiting, and read
    // again once they are all answered.
    void on_low_water(std::string& out) {
        if (waiting_for_output_ && !lingering_) return serve(out);
        conn_.resume_reading();
    }

    void closed() {
        timeouts_.cancel();
        linger_timer_.cancel();
    }

private:
    // The Date header: the loop's calendar (a simulated host's is its world's).
    std::string_view date() { return http_date(scheduler_of(conn_).wall_clock()); }

    enum class Next {
        need_more,  // every request read so far is answered
        batch_full, // kBatch bytes of answers are ready; more requests may wait
        close,      // the connection must end after these answers
    };

    // Answers what the parser holds, one batch at a time. A client that
    // pipelines requests and reads no answers must not grow our output
    // without bound (one read of small requests is thousands of answers):
    // once the output is above the connection's high-water mark (where
    // http_hello's high-water callback has paused reading), the rest waits
    // in the parser until on_low_water(), and reading resumes only when
    // every request read so far is answered and the output is below the
    // mark (the last batch may be what crossed it: then the high-water
    // callback's pause stands until the fall to low water).
    void serve(std::string& out) {
        for (;;) {
            out.clear();
            Next next = answer(out);
            if (!conn_.write(out)) return;  // closed meanwhile (reset, or a high-water abort)
            if (next == Next::close) return linger();
            if (conn_.above_high_water()) {
                waiting_for_output_ = true;
                conn_.pause_reading();
                return;
            }
            if (next == Next::need_more) break;
        }
        if (waiting_for_output_) {
            waiting_for_output_ = false;
            conn_.resume_reading();
        }
        if (parser_.in_head()) timeouts_.head_begun();
        if (parser_.in_body()) timeouts_.body_begun();
    }

    // Appends the answers to the steps the input allows, up to about kBatch bytes.
    Next answer(std::string& out) {
        const Request& r = parser_.request();
        while (out.size() < kBatch) {
            switch (parser_.next()) {
                case RequestParser::Step::need_more: return Next::need_more;
                case RequestParser::Step::head:
                    timeouts_.head_complete();
                    if (r.expect_continue && r.content_length > 0) append_continue(out);
                    break;
                case RequestParser::Step::done:
                    timeouts_.body_complete();
                    append_hello(out, date(), r.http11, r.keep_alive, r.head_method);
                    if (!r.keep_alive) return Next::close;
                    break;
                case RequestParser::Step::error: append_error(out, date(), parser_.error_status()); return Next::close;
            }
        }
        return Next::batch_full;
    }

    // The fd is freed now, not after a lingering close: a client this slow
    // has had its time (if it is still sending, the reset its bytes provoke
    // may destroy the 408 before it reads it). close() sends what the kernel
    // took; a client that stopped reading our output cannot be waited for.
    void timed_out(ConnectionTimeouts::Expired expired) {
        const bool late_head = expired == ConnectionTimeouts::Expired::header && parser_.in_head();
        if (late_head || expired == ConnectionTimeouts::Expired::body) {
            std::string out;
            append_error(out, date(), 408);
            conn_.write(out);
        }
        if (conn_.buffered() == 0)
            conn_.close();
        else
            conn_.abort();
    }

    // After the last response: our side is shut down once the output is
    // flushed, and what the client still sends is read and dropped until its
    // EOF closes the connection (a "lingering close": closing with unread
    // input would send a reset, which can destroy the responses before the
    // client reads them). A timer bounds it from when the responses have all
    // gone to the kernel, as nginx's lingering close starts once the
    // response is sent: bounded from the last request instead, it reset a
    // client still reading a long pipelined backlog, which lost the end of
    // it (found by tests/test_sim_hunt_web.cpp's hogs). While output is
    // buffered the timer looks again; a client that stopped reading it is
    // the write deadline's to end.
    void linger() {
        lingering_ = true;
        timeouts_.cancel();
        conn_.write_eof();
        conn_.resume_reading();  // if the output's water mark paused it: the client's EOF must be seen
        linger_after_flush(false);
    }
    void linger_after_flush(bool flushed_before) {
        linger_timer_ = scheduler_of(conn_).call_later(kLingerTime, [this, flushed_before] {
            const bool flushed = conn_.buffered() == 0;
            if (flushed && flushed_before) return conn_.abort();  // a whole kLingerTime since the flush
            linger_after_flush(flushed);
        });
    }

    static constexpr std::chrono::seconds kLingerTime{2};
    // Answers appended before the output's water mark is looked at: a few
    // hundred pipelined greetings, so a backlog ends at most this much above
    // the high-water mark.
    static constexpr std::size_t kBatch = 16 * 1024;

    Conn& conn_;
    RequestParser parser_;
    ConnectionTimeouts timeouts_;
    reactor::Handle linger_timer_;
    bool lingering_ = false;
    bool waiting_for_output_ = false;  // requests wait in the parser until the output drains
};

}  // namespace http
