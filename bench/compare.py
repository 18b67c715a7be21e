"""tracer beside other sys.monitoring / profiling tools, as ratios to the untraced run.

Usage::

    python bench/compare.py [--repeat N] [--only NAME,...] [--clock wall|cpu] [--json PATH]

For every workload of ``bench/workloads.py`` this times, in one process and
interleaved round by round (``gc.collect()`` before each timed run, fresh
arguments each time, best of N), the plain call and the call under each tool:

``tracer``     ``tracer.track`` (every node, value and edge);
``py-sysmon``  a pure-Python ``sys.monitoring`` recorder of this file's own: one
               ``list.append`` of the offset per instruction (``PyInstructionRecorder``),
               the cheapest thing a Python-level recorder of every instruction does;
``viztracer``  viztracer's C tracer (function entries and exits only), if installed;
``coverage``   coverage.py with its ``sysmon`` core (lines only), if installed.

Each column is the tool's best time over the untraced best time.  For ``tracer``
the table also shows what a traced Python call costs: the Python frames the
trace followed (``calls``), the trace's nodes and sys.monitoring events per call,
the traced time per call and per node, and the collector's runs in one untraced
and one traced run (``gc``: collections of any generation, with their time for
the traced run): kept values survive, so a program whose containers die young
untraced sets the collector off traced, and each young collection then walks
the kept containers (the cost of ``values="keep"`` that lighter value policies
avoid).  Tools not installed show ``n/a``
(``pip install -e '.[bench]'`` installs them).

``--clock cpu`` times each run by the CPU time of the calling thread
(``time.thread_time_ns``) instead of the wall clock: on a machine shared with other
jobs the wall clock counts the time the run waited for a core, which the CPU time
does not (the ratios still share the caches with whatever else runs).

The previous traced run's trace is dropped before each timed run (its memory is
given back while the program runs untimed), as a program that keeps only the
latest root does.
"""

from __future__ import annotations

import argparse
import gc
import json
import platform
import sys
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Callable

import tracer

from workloads import BY_NAME, WORKLOADS, Workload

MON = sys.monitoring


class PyInstructionRecorder:
    """A minimal pure-Python recorder: one append per instruction executed.

    Uses a free sys.monitoring tool id and the global INSTRUCTION event for the
    duration of one call; what it keeps (the offsets) is far less than a trace.
    """

    name = "py-sysmon"

    def __call__(self, func: Callable[..., Any], *args: Any, **kwargs: Any) -> list[int]:
        tool = next(i for i in (3, 4, 5, 2, 1, 0) if MON.get_tool(i) is None)
        log: list[int] = []
        append = log.append

        def on_instruction(code, offset):
            append(offset)

        MON.use_tool_id(tool, "bench-py-recorder")
        try:
            MON.register_callback(tool, MON.events.INSTRUCTION, on_instruction)
            MON.set_events(tool, MON.events.INSTRUCTION)
            try:
                func(*args, **kwargs)
            finally:
                MON.set_events(tool, 0)
                MON.register_callback(tool, MON.events.INSTRUCTION, None)
        finally:
            MON.free_tool_id(tool)
        return log


class VizTracerCalls:
    """viztracer's C tracer around one call (it records function entries/exits)."""

    name = "viztracer"

    def __init__(self) -> None:
        from viztracer import VizTracer

        self.tracer = VizTracer(verbose=0, tracer_entries=4_000_000, register_global=False)

    def __call__(self, func: Callable[..., Any], *args: Any, **kwargs: Any) -> None:
        self.tracer.start()
        try:
            func(*args, **kwargs)
        finally:
            self.tracer.stop()
            self.tracer.clear()


class CoverageLines:
    """coverage.py's sysmon core around one call (line coverage)."""

    name = "coverage"

    def __init__(self) -> None:
        import coverage

        self.coverage = coverage

    def __call__(self, func: Callable[..., Any], *args: Any, **kwargs: Any) -> None:
        cov = self.coverage.Coverage(config_file=False, data_file=None)
        cov.set_option("run:core", "sysmon")
        cov.start()
        try:
            func(*args, **kwargs)
        finally:
            cov.stop()


