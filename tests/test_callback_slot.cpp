// SPDX-License-Identifier: MIT
// CallbackSlot: the one idiom for callbacks that replace, clear or outlive
// themselves (reactor/callback_slot.hpp). The sockets rely on each rule here.
#include <boost/test/unit_test.hpp>

#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "reactor/callback_slot.hpp"

using reactor::CallbackSlot;

BOOST_AUTO_TEST_CASE(an_empty_slot_runs_nothing) {
    CallbackSlot<void(int)> slot;
    BOOST_TEST(!slot);
    BOOST_TEST(!slot.invoke(1));
}

BOOST_AUTO_TEST_CASE(a_callback_stays_for_the_next_call) {
    std::vector<int> seen;
    CallbackSlot<void(int)> slot([&](int v) { seen.push_back(v); });
    BOOST_TEST(slot.invoke(1));
    BOOST_TEST(slot.invoke(2));
    BOOST_TEST(seen == (std::vector<int>{1, 2}));
}

BOOST_AUTO_TEST_CASE(a_callback_that_replaces_itself_is_replaced) {
    std::vector<std::string> seen;
    CallbackSlot<void()> slot;
    slot.set([&] {
        seen.push_back("first");
        slot.set([&] { seen.push_back("second"); });
    });
    slot.invoke();
    slot.invoke();
    slot.invoke();
    BOOST_TEST(seen == (std::vector<std::string>{"first", "second", "second"}));
}

BOOST_AUTO_TEST_CASE(a_callback_that_clears_itself_stays_cleared_and_keeps_its_captures_until_it_returns) {
    auto token = std::make_shared<int>(7);
    std::weak_ptr<int> watch = token;
    bool alive_inside = false;
    CallbackSlot<void()> slot;
    slot.set([&, token = std::move(token)] {
        slot.reset();
        alive_inside = !watch.expired() && *token == 7;  // its own captures are intact
    });
    BOOST_TEST(slot.invoke());
    BOOST_TEST(alive_inside);
    BOOST_TEST(!slot);
    BOOST_TEST(watch.expired());  // released once it returned
}

BOOST_AUTO_TEST_CASE(invoking_the_slot_from_inside_its_callback_does_nothing) {
    int depth = 0;
    int calls = 0;
    bool inner_ran = true;
    CallbackSlot<void()> slot;
    slot.set([&] {
        ++calls;
        ++depth;
        inner_ran = slot.invoke();
        --depth;
    });
    slot.invoke();
    BOOST_TEST(calls == 1);
    BOOST_TEST(!inner_ran);
    BOOST_TEST(static_cast<bool>(slot));  // and it is back for the next call
}

BOOST_AUTO_TEST_CASE(a_callback_that_throws_is_put_back) {
    int calls = 0;
    CallbackSlot<void()> slot([&] {
        ++calls;
        throw std::runtime_error("boom");
    });
    BOOST_CHECK_THROW(slot.invoke(), std::runtime_error);
    BOOST_TEST(static_cast<bool>(slot));
    BOOST_CHECK_THROW(slot.invoke(), std::runtime_error);
    BOOST_TEST(calls == 2);
}

BOOST_AUTO_TEST_CASE(a_callback_replaced_and_then_throwing_leaves_the_replacement) {
    std::vector<std::string> seen;
    CallbackSlot<void()> slot;
    slot.set([&] {
        slot.set([&] { seen.push_back("replacement"); });
        throw std::runtime_error("boom");
    });
    BOOST_CHECK_THROW(slot.invoke(), std::runtime_error);
    slot.invoke();
    BOOST_TEST(seen == (std::vector<std::string>{"replacement"}));
}

BOOST_AUTO_TEST_CASE(take_empties_the_slot_for_a_callback_that_runs_once) {
    int calls = 0;
    CallbackSlot<void()> slot([&] { ++calls; });
    auto once = slot.take();
    BOOST_TEST(!slot);
    once();
    BOOST_TEST(!slot.invoke());
    BOOST_TEST(calls == 1);
}

BOOST_AUTO_TEST_CASE(take_from_inside_the_callback_leaves_the_slot_empty) {
    int calls = 0;
    CallbackSlot<void()> slot;
    slot.set([&] {
        ++calls;
        BOOST_TEST(!slot.take());  // the running callback is not in the slot
    });
    BOOST_TEST(slot.invoke());
    BOOST_TEST(!slot);
    BOOST_TEST(!slot.invoke());
    BOOST_TEST(calls == 1);
}

// The slot's function type (reactor::SlotFunction): what converts to a
// std::function converts to it, emptiness included.
BOOST_AUTO_TEST_CASE(an_empty_std_function_or_null_pointer_makes_an_empty_slot) {
    CallbackSlot<void(int)> slot([](int) {});
    slot.set(std::function<void(int)>{});
    BOOST_TEST(!slot);
    void (*none)(int) = nullptr;
    slot.set(none);
    BOOST_TEST(!slot);
    slot.set(nullptr);
    BOOST_TEST(!slot);
}

namespace {
int last_seen = 0;
void remember(int v) { last_seen = v; }
}  // namespace

BOOST_AUTO_TEST_CASE(a_std_function_a_function_pointer_and_a_mutable_lambda_run) {
    std::vector<int> seen;
    const std::function<void(int)> f = [&](int v) { seen.push_back(v); };
    CallbackSlot<void(int)> slot(f);  // copied from an lvalue
    BOOST_TEST(slot.invoke(1));
    slot.set(&remember);
    BOOST_TEST(slot.invoke(2));
    BOOST_TEST(last_seen == 2);
    int count = 0;
    slot.set([n = 0, &count](int) mutable { count = ++n; });
    slot.invoke(0);
    slot.invoke(0);
    BOOST_TEST(count == 2);  // the same target both times, its state kept
    BOOST_TEST(seen == (std::vector<int>{1}));
}

BOOST_AUTO_TEST_CASE(captures_inline_or_boxed_move_and_die_with_the_slot) {
    auto token = std::make_shared<int>(1);
    std::weak_ptr<int> watch = token;
    std::string big(100, 'x');
    std::string got;
    {
        // A shared_ptr fits inline; a std::string (and a unique_ptr beside it) does not.
        CallbackSlot<void()> small([token] { ++*token; });
        CallbackSlot<void()> boxed([&got, s = big, p = std::make_unique<int>(5)] { got = s + std::to_string(*p); });
        CallbackSlot<void()> moved;
        moved.set(small.take());
        BOOST_TEST(!small);
        BOOST_TEST(moved.invoke());
        BOOST_TEST(boxed.invoke());
        BOOST_TEST(*watch.lock() == 2);
        token.reset();
        BOOST_TEST(!watch.expired());  // held by the slot's callback
    }
    BOOST_TEST(watch.expired());
    BOOST_TEST(got == big + "5");
}

BOOST_AUTO_TEST_CASE(a_slot_is_three_pointers) {
    // Issue 22: one per connection callback. A std::function and a
    // generation took five.
    BOOST_TEST(sizeof(CallbackSlot<void(int, std::string_view)>) == 3 * sizeof(void*));
}
