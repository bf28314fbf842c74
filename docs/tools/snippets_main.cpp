// SPDX-License-Identifier: MIT
// The Boost.Test main of docs_snippets_run: every docs/snippets/*.cpp adds its
// test cases to this one executable.
#define BOOST_TEST_MODULE docs_snippets
#include <boost/test/unit_test.hpp>
