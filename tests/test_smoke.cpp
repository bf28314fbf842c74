#define BOOST_TEST_MODULE smoke
#include <boost/test/unit_test.hpp>
#include <reactor/scheduler.hpp>
BOOST_AUTO_TEST_CASE(runs) {
    reactor::Scheduler s;
    int n = 0;
    s.call_soon([&] { ++n; });
    s.run();
    BOOST_TEST(n == 1);
    BOOST_TEST(s.empty());
}
