// SPDX-License-Identifier: MIT
// libFuzzer target for http_hello's request parser
// (examples/12_http_hello/http_request_parser.hpp and http_head.hpp). Build
// and run it with fuzz/run.sh. Besides crashes, leaks and undefined behaviour
// (ASan + UBSan), it checks the parser's promise: the same bytes give the same
// steps however they are split. Any input whose steps differ when fed whole,
// in two pieces, or one byte at a time aborts with the three transcripts.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "http_replay.hpp"

namespace {

// Inputs above this are fed whole and in two pieces only: one next() loop per
// byte would slow the search more than long inputs are worth.
constexpr std::size_t kBytewiseMax = 4096;

void mismatch(std::string_view input, const std::string& whole, const std::string& other, const char* how) {
    std::fprintf(stderr, "http parser: fed %s, the steps differ from fed whole (input %zu bytes)\nwhole:\n%s%s:\n%s",
                 how, input.size(), whole.c_str(), how, other.c_str());
    std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::string_view input(reinterpret_cast<const char*>(data), size);
    std::string whole = http_replay::whole(input);
    // A cut that depends on the input, so the search can move it.
    std::size_t cut = size == 0 ? 0 : (data[0] * 257u + data[size - 1]) % (size + 1);
    if (std::string two = http_replay::in_two(input, cut); two != whole) mismatch(input, whole, two, "in two pieces");
    if (size <= kBytewiseMax)
        if (std::string bytes = http_replay::bytewise(input); bytes != whole)
            mismatch(input, whole, bytes, "one byte at a time");
    return 0;
}
