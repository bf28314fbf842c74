// SPDX-License-Identifier: MIT
// The lexical rules of HTTP fields (RFC 9110 5 and 5.6) that http_head.hpp
// checks: tokens, field values, optional whitespace, comma-separated lists.
// ASCII only, locale-free; pure functions over string_views.
#pragma once

#include <array>
#include <cstddef>
#include <string_view>

namespace http {

inline bool iequals(std::string_view a, std::string_view b) {
    auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; };
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
        if (lower(a[i]) != lower(b[i])) return false;
    return true;
}

// Optional whitespace (SP, HTAB) off both ends.
inline std::string_view trim_ows(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
    return s;
}

// RFC 9110 5.6.2: tchar, as a table (one load per byte).
inline constexpr std::array<bool, 256> kTokenChars = [] {
    std::array<bool, 256> table{};
    for (int c = '0'; c <= '9'; ++c) table[c] = true;
    for (int c = 'a'; c <= 'z'; ++c) table[c] = table[c - 'a' + 'A'] = true;
    for (char c : std::string_view("!#$%&'*+-.^_`|~")) table[static_cast<unsigned char>(c)] = true;
    return table;
}();

// A token: methods and field names. Whitespace is not a tchar, so a line
// starting with SP or HTAB (obs-fold, or whitespace before the first field)
// and "Name :" both fail here.
inline bool is_token(std::string_view s) {
    if (s.empty()) return false;
    for (char c : s)
        if (!kTokenChars[static_cast<unsigned char>(c)]) return false;
    return true;
}

// A field value may hold visible characters, SP, HTAB and obs-text; any other
// control (NUL, a CR, ...) is refused, never passed on or replaced.
inline bool is_field_value(std::string_view s) {
    for (unsigned char c : s)
        if ((c < 0x20 && c != '\t') || c == 0x7f) return false;
    return true;
}

// Whether a comma-separated list ("keep-alive, Upgrade") names `option`.
inline bool has_option(std::string_view list, std::string_view option) {
    while (!list.empty()) {
        std::size_t comma = list.find(',');
        if (iequals(trim_ows(list.substr(0, comma)), option)) return true;
        list.remove_prefix(comma == std::string_view::npos ? list.size() : comma + 1);
    }
    return false;
}

}  // namespace http
