// SPDX-License-Identifier: MIT
// The one Boost.Test main that every suite links (the reactor_test_main
// library, tests/CMakeLists.txt). Compiled once per build: when each suite
// defined BOOST_TEST_MODULE, each compiled its own main; and that macro
// changes what <boost/test/unit_test.hpp> declares, so no two suites could
// share one precompiled copy of it or one executable.
//
// The master suite is named after the executable: build/tests/test_connection
// is the suite "connection".
#include <boost/test/unit_test.hpp>

#include <string>
#include <string_view>

namespace {

bool name_the_master_suite() {
    auto& master = boost::unit_test::framework::master_test_suite();
    std::string_view program = master.argc > 0 ? master.argv[0] : "tests";
    program.remove_prefix(program.rfind('/') + 1);  // npos + 1 is 0: no directory
    if (program.starts_with("test_")) program.remove_prefix(5);
    master.p_name.value = std::string(program);
    return true;
}

}  // namespace

int main(int argc, char* argv[]) {
    return boost::unit_test::unit_test_main(&name_the_master_suite, argc, argv);
}
