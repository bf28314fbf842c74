// SPDX-License-Identifier: MIT
// The suites' regular expressions (text_match.hpp): the one translation unit
// of the tests that includes <regex>.
#include "support/text_match.hpp"

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <regex>

namespace reactor_test {

namespace {

// Each pattern compiled once and kept: some suites poll a program's output
// with the same pattern until it appears. A std::regex is safe to use from
// several threads at once; only the map needs the lock.
const std::regex& compiled(std::string_view pattern) {
    static std::mutex mutex;
    static std::map<std::string, std::unique_ptr<const std::regex>, std::less<>> cache;
    std::lock_guard lock(mutex);
    auto it = cache.find(pattern);
    if (it == cache.end())
        it = cache.emplace(std::string(pattern), std::make_unique<const std::regex>(pattern.begin(), pattern.end()))
                 .first;
    return *it->second;
}

using Match = std::match_results<std::string_view::const_iterator>;

MatchGroups groups_of(const Match& m) {
    MatchGroups groups;
    groups.reserve(m.size());
    for (const auto& sub : m) groups.push_back(sub.str());
    return groups;
}

}  // namespace

bool full_match(std::string_view text, std::string_view pattern) {
    return std::regex_match(text.begin(), text.end(), compiled(pattern));
}

bool partial_match(std::string_view text, std::string_view pattern) {
    return std::regex_search(text.begin(), text.end(), compiled(pattern));
}

std::optional<MatchGroups> full_match_groups(std::string_view text, std::string_view pattern) {
    Match m;
    if (!std::regex_match(text.begin(), text.end(), m, compiled(pattern))) return std::nullopt;
    return groups_of(m);
}

std::optional<MatchGroups> partial_match_groups(std::string_view text, std::string_view pattern) {
    Match m;
    if (!std::regex_search(text.begin(), text.end(), m, compiled(pattern))) return std::nullopt;
    return groups_of(m);
}

std::vector<MatchGroups> all_matches(std::string_view text, std::string_view pattern) {
    std::vector<MatchGroups> found;
    using Iterator = std::regex_iterator<std::string_view::const_iterator>;
    for (Iterator it(text.begin(), text.end(), compiled(pattern)), end; it != end; ++it)
        found.push_back(groups_of(*it));
    return found;
}

}  // namespace reactor_test
