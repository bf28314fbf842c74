#!/usr/bin/python3
# SPDX-License-Identifier: MIT
# asyncio's twin of `micro_futures scope` (issue 47): N empty tasks, 1000 at a
# time, spawned bare (asyncio.create_task, each then awaited) and spawned into
# an asyncio.TaskGroup (tg.create_task, joined by leaving the `async with`).
# Two rounds on one loop, the second reported, as micro_futures does.
#   asyncio_taskgroup.py scope asyncio [N]
# Output: "RESULT futures asyncio ns_per_task_bare|ns_per_task_scope <ns>".
import asyncio
import sys
import time

BATCH = 1000


async def empty():
    return None


async def bench(n):
    batches = (n + BATCH - 1) // BATCH
    bare = scoped = 0
    for _ in range(2):
        t0 = time.perf_counter_ns()
        for _ in range(batches):
            tasks = [asyncio.create_task(empty()) for _ in range(BATCH)]
            for t in tasks:
                await t
        bare = time.perf_counter_ns() - t0
        t0 = time.perf_counter_ns()
        for _ in range(batches):
            async with asyncio.TaskGroup() as tg:
                for _ in range(BATCH):
                    tg.create_task(empty())
        scoped = time.perf_counter_ns() - t0
    tasks = batches * BATCH
    print(f"RESULT futures asyncio ns_per_task_bare {bare / tasks:.3f}")
    print(f"RESULT futures asyncio ns_per_task_scope {scoped / tasks:.3f}")


def main():
    if len(sys.argv) < 3 or sys.argv[1] != "scope":
        print("usage: asyncio_taskgroup.py scope asyncio [N]", file=sys.stderr)
        sys.exit(2)
    n = int(sys.argv[3]) if len(sys.argv) > 3 else 1_000_000
    asyncio.run(bench(n))


if __name__ == "__main__":
    main()
