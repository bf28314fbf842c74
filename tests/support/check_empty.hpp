// Test support: every test ends with CHECK_EMPTY(sched): no live timer, fd
// waiter or ready callback is left behind (libuv's MAKE_VALGRIND_HAPPY idea).
// Use inside a Boost.Test case.
#pragma once

#define CHECK_EMPTY(s)                        \
    do {                                      \
        BOOST_TEST((s).ready_count() == 0u);  \
        BOOST_TEST((s).timer_count() == 0u);  \
        BOOST_TEST((s).waiter_count() == 0u); \
        BOOST_TEST((s).empty());              \
    } while (0)
