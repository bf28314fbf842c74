// SPDX-License-Identifier: MIT
// futures/loops.hpp: loops over futures without coroutines, under Seastar's
// names, one header each: repeat, keep_doing, do_until, do_for_each
// (sequential), parallel_for_each and map_reduce (bounded concurrency), and
// retry (futures/retry.hpp, attempts with backoff). docs/futures.md, "Loops", shows each beside
// the asyncio loop it replaces.
//
// What they share: the user's function is first called from the loop, never
// inside the call that makes the loop; steps run iteratively, in turns
// (futures/detail/loop_state.hpp), never by recursion, so a million steps use
// no stack and allocate nothing of their own; the first error ends the loop
// with that error; cancelling the loop's future stops it where it is and
// cancels the future it waits on. Loop thread only.
#pragma once

#include "futures/do_for_each.hpp"
#include "futures/do_until.hpp"
#include "futures/keep_doing.hpp"
#include "futures/map_reduce.hpp"
#include "futures/parallel_for_each.hpp"
#include "futures/repeat.hpp"
