#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""report.py RAW_DIR RESULTS_DIR: turns bench/run's raw tables into
RESULTS_DIR/results.md (markdown) and the gnuplot data files in RAW_DIR.

Inputs (tab-separated, written by bench/run):
  machine.tsv  key, value
  echo.tsv     run, shape, server, msgs_per_s | fail, mb_per_s | fail, server CPU ns per message | fail,
               round trip p50, p99, p99.9 in us | fail (loadgen's histogram)
  micro.tsv    run, bench, lib, metric, value
Every figure is the median of the runs; all runs are printed beside it.
"""
import collections
import statistics
import sys
from pathlib import Path

OURS = ["reactor-select", "reactor-poll", "reactor-epoll"]
# "Best peer" columns: the best of every library peer (the C loops are ceilings, not peers).
PEERS = ["libuv", "libevent", "asio", "uvloop", "asyncio"]
TARGET_PEERS = ["libuv", "libevent", "asio"]  # the "best of libuv, libevent and Asio"
CEILING = "c-epoll"
SERVER_ORDER = OURS + PEERS + ["c-epoll", "c-select"]
SHAPE_ORDER = ["1x64B", "10x1KiB", "10x100KiB", "100x1KiB", "1+1000idle", "1000x1KiB"]
SHAPE_TITLE = {
    "1x64B": "1 connection x 64 B",
    "10x1KiB": "10 connections x 1 KiB",
    "10x100KiB": "10 connections x 100 KiB",
    "100x1KiB": "100 connections x 1 KiB",
    "1+1000idle": "1 active (64 B) + 1,000 idle connections",
    "1000x1KiB": "1,000 connections x 1 KiB",
}
LATENCY_SHAPES = ["1000x1KiB"]  # the tail: round-trip percentiles per server
MULTI_SHAPES = ["10x1KiB", "10x100KiB", "100x1KiB"]
SELECT_SHAPES = ["1x64B", "10x1KiB", "10x100KiB", "100x1KiB"]  # <= 100 connections

MICRO_ROWS = [  # (bench, metric, label, peers that compete, short label for the chart)
    ("chain", "ns_per_hop", "call_soon chain: ns per hop", ["asio", "asio-reactor", "libuv"], "chain/hop"),
    ("post", "ns_per_post", "N posted: ns per call_soon", ["asio"], "post"),
    ("post", "ns_per_run", "N posted: ns per callback run", ["asio"], "post/run"),
    ("post", "ns_per_post_cold", "N posted, first round (cold): ns per call_soon", ["asio"], "post(cold)"),
    ("post", "ns_per_run_cold", "N posted, first round (cold): ns per callback run", ["asio"], "post/run(cold)"),
    ("timers", "ns_per_insert", "N timers: ns per insert (wall)", ["asio", "libuv"], "timer/insert"),
    ("timers", "cpu_ns_per_dispatch", "N timers: CPU ns per dispatch", ["asio", "libuv"], "timer/dispatch"),
    ("timers", "ns_per_insert_cold", "N timers, first round (cold): ns per insert", ["asio", "libuv"],
     "timer/insert(cold)"),
    ("timers", "cpu_ns_per_dispatch_cold", "N timers, first round (cold): CPU ns per dispatch", ["asio", "libuv"],
     "timer/dispatch(cold)"),
    ("rearm", "ns_per_event_oneshot", "fd event, one-shot waiter re-armed from its callback: ns per event", [],
     "rearm/oneshot(wall)"),
    ("rearm", "ns_per_event_persistent", "fd event, persistent waiter: ns per event", [], "rearm/persistent(wall)"),
    ("rearm", "cpu_ns_per_event_oneshot", "fd event, one-shot waiter re-armed from its callback: CPU ns per event",
     [], "rearm/oneshot"),
    ("rearm", "cpu_ns_per_event_persistent", "fd event, persistent waiter: CPU ns per event", [], "rearm/persistent"),
    ("futures", "ns_per_then", "then chain: ns per then (attach + run)", [], "then"),
    ("futures", "ns_per_then_attach", "then chain: ns per then, attach part", [], "then/attach"),
    ("futures", "ns_per_then_run", "then chain: ns per then, run part", [], "then/run"),
    ("futures", "ns_per_then_fanout", "then fan-out (one iteration): ns per then", [], "then/fanout"),
    ("futures", "ns_per_then_cold", "then chain, first round (cold): ns per then (attach + run)", [], "then(cold)"),
    ("futures", "ns_per_then_attach_cold", "then chain, first round (cold): ns per then, attach part", [],
     "then/attach(cold)"),
    ("futures", "ns_per_then_run_cold", "then chain, first round (cold): ns per then, run part", [], "then/run(cold)"),
    ("futures", "ns_per_then_fanout_cold", "then fan-out, first round (cold): ns per then", [], "then/fanout(cold)"),
    ("futures", "ns_per_pair", "future/promise pair: ns per pair", [], "future+promise"),
    # issue 47: an empty task spawned and joined, bare and in a scope (asyncio: create_task, and
    # TaskGroup.create_task, bench/micro/asyncio_taskgroup.py); 1,000 live at a time.
    ("futures", "ns_per_task_bare", "empty task, spawned bare and joined: ns per task", ["asyncio"], "task/bare"),
    ("futures", "ns_per_task_scope",
     "empty task, spawned into a scope, joined by close() (asyncio: TaskGroup.create_task): ns per task",
     ["asyncio"], "task/scope"),
]


def read_tsv(path):
    if not path.exists():
        return []
    return [line.rstrip("\n").split("\t") for line in path.read_text().splitlines() if line.strip()]


def fmt_num(x, digits=None):
    if x is None:
        return "—"
    if digits is not None:
        return f"{x:.{digits}f}"
    if x >= 1000:
        return f"{x:,.0f}"
    if x >= 100:
        return f"{x:.0f}"
    if x >= 10:
        return f"{x:.1f}"
    return f"{x:.2f}"


def fmt_us(ns):
    return "—" if ns is None else f"{ns / 1000:.2f}"


def ratio(a, b):
    return a / b if a is not None and b not in (None, 0) else None


def fmt_ratio(r):
    return "—" if r is None else f"{r:.2f}x"


def span(values, fmt):
    """'lo–hi' of the values formatted with fmt, or one figure when they agree."""
    lo, hi = fmt.format(min(values)), fmt.format(max(values))
    return lo if lo == hi else f"{lo}–{hi}"


def headline(machine, shapes, med, best_of, mmed):
    """The paragraph README.md and docs/performance.md quote: the best of our backends
    against the C epoll loop and against the best of libuv, libevent and Asio, at every
    shape measured, and the two micro figures a reader of the README asks about."""
    to_ceiling, to_peer = [], []
    for shape in shapes:
        ours, _ = best_of(shape, OURS)
        peer, _ = best_of(shape, TARGET_PEERS)
        if ratio(ours, med(shape, CEILING)) is not None:
            to_ceiling.append(ratio(ours, med(shape, CEILING)))
        if ratio(ours, peer) is not None:
            to_peer.append(ratio(ours, peer))
    parts, micro = [], []
    if to_ceiling and to_peer:
        parts.append(f"our echo server (best backend per shape) runs at {span(to_ceiling, '{:.2f}')}× a "
                     f"hand-written C epoll loop and {span(to_peer, '{:.2f}')}× the best of libuv, libevent and Asio "
                     f"at each of the {len(shapes)} shapes")
    hops = [v for v in (mmed("chain", "ns_per_hop", l) for l in OURS) if v is not None]
    if hops:
        micro.append(f"a `call_soon` hop costs {span(hops, '{:.0f}')} ns")
    thens = [v for v in (mmed("futures", "ns_per_then", l) for l in OURS) if v is not None]
    if thens:
        micro.append(f"a `then` continuation about {min(thens):.0f} ns")
    if micro:
        parts.append(" and ".join(micro))
    text = "; ".join(parts) if parts else "nothing was measured"
    return (f"On a {machine.get('nproc', '?')}-vCPU KVM guest (`bench/run` of {machine.get('date', '?')}), "
            f"{text}.")


def main():
    raw, out = Path(sys.argv[1]), Path(sys.argv[2])
    machine = dict((r[0], r[1]) for r in read_tsv(raw / "machine.tsv") if len(r) >= 2)
    runs = int(machine.get("runs", "3"))

    # ---- echo
    echo = collections.defaultdict(list)  # (shape, server) -> [rate or None per run]
    mbs = collections.defaultdict(list)
    cpu = collections.defaultdict(list)  # server CPU ns per message
    lat = {p: collections.defaultdict(list) for p in ("p50", "p99", "p999")}  # round trip, us
    for row in read_tsv(raw / "echo.tsv"):
        run, shape, server, rate, mb = row[:5]
        cpu_ns = row[5] if len(row) > 5 else "fail"
        echo[(shape, server)].append(None if rate == "fail" else float(rate))
        mbs[(shape, server)].append(None if mb == "fail" else float(mb))
        cpu[(shape, server)].append(None if cpu_ns == "fail" else float(cpu_ns))
        for i, p in enumerate(("p50", "p99", "p999")):
            v = row[6 + i] if len(row) > 6 + i else "fail"
            lat[p][(shape, server)].append(None if v in ("fail", "") else float(v))
    shapes = [s for s in SHAPE_ORDER if any(k[0] == s for k in echo)]
    servers = [s for s in SERVER_ORDER if any(k[1] == s for k in echo)]

    def med(shape, server, table=echo):
        vals = [v for v in table.get((shape, server), []) if v is not None]
        # A median needs every run to have succeeded; a failed run is shown as such.
        if not vals or len(vals) < len(table.get((shape, server), [])):
            return None
        return statistics.median(vals)

    def best_of(shape, names):
        cands = [(med(shape, n), n) for n in names if med(shape, n) is not None]
        return max(cands) if cands else (None, None)

    # ---- micro
    micro = collections.defaultdict(list)  # (bench, metric, lib) -> [values]
    micro_run = collections.defaultdict(dict)  # (bench, metric, lib) -> {run: value}
    for row in read_tsv(raw / "micro.tsv"):
        run, bench, lib, metric, value = row
        micro[(bench, metric, lib)].append(float(value))
        micro_run[(bench, metric, lib)][run] = float(value)

    def mmed(bench, metric, lib):
        v = micro.get((bench, metric, lib))
        return statistics.median(v) if v else None

    lines = []
    w = lines.append
    w("# Benchmark results")
    w("")
    w(f"Generated by `bench/run{' --quick' if machine.get('quick') == '1' else ''}` on {machine.get('date', '?')}. "
      f"Machine: {machine.get('cpu', '?')}, {machine.get('nproc', '?')} CPUs (KVM guest), Linux {machine.get('kernel', '?')}, "
      f"{machine.get('compiler', '?')}, everything built Release -O2.")
    w(f"Load average (1/5/15 min) before: {machine.get('load_before', '?')}, after: {machine.get('load_after', '?')}; "
      f"total time {machine.get('elapsed_s', '?')} s.")
    w(f"Peers: libuv {machine.get('libuv', '?')}, libevent {machine.get('libevent', '?')}, "
      f"Asio {machine.get('asio', '?')}, {machine.get('python', '?')} asyncio, uvloop {machine.get('uvloop', '?')}.")
    w("")
    w(f"Each figure is the median of {runs} run(s); every run is listed. Echo runs: warm-up "
      f"{machine.get('warmup', '?')} s (discarded), then {machine.get('duration', '?')} s measured, one message in "
      "flight per connection, every echoed byte verified. "
      + ("Multi-connection shapes: server on CPU 0, client on CPU 1 (--split-cpus); other shapes: both on CPU 0. "
         if machine.get("split_cpus") == "1" else "Server and client both pinned to CPU 0 (see bench/run for why). ")
      + ("Echo servers and load generator ran SCHED_FIFO (--rt). " if machine.get("rt") == "1" else "")
      + "Runs are interleaved (run 1 of every server and shape, "
      "then run 2, ...), so background load spreads over all servers alike. "
      "**x best peer**: ratio to the best library peer (libuv, libevent, Asio, uvloop, asyncio) in the same run; "
      "**x C ceiling**: ratio to the hand-written C epoll loop (`c-epoll`). For echo, higher is better; "
      "for micro timings (ns), lower is better. **server CPU µs/msg**: the server process's CPU time (user + "
      "kernel, from /proc/PID/task/*/schedstat) during the measured window divided by the messages echoed: "
      "what one message costs the server, whatever the client and the scheduler do (lower is better; for the "
      "Python servers it includes the interpreter).")
    w("")

    # ---- targets first: the summary a reader wants
    targets = []  # (what, value text, met bool or None)

    def target(what, value, goal, higher_is_better=True, note=""):
        if value is None:
            targets.append((what, "not measured", None, note))
            return
        met = value >= goal if higher_is_better else value <= goal
        targets.append((what, f"{value:.2f}x (goal {'≥' if higher_is_better else '≤'} {goal}x)", met, note))

    for shape in shapes:
        ours, ours_name = best_of(shape, OURS)
        peer, peer_name = best_of(shape, TARGET_PEERS)
        ceil = med(shape, CEILING)
        target(f"echo {shape}: ours (best: {ours_name or '—'}) vs best of libuv/libevent/Asio ({peer_name or '—'})",
               ratio(ours, peer), 1.0)
        target(f"echo {shape}: ours (best: {ours_name or '—'}) vs C ceiling", ratio(ours, ceil), 0.95)
        if shape in SELECT_SHAPES:
            target(f"echo {shape}: reactor-select vs C ceiling", ratio(med(shape, "reactor-select"), ceil), 0.95)
        ceil_vs_asyncio = ratio(ceil, med(shape, "asyncio"))
        target(f"echo {shape}: ours vs asyncio", ratio(ours, med(shape, "asyncio")), 3.5,
               note="" if ceil_vs_asyncio is None else f"the C ceiling itself is {ceil_vs_asyncio:.2f}x asyncio")
    if "1+1000idle" in shapes:
        target("echo 1+1000idle: reactor-epoll vs C epoll ceiling",
               ratio(med("1+1000idle", "reactor-epoll"), med("1+1000idle", CEILING)), 0.95)

    def best_ours_micro(bench, metric):
        c = [(mmed(bench, metric, l), l) for l in OURS if mmed(bench, metric, l) is not None]
        return min(c) if c else (None, None)

    v, n = best_ours_micro("chain", "ns_per_hop")
    target(f"call_soon chain ({n or '—'}) vs Asio post chain", ratio(v, mmed("chain", "ns_per_hop", "asio")), 1.2,
           False, "Asio without any I/O object never polls")
    target(f"call_soon chain ({n or '—'}) vs Asio post chain with its reactor",
           ratio(v, mmed("chain", "ns_per_hop", "asio-reactor")), 1.2, False,
           "informative: with a socket open Asio polls epoll between handlers; ours polls only while an fd is watched")
    v, n = best_ours_micro("timers", "ns_per_insert")
    target(f"timer insert ({n or '—'}) vs libuv", ratio(v, mmed("timers", "ns_per_insert", "libuv")), 1.0, False)
    v, n = best_ours_micro("timers", "cpu_ns_per_dispatch")
    target(f"timer dispatch CPU ({n or '—'}) vs Asio", ratio(v, mmed("timers", "cpu_ns_per_dispatch", "asio")), 1.0,
           False)
    then, n = best_ours_micro("futures", "ns_per_then")
    if then is None:
        targets.append(("then: ns per continuation", "not measured (futures not built)", None, ""))
    else:
        targets.append((f"then chain: ns per continuation ({n})", f"{then:.1f} ns (goal ≤ 80 ns)", then <= 80, ""))
    fan, n = best_ours_micro("futures", "ns_per_then_fanout")
    if fan is not None:
        targets.append((f"then fan-out: ns per continuation ({n})", f"{fan:.1f} ns (goal ≤ 80 ns)", fan <= 80,
                        "informative: no loop iteration per link"))

    bare, n = best_ours_micro("futures", "ns_per_task_bare")
    if bare is not None:
        scoped = mmed("futures", "ns_per_task_scope", n)
        targets.append((f"scope spawn + join vs bare spawn ({n}, issue 47)",
                        f"{fmt_num(scoped)} ns vs {fmt_num(bare)} ns: {fmt_ratio(ratio(scoped, bare))} (goal ≤ 1.5x)",
                        ratio(scoped, bare) is not None and ratio(scoped, bare) <= 1.5, ""))

    w("## Headline")
    w("")
    w("<!-- README.md and docs/performance.md quote the next paragraph verbatim: bench/publish_headline copies it")
    w("     there, and the test published_figures fails when a copy differs. -->")
    w(headline(machine, shapes, med, best_of, mmed))
    w("")

    w("## Targets (issue 5)")
    w("")
    w("| target | measured | met? |")
    w("|---|---|---|")
    for what, value, met, note in targets:
        mark = "—" if met is None else ("yes" if met else "**MISSED**")
        w(f"| {what}{' (' + note + ')' if note else ''} | {value} | {mark} |")
    w("")

    # ---- echo tables
    w("## Echo")
    w("")
    w("![echo throughput relative to the C epoll ceiling](echo.png)")
    w("")
    w("Summary: median messages/s, and in brackets the ratio to the C epoll ceiling of the same run.")
    w("")
    w("| server | " + " | ".join(shapes) + " |")
    w("|---|" + "---:|" * len(shapes))
    for server in servers:
        cells = []
        for shape in shapes:
            m = med(shape, server)
            cells.append("fail" if m is None else f"{fmt_num(m)} ({fmt_ratio(ratio(m, med(shape, CEILING)))})")
        w(f"| {server} | " + " | ".join(cells) + " |")
    w("")
    w("Server CPU per message (µs, user + kernel, median), and in brackets the ratio to the C epoll ceiling "
      "(lower is better):")
    w("")
    w("| server | " + " | ".join(shapes) + " |")
    w("|---|" + "---:|" * len(shapes))
    for server in servers:
        cells = []
        for shape in shapes:
            c = med(shape, server, cpu)
            cells.append("—" if c is None else f"{fmt_us(c)} ({fmt_ratio(ratio(c, med(shape, CEILING, cpu)))})")
        w(f"| {server} | " + " | ".join(cells) + " |")
    w("")
    for shape in shapes:
        best_peer, best_peer_name = best_of(shape, PEERS)
        ceil = med(shape, CEILING)
        split = machine.get("split_cpus") == "1" and shape in MULTI_SHAPES
        w(f"### {SHAPE_TITLE.get(shape, shape)} "
          f"({'server CPU 0, client CPU 1' if split else 'client and server on CPU 0'})")
        w("")
        w("| server | " + " | ".join(f"run {i + 1} msg/s" for i in range(runs)) +
          " | median msg/s | MB/s | x best peer | x C ceiling | server CPU µs/msg | CPU x C ceiling |")
        w("|---|" + "---:|" * (runs + 6))
        for server in servers:
            vals = echo.get((shape, server), [])
            cells = [("fail" if v is None else fmt_num(v)) for v in vals] + [""] * (runs - len(vals))
            m = med(shape, server)
            mark = " (best peer)" if server == best_peer_name else ""
            w(f"| {server}{mark} | " + " | ".join(cells[:runs]) +
              f" | {fmt_num(m)} | {fmt_num(med(shape, server, mbs))} | {fmt_ratio(ratio(m, best_peer))} | "
              f"{fmt_ratio(ratio(m, ceil))} | {fmt_us(med(shape, server, cpu))} | "
              f"{fmt_ratio(ratio(med(shape, server, cpu), med(shape, CEILING, cpu)))} |")
        w("")

    for shape in [s for s in LATENCY_SHAPES if s in shapes]:
        w(f"### The tail at {SHAPE_TITLE[shape]}")
        w("")
        w("Round trip of one message (first byte written to last byte read back, client side), median of the "
          "runs' percentiles, in ms; and the throughput ratio to the C epoll ceiling.")
        w("")
        w("| server | p50 ms | p99 ms | p99.9 ms | x C ceiling (msg/s) |")
        w("|---|---:|---:|---:|---:|")
        for server in servers:
            cells = []
            for p in ("p50", "p99", "p999"):
                v = med(shape, server, lat[p])
                cells.append("—" if v is None else f"{v / 1000:.1f}")
            w(f"| {server} | " + " | ".join(cells) + f" | {fmt_ratio(ratio(med(shape, server), med(shape, CEILING)))} |")
        w("")

    # ---- micro table
    w("## Micro benchmarks")
    w("")
    w("![micro benchmarks](micro.png)")
    w("")
    w("Times in ns (lower is better); `x best peer` = ours / best peer time (< 1 is faster). "
      f"N = {machine.get('micro_n', '?')} (chains, rearm and then fan-out: {machine.get('chain_n', '?')}). No C ceiling exists for these: that column is omitted. "
      "Post, timers, then chain and then fan-out run two rounds on one loop: the first (cold) grows every pool "
      "from empty (on these VMs a page fault costs ~6 µs, so cold rounds mostly count fresh memory), the "
      "second is the steady state and the headline figure. Chain, post, insert and then are wall time; "
      "timer dispatch is process CPU time (CLOCK_PROCESS_CPUTIME_ID), so time asleep waiting for the "
      "deadlines does not count. `fd event` (micro `rearm`, N as for chains): one socketpair end kept readable, "
      "each event a real selector wait then a 1-byte read and write; wall and process CPU time per event, "
      "ours only (see the table after this one).")
    w("")
    w("| benchmark | lib | " + " | ".join(f"run {i + 1}" for i in range(runs)) + " | median | x best peer |")
    w("|---|---|" + "---:|" * (runs + 2))
    plot_rows = []
    for bench, metric, label, peers, short in MICRO_ROWS:
        libs = [l for l in OURS + peers if (bench, metric, l) in micro]
        if not libs:
            continue
        pc = [(mmed(bench, metric, p), p) for p in peers if mmed(bench, metric, p) is not None]
        best = min(pc) if pc else (None, None)
        for lib in libs:
            vals = micro[(bench, metric, lib)]
            cells = [fmt_num(v) for v in vals] + [""] * (runs - len(vals))
            m = mmed(bench, metric, lib)
            r = "" if lib in peers else fmt_ratio(ratio(m, best[0]))
            if lib == best[1]:
                r = "(best peer)"
            w(f"| {label} | {lib} | " + " | ".join(cells[:runs]) + f" | {fmt_num(m)} | {r} |")
        # The chart shows headline figures (rearm: CPU time only).
        # (The task rows are left out: asyncio's microseconds would flatten the chart.)
        if ("cold" not in short and "(wall)" not in short and short not in ("then/attach", "then/run")
                and not short.startswith("task/")):
            plot_rows.append((short, {l: mmed(bench, metric, l) for l in libs}))
    w("")

    # ---- fd re-arm: one-shot against persistent, ratios taken within one process
    rearm_libs = [l for l in OURS if ("rearm", "cpu_ns_per_event_oneshot", l) in micro_run]
    if rearm_libs:
        def paired(lib, metric):
            a = micro_run[("rearm", f"{metric}_oneshot", lib)]
            b = micro_run[("rearm", f"{metric}_persistent", lib)]
            rs = [a[r] / b[r] for r in a if r in b and b[r] > 0]
            return statistics.median(rs) if rs else None

        w("### fd re-arm: one-shot against persistent waiters")
        w("")
        w("One fd, one readiness event per loop iteration (selector wait, 1-byte read, 1-byte write). "
          "One-shot: `read_wait` re-registered from its own callback; persistent: `add_reader` once. "
          "Both variants run in the same process, one after the other; the ratio is the median of the "
          "per-run ratios (> 1: re-arming costs more than staying registered). "
          "`bench/compare_rearm` compares two builds of this benchmark.")
        w("")
        w("| backend | one-shot ns/event | persistent ns/event | one-shot / persistent (wall) | "
          "one-shot CPU ns/event | persistent CPU ns/event | one-shot / persistent (CPU) |")
        w("|---|---:|---:|---:|---:|---:|---:|")
        for lib in rearm_libs:
            w(f"| {lib} | {fmt_num(mmed('rearm', 'ns_per_event_oneshot', lib))} | "
              f"{fmt_num(mmed('rearm', 'ns_per_event_persistent', lib))} | "
              f"{fmt_ratio(paired(lib, 'ns_per_event'))} | "
              f"{fmt_num(mmed('rearm', 'cpu_ns_per_event_oneshot', lib))} | "
              f"{fmt_num(mmed('rearm', 'cpu_ns_per_event_persistent', lib))} | "
              f"{fmt_ratio(paired(lib, 'cpu_ns_per_event'))} |")
        w("")

    out.mkdir(parents=True, exist_ok=True)
    (out / "results.md").write_text("\n".join(lines) + "\n")

    # ---- gnuplot data: echo (ratio to the C ceiling), micro (ns)
    with open(raw / "echo_plot.dat", "w") as f:
        f.write("shape " + " ".join(servers) + "\n")
        for shape in shapes:
            ceil = med(shape, CEILING)
            f.write(shape + " " + " ".join(
                ("NaN" if ratio(med(shape, s), ceil) is None else f"{ratio(med(shape, s), ceil):.4f}")
                for s in servers) + "\n")
    micro_libs = [l for l in OURS + ["asio", "asio-reactor", "libuv"]
                  if any(l in d for _, d in plot_rows)]
    with open(raw / "micro_plot.dat", "w") as f:
        f.write("bench " + " ".join(micro_libs) + "\n")
        for short, d in plot_rows:
            f.write(f'"{short}" ' + " ".join(
                "NaN" if d.get(l) is None else f"{d[l]:.3f}" for l in micro_libs) + "\n")


if __name__ == "__main__":
    main()
