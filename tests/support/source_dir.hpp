// SPDX-License-Identifier: MIT
// The source tree's root, for the suites that read its files (docs/,
// fuzz/corpus/): REACTOR_SOURCE_DIR, which CTest sets for every suite
// (tests/CMakeLists.txt); run by hand without it, the directory two above
// this header's. __FILE__ alone is not enough: a compiler launcher such as
// ccache with CCACHE_BASEDIR (.ci/run) makes it relative to the build
// directory, where a suite does not run.
#pragma once

#include <cstdlib>
#include <filesystem>

namespace reactor_test {

inline std::filesystem::path source_dir() {
    if (const char* dir = std::getenv("REACTOR_SOURCE_DIR"); dir != nullptr && *dir != '\0') return dir;
    return std::filesystem::absolute(__FILE__).parent_path().parent_path().parent_path();
}

}  // namespace reactor_test
