// The whole futures layer in one include: Future<T> and then-chaining,
// leaf futures (sleep, readable, writable), combinators, state-machine tasks and streams.
#pragma once

#include "futures/combinators.hpp"
#include "futures/errors.hpp"
#include "futures/future.hpp"
#include "futures/leaves.hpp"
#include "futures/run.hpp"
#include "futures/stream.hpp"
#include "futures/task.hpp"
#include "futures/then.hpp"
