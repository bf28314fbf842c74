// SPDX-License-Identifier: MIT
// What a simulated chat member checks of each line chat_server's room sends
// it (tests/test_sim_examples.cpp, tests/test_sim_hunt.cpp): members say
// "c<sender> <k>", the room relays "#<id>: c<sender> <k>" to the others, and
// its own news as "* ..." lines ("* you are #<id>" first).
#pragma once

#include <cstddef>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

namespace reactor_test {

// `line` heard by member `index` (`name`), `heard` counting each sender's
// lines so far: sets `joined` at the room's greeting, counts a line that is
// the next of its sender, and returns why not otherwise ("" when it is).
inline std::string check_chat_line(std::string_view line, const std::string& name, std::size_t index,
                                   std::vector<int>& heard, bool& joined) {
    if (line.starts_with("* you are #")) {
        joined = true;
        return {};
    }
    if (line.starts_with("*")) return {};  // joined, left, dropped, timed out
    const std::size_t colon = line.find(": c");
    std::size_t sender = 0;
    int k = -1;
    if (colon == std::string_view::npos ||
        std::sscanf(std::string(line.substr(colon + 3)).c_str(), "%zu %d", &sender, &k) != 2 ||
        sender >= heard.size())
        return fmt::format("{}: a line nobody said: \"{}\"", name, line);
    if (sender == index) return fmt::format("{}: got its own line back: \"{}\"", name, line);
    if (k != heard[sender])
        return fmt::format("{}: line {} of client-{} came after {} of its lines", name, k, sender, heard[sender]);
    ++heard[sender];
    return {};
}

}  // namespace reactor_test
