// SPDX-License-Identifier: MIT
// Regular expressions for the suites, compiled once per build: std::regex
// (ECMAScript grammar, as std::regex's default) lives in text_match.cpp, in
// the reactor_test_main library every suite links, so that no suite includes
// <regex>. One regex_search in a translation unit costs it about 4 s of -O2
// (bench/results/build.md); these functions cost a suite a call.
//
// RE2's names: a full match is the whole text (std::regex_match), a partial
// match is anywhere in it (std::regex_search).
//   if (auto m = reactor_test::full_match_groups(line, R"(listening on 127\.0\.0\.1:(\d+) \((\w+)\))"))
//       port = std::stoi((*m)[1]);
//   BOOST_TEST(reactor_test::partial_match(head, "Content-Length: \\d+"));
// A pattern is compiled on its first use and kept (a pattern that does not
// compile throws std::regex_error, a std::runtime_error, as std::regex does).
// Safe to call from several threads.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace reactor_test {

// One match's text: [0] the whole match, [i] group i ("" for a group that
// took no part in it).
using MatchGroups = std::vector<std::string>;

// Does `pattern` match the whole of `text`?
bool full_match(std::string_view text, std::string_view pattern);

// Does `pattern` match somewhere in `text`?
bool partial_match(std::string_view text, std::string_view pattern);

// The groups of `pattern` matching the whole of `text`; nullopt if it does not.
std::optional<MatchGroups> full_match_groups(std::string_view text, std::string_view pattern);

// The groups of the first (leftmost) match of `pattern` in `text`; nullopt if none.
std::optional<MatchGroups> partial_match_groups(std::string_view text, std::string_view pattern);

// Every match of `pattern` in `text`, left to right, none overlapping (as
// std::sregex_iterator finds them).
std::vector<MatchGroups> all_matches(std::string_view text, std::string_view pattern);

}  // namespace reactor_test
