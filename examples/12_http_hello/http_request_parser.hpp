// SPDX-License-Identifier: MIT
// http::RequestParser: cuts one connection's input into HTTP/1.1 requests.
// It knows nothing of sockets or time: feed() the bytes as they arrive, in
// pieces of any size, then call next() until it says need_more. The same bytes
// give the same steps however they are split (tests/test_http_parser.cpp and
// the fuzz target in fuzz/ check exactly that). Bodies (Content-Length only)
// are skipped as they arrive, never stored. One per connection.
//
// Line ends are CRLF and nothing else: a CR not followed by LF, or an LF not
// preceded by CR, is refused (400) as soon as it arrives. RFC 9112 2.2 allows
// accepting a bare LF, but a server that splits lines where a proxy in front
// does not is how requests get smuggled. Nor are empty lines before a request
// skipped (RFC 9112 2.2's SHOULD): they are a malformed request line.
#pragma once

#include <algorithm>
#include <cstddef>
#include <string>
#include <string_view>

#include "http_head.hpp"

namespace http {

struct Limits {
    std::size_t max_head;  // request line + fields + empty line, in bytes; 431 beyond
    std::size_t max_body;  // Content-Length; 413 beyond
};

class RequestParser {
public:
    enum class Step {
        need_more,  // every byte fed so far is consumed
        head,       // a request head is complete (request()); its body, if any, follows
        done,       // that request's body is read too (or it had none): answer it
        error,      // refused (error_status()): answer that and close; next() stays here
    };

    explicit RequestParser(const Limits& limits) : limits_(limits) {}

    void feed(std::string_view data) {
        if (state_ != State::error) in_.append(data);
    }

    Step next() {
        if (state_ == State::error) return Step::error;
        if (state_ == State::body) {
            std::size_t n = std::min(body_left_, in_.size() - pos_);
            body_left_ -= n;
            pos_ += n;
            if (body_left_ > 0) return consumed();
            state_ = State::head;
            return Step::done;
        }
        // Scan on from where the last call stopped, so a head arriving byte
        // by byte costs linear time.
        for (std::size_t i = pos_ + scanned_; i < in_.size(); ++i) {
            if (i - pos_ >= limits_.max_head) return fail(431);
            bool after_cr = i > pos_ && in_[i - 1] == '\r';
            if (after_cr != (in_[i] == '\n')) return fail(400);  // bare CR or bare LF
            if (in_[i] == '\n' && i - pos_ >= 3 && in_[i - 2] == '\n') return end_of_head(i + 1);
        }
        scanned_ = in_.size() - pos_;
        return consumed();
    }

    const Request& request() const { return request_; }  // after Step::head, until the next head
    int error_status() const { return status_; }          // after Step::error: 400, 413, 417, 431, 501 or 505
    // Part of a head has arrived, not yet all of it.
    bool in_head() const { return state_ == State::head && in_.size() > pos_; }
    // A head is read and some of its body is still to come.
    bool in_body() const { return state_ == State::body && body_left_ > 0; }

private:
    enum class State { head, body, error };

    Step end_of_head(std::size_t end) {
        std::string_view head = std::string_view(in_).substr(pos_, end - pos_);
        if (int status = parse_head(head, request_)) return fail(status);
        if (request_.content_length > limits_.max_body) return fail(413);
        pos_ = end;
        scanned_ = 0;
        body_left_ = request_.content_length;
        state_ = State::body;
        return Step::head;
    }

    // Drops what is parsed, keeping the partial head if any.
    Step consumed() {
        in_.erase(0, pos_);
        pos_ = 0;
        return Step::need_more;
    }

    Step fail(int status) {
        status_ = status;
        state_ = State::error;
        in_ = std::string();
        pos_ = 0;
        return Step::error;
    }

    Limits limits_;
    State state_ = State::head;
    std::string in_;
    std::size_t pos_ = 0;        // in_ is parsed up to here
    std::size_t scanned_ = 0;    // bytes of the current head already checked
    std::size_t body_left_ = 0;  // body bytes still to skip
    Request request_;
    int status_ = 0;
};

}  // namespace http
