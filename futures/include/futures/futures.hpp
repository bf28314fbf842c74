// SPDX-License-Identifier: MIT
// The whole futures layer in one include: Future<T> and then-chaining, Promise<T>,
// leaf futures (sleep, readable, writable), combinators, state-machine tasks,
// loops (repeat, do_for_each, parallel_for_each, map_reduce ...), retry,
// signals as futures (next_signal), the task
// toolkit (queues, events, semaphores, locks), streams and datagrams.
#pragma once

#include "futures/as_completed.hpp"
#include "futures/combinators.hpp"
#include "futures/datagram.hpp"
#include "futures/errors.hpp"
#include "futures/event.hpp"
#include "futures/executor.hpp"
#include "futures/future.hpp"
#include "futures/leaves.hpp"
#include "futures/lock.hpp"
#include "futures/next_signal.hpp"
#include "futures/loops.hpp"
#include "futures/process.hpp"
#include "futures/promise.hpp"
#include "futures/queue.hpp"
#include "futures/resolve.hpp"
#include "futures/retry.hpp"
#include "futures/run.hpp"
#include "futures/scope.hpp"
#include "futures/semaphore.hpp"
#include "futures/shield.hpp"
#include "futures/stream.hpp"
#include "futures/task.hpp"
#include "futures/task_snapshot.hpp"
#include "futures/then.hpp"
#include "futures/when_all_settled.hpp"
