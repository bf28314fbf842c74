// SPDX-License-Identifier: MIT
// Test support: every test ends with CHECK_EMPTY(sched): nothing is left
// alive on the loop — no ready callback, timer, fd waiter, posted callback,
// signal handler, open connection or pending task (Scheduler::live(), the
// leak check libuv's tests end with). Each survivor fails the test with the
// line that created it. Use inside a Boost.Test case.
#pragma once

#define CHECK_EMPTY(s)                                                                 \
    do {                                                                               \
        BOOST_TEST((s).ready_count() == 0u);                                           \
        BOOST_TEST((s).timer_count() == 0u);                                           \
        BOOST_TEST((s).waiter_count() == 0u);                                          \
        BOOST_TEST((s).empty());                                                       \
        for (const ::reactor::LiveItem& item_ : (s).live())                            \
            BOOST_ERROR("left alive on the loop: " << item_.to_string());              \
    } while (0)
