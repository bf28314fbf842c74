// SPDX-License-Identifier: MIT
// http_hello's request parser (examples/12_http_hello/http_request_parser.hpp)
// over the fuzz seed corpus (fuzz/corpus/http/): every request there, valid
// or not, gives the steps its name promises ("ok_*": no error, "400_*": ends
// in error 400, ...), and the same steps when fed in two pieces cut at every
// byte boundary and when fed one byte at a time. No loop, no sockets: the
// parser is pure.
#include <boost/test/unit_test.hpp>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "../fuzz/http_replay.hpp"
#include "support/source_dir.hpp"

namespace fs = std::filesystem;

namespace {

struct Sample {
    std::string name;   // file name without .http
    std::string bytes;
};

std::vector<Sample> corpus() {
    fs::path dir = reactor_test::source_dir() / "fuzz" / "corpus" / "http";
    std::vector<Sample> out;
    for (const auto& entry : fs::directory_iterator(dir)) {
        std::ifstream in(entry.path(), std::ios::binary);
        out.push_back({entry.path().stem().string(), {std::istreambuf_iterator<char>(in), {}}});
    }
    return out;
}

std::string last_line(const std::string& transcript) {
    std::string t = transcript.substr(0, transcript.size() - 1);  // without the final '\n'
    return t.substr(t.rfind('\n') + 1);
}

}  // namespace

BOOST_AUTO_TEST_CASE(every_corpus_request_gives_what_its_name_says) {
    auto samples = corpus();
    BOOST_TEST_REQUIRE(samples.size() >= 40u);  // the corpus is there, not an empty directory
    for (const auto& s : samples) {
        std::string whole = http_replay::whole(s.bytes);
        std::string expected = s.name.substr(0, s.name.find('_'));
        if (expected == "ok")
            BOOST_TEST(whole.find("error") == std::string::npos, s.name << ":\n" << whole);
        else
            BOOST_TEST(last_line(whole) == "error " + expected, s.name << ":\n" << whole);
    }
}

BOOST_AUTO_TEST_CASE(every_split_gives_the_same_steps_as_whole) {
    for (const auto& s : corpus()) {
        std::string whole = http_replay::whole(s.bytes);
        for (std::size_t cut = 0; cut <= s.bytes.size(); ++cut)
            if (std::string two = http_replay::in_two(s.bytes, cut); two != whole)
                BOOST_ERROR(s.name << " cut at " << cut << ":\n" << two << "whole:\n" << whole);
        BOOST_TEST(http_replay::bytewise(s.bytes) == whole, s.name);
    }
}

BOOST_AUTO_TEST_CASE(pipelined_requests_and_their_bodies_are_found_where_they_start) {
    std::string pipelined =
        "GET /1 HTTP/1.1\r\nHost: x\r\n\r\n"
        "HEAD /2 HTTP/1.1\r\nHost: x\r\n\r\n"
        "POST /3 HTTP/1.1\r\nHost: x\r\nContent-Length: 22\r\n\r\nGET /smuggled HTTP/1.1"
        "GET /4 HTTP/1.0\r\n\r\n";
    BOOST_TEST(http_replay::whole(pipelined) ==
               "head HTTP/1.1 keep-alive length=0\ndone\n"
               "head HTTP/1.1 HEAD keep-alive length=0\ndone\n"
               "head HTTP/1.1 keep-alive length=22\ndone\n"
               "head HTTP/1.0 close length=0\ndone\n");
}

BOOST_AUTO_TEST_CASE(expect_100_continue_is_reported_with_the_head_and_the_body_skipped) {
    std::string request = "POST / HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\nabc";
    BOOST_TEST(http_replay::whole(request) == "head HTTP/1.1 keep-alive 100-continue length=3\ndone\n");
    // Before the body comes, the head alone is reported: the server says 100 Continue then.
    BOOST_TEST(http_replay::whole(request.substr(0, request.size() - 3)) ==
               "head HTTP/1.1 keep-alive 100-continue length=3\n");
    // HTTP/1.0 must ignore the expectation (RFC 9110 10.1.1).
    BOOST_TEST(http_replay::whole("POST / HTTP/1.0\r\nExpect: 100-continue\r\nContent-Length: 0\r\n\r\n") ==
               "head HTTP/1.0 close length=0\ndone\n");
}

BOOST_AUTO_TEST_CASE(a_bare_cr_or_lf_is_refused_as_soon_as_it_arrives) {
    // No need to wait for the end of a head that can never be valid.
    BOOST_TEST(http_replay::whole("GET / HTTP/1.1\n") == "error 400\n");
    BOOST_TEST(http_replay::whole("GET / HTTP/1.1\r\nHost: x\rY") == "error 400\n");
    BOOST_TEST(http_replay::whole("GET / HTTP/1.1\r\nHost: x\r") == "partial head\n");
}

BOOST_AUTO_TEST_CASE(the_head_limit_counts_the_whole_head_and_nothing_else) {
    http::Limits limits{32, 0};
    std::string head = "GET / HTTP/1.1\r\nHost: abcdefgh\r\n\r\n";  // 36 bytes
    BOOST_TEST(http_replay::replay(head, {}, limits) == "error 431\n");
    BOOST_TEST(http_replay::replay(head, {}, http::Limits{36, 0}) == "head HTTP/1.1 keep-alive length=0\ndone\n");
    // A partial head over the limit is refused without waiting for its end.
    BOOST_TEST(http_replay::replay(std::string(33, 'G'), {}, limits) == "error 431\n");
    BOOST_TEST(http_replay::replay("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n\r\n", {}, {64, 0}) ==
               "error 413\n");
}