def untraced(func: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    return func(*args, **kwargs)


def traced(func: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    return tracer.track(func, *args, **kwargs)


def tools() -> list[tuple[str, Callable[..., Any] | None]]:
    """(name, callable or None when not installed) for each compared tool."""
    out: list[tuple[str, Callable[..., Any] | None]] = [
        ("tracer", traced), ("py-sysmon", PyInstructionRecorder())]
    for cls in (VizTracerCalls, CoverageLines):
        try:
            out.append((cls.name, cls()))
        except ImportError:
            out.append((cls.name, None))
    return out


@dataclass
class Row:
    name: str
    untraced_ms: float
    ratios: dict[str, float | None] = field(default_factory=dict)
    calls: int | None = None
    nodes: int | None = None
    events: int | None = None
    traced_ms: float | None = None
    match: bool = True
    gc_untraced: int | None = None
    gc_traced: int | None = None
    gc_traced_ms: float | None = None


# The clock runs are timed by (--clock): the wall clock or this thread's CPU time.
CLOCKS = {"wall": time.perf_counter_ns, "cpu": time.thread_time_ns}
clock = CLOCKS["wall"]


def timed(workload: Workload, call: Callable[..., Any]) -> int:
    args, kwargs = workload.make_args()
    gc.collect()
    start = clock()
    result = call(workload.func, *args, **kwargs)
    elapsed = clock() - start
    del result
    return elapsed


def collections_during(workload: Workload, call: Callable[..., Any]) -> tuple[int, float]:
    """The collector's runs (any generation) during one call, and their time in ms."""
    runs, spent, started = [0], [0], [0]

    def watch(phase: str, info: dict) -> None:
        if phase == "start":
            runs[0] += 1
            started[0] = time.perf_counter_ns()
        else:
            spent[0] += time.perf_counter_ns() - started[0]

    args, kwargs = workload.make_args()
    gc.collect()
    gc.callbacks.append(watch)
    try:
        result = call(workload.func, *args, **kwargs)
    finally:
        gc.callbacks.remove(watch)
    del result
    return runs[0], spent[0] / 1e6


def bench(workload: Workload, repeat: int) -> Row:
    present = [(name, call) for name, call in tools() if call is not None]
    absent = [name for name, call in tools() if call is None]
    # Warm-up (plans, imports) and the trace's figures.
    args, kwargs = workload.make_args()
    expected = workload.func(*args, **kwargs)
    args, kwargs = workload.make_args()
    root = tracer.track(workload.func, *args, **kwargs)
    match = workload.same_result(expected, root.value)
    trace = root.trace
    calls = len(trace.frames()[0])
    nodes, events = len(trace), trace.events
    del root, trace, expected
    for _, call in present:
        timed(workload, call)
    gc_untraced, _ = collections_during(workload, untraced)
    gc_traced, gc_traced_ms = collections_during(workload, traced)

    best = [float("inf")] * (1 + len(present))
    runs = [untraced, *(call for _, call in present)]
    for round_ in range(repeat):
        # Rotate the order so no tool always runs right after the untraced call.
        order = [0, *((round_ + k) % len(present) + 1 for k in range(len(present)))]
        for i in order:
            best[i] = min(best[i], timed(workload, runs[i]))
    base = best[0]
    ratios: dict[str, float | None] = {name: t / base for (name, _), t in zip(present, best[1:])}
    ratios.update({name: None for name in absent})
    return Row(name=workload.name, untraced_ms=base / 1e6, ratios=ratios, calls=calls,
               nodes=nodes, events=events, traced_ms=best[1] / 1e6, match=match,
               gc_untraced=gc_untraced, gc_traced=gc_traced, gc_traced_ms=gc_traced_ms)


def format_rows(rows: list[Row]) -> str:
    names = [name for name, _ in tools()]
    head = ["workload", "untraced ms", *names, "calls", "nodes", "events/call", "nodes/call",
            "ns/call", "ns/node", "gc untraced", "gc traced"]
    lines = [head]
    for r in rows:
        per_call = r.calls or None
        cells = [r.name + ("" if r.match else " MISMATCH"), f"{r.untraced_ms:.2f}"]
        cells += ["n/a" if r.ratios.get(n) is None else f"{r.ratios[n]:.1f}x" for n in names]
        cells += [f"{r.calls:,}", f"{r.nodes:,}",
                  f"{r.events / per_call:.1f}" if per_call else "n/a",
                  f"{r.nodes / per_call:.1f}" if per_call else "n/a",
                  f"{r.traced_ms * 1e6 / per_call:,.0f}" if per_call else "n/a",
                  f"{r.traced_ms * 1e6 / r.nodes:.0f}",
                  "n/a" if r.gc_untraced is None else f"{r.gc_untraced}",
                  "n/a" if r.gc_traced is None else f"{r.gc_traced} ({r.gc_traced_ms:.1f} ms)"]
        lines.append(cells)
    widths = [max(len(line[i]) for line in lines) for i in range(len(head))]
    out = []
    for n, line in enumerate(lines):
        out.append("  ".join([line[0].ljust(widths[0]),
                              *(c.rjust(w) for c, w in zip(line[1:], widths[1:]))]))
        if n == 0:
            out.append("  ".join("-" * w for w in widths))
    return "\n".join(out)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=9, metavar="N",
                        help="timed runs of each tool; the minimum is kept (default 9)")
    parser.add_argument("--only", metavar="NAME,...",
                        help="comma-separated workloads (default: all of " + ", ".join(BY_NAME) + ")")
    parser.add_argument("--json", metavar="PATH", help="also write the rows as JSON to PATH")
    parser.add_argument("--clock", choices=sorted(CLOCKS), default="wall",
                        help="time runs by the wall clock (default) or by the thread's CPU "
                             "time, which a loaded machine disturbs less")
    args = parser.parse_args(argv)
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    if args.only:
        names = [n.strip() for n in args.only.split(",") if n.strip()]
        unknown = [n for n in names if n not in BY_NAME]
        if unknown:
            parser.error(f"unknown workload(s): {', '.join(unknown)}; choose from {', '.join(BY_NAME)}")
        args.workloads = [BY_NAME[n] for n in names]
    else:
        args.workloads = list(WORKLOADS)
    return args


def main(argv: list[str] | None = None) -> int:
    global clock
    args = parse_args(argv)
    clock = CLOCKS[args.clock]
    print(f"Python {platform.python_version()} | tracer {getattr(tracer, '__version__', 'n/a')}"
          f" | best of {args.repeat}, interleaved, {args.clock} clock", flush=True)
    rows = []
    for workload in args.workloads:
        print(f"running {workload.name}: {workload.description} ...", file=sys.stderr, flush=True)
        rows.append(bench(workload, args.repeat))
    print(format_rows(rows))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as out:
            json.dump({"python": platform.python_version(), "repeat": args.repeat,
                       "clock": args.clock,
                       "rows": [asdict(r) for r in rows]}, out, indent=2)
    bad = [r.name for r in rows if not r.match]
    if bad:
        print(f"MISMATCH: traced results differ for {', '.join(bad)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
