// SPDX-License-Identifier: MIT
// futures/combinators.hpp: futures made of other futures — when_all, when_any,
// with_timeout, one header each.
//
// Policy, the same for all of them: the combined future completes as soon as its
// outcome is known, and then cancels every input still pending, so nothing is
// left running that nobody waits for. The first error (or cancellation) wins;
// an input that fails later, after the combined future is complete, keeps its
// error (reported as never retrieved unless someone reads it). Cancelling the
// combined future cancels all its pending inputs. Inputs are watched, not owned:
// the combined future holds no reference that would keep them alive.
// Loop thread only; all inputs must belong to one Scheduler.
#pragma once

#include "futures/when_all.hpp"
#include "futures/when_any.hpp"
#include "futures/with_timeout.hpp"
