"""Benchmark runner: how much does ``tracer.track`` cost compared with a plain call?

Usage::

    python bench/run.py [--repeat N] [--only NAME,...] [--json PATH]

For every workload in ``bench/workloads.py`` this runs the function untraced and
under ``tracer.track`` in the same process, interleaved, one warm-up of each
first and then the minimum of N timed repeats of each (``gc.collect()`` before
every timed run, fresh arguments from the workload's factory for every run).

It prints one row per workload: untraced and traced time, their ratio, the
number of nodes recorded, the tracing overhead per node
((traced - untraced) / nodes), the raw traced time per node, and the bytes per
node of the trace's columns.  Columns the tracer cannot supply yet are shown as
"n/a".

It also checks, once per workload, that the traced run returned the same value
as the untraced one; any difference is reported as MISMATCH and makes the
runner exit with status 1.
"""

from __future__ import annotations

import argparse
import gc
import json
import platform
import sys
import time
from dataclasses import asdict, dataclass
from typing import Any, Callable

import tracer

from workloads import BY_NAME, WORKLOADS, Workload


@dataclass
class Row:
    """One line of results; ``None`` marks a figure the tracer did not provide."""

    name: str
    untraced_ms: float
    traced_ms: float
    ratio: float
    nodes: int | None
    overhead_ns_per_node: float | None
    traced_ns_per_node: float | None
    bytes_per_node: float | None
    match: bool


def timed(workload: Workload, call: Callable[..., Any]) -> tuple[int, Any]:
    """Run ``call(func, *args, **kwargs)`` once on fresh arguments.

    Returns the elapsed nanoseconds and the call's result.
    """
    args, kwargs = workload.make_args()
    gc.collect()
    start = time.perf_counter_ns()
    result = call(workload.func, *args, **kwargs)
    elapsed = time.perf_counter_ns() - start
    return elapsed, result


def untraced(func: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    return func(*args, **kwargs)


def trace_stats(root: Any) -> tuple[int | None, int | None]:
    """The number of nodes recorded and the bytes of the trace's columns."""
    try:
        trace = root.trace
    except AttributeError:
        return None, None
    try:
        nodes = len(trace)
    except (AttributeError, TypeError):
        nodes = None
    try:
        nbytes = trace.nbytes
    except AttributeError:
        nbytes = None
    return nodes, nbytes


def per_node(amount: float | None, nodes: int | None) -> float | None:
    if amount is None or not nodes:
        return None
    return amount / nodes


def check_result(workload: Workload, expected: Any, root: Any) -> bool:
    try:
        got = root.value
    except AttributeError:
        print(f"MISMATCH in {workload.name}: the root node has no .value", file=sys.stderr)
        return False
    if workload.same_result(expected, got):
        return True
    print(
        f"MISMATCH in {workload.name}: traced result differs from untraced\n"
        f"  untraced: {short_repr(expected)}\n"
        f"  traced:   {short_repr(got)}",
        file=sys.stderr,
    )
    return False


def short_repr(value: Any, limit: int = 200) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def bench(workload: Workload, repeat: int) -> Row:
    # Warm-up, which also supplies the result check and the trace statistics.
    _, expected = timed(workload, untraced)
    _, root = timed(workload, tracer.track)
    match = check_result(workload, expected, root)
    nodes, nbytes = trace_stats(root)
    del expected, root

    best_untraced = best_traced = None
    for _ in range(repeat):
        t, result = timed(workload, untraced)
        del result
        best_untraced = t if best_untraced is None else min(best_untraced, t)
        t, result = timed(workload, tracer.track)
        del result
        best_traced = t if best_traced is None else min(best_traced, t)

    return Row(
        name=workload.name,
        untraced_ms=best_untraced / 1e6,
        traced_ms=best_traced / 1e6,
        ratio=best_traced / best_untraced if best_untraced else float("inf"),
        nodes=nodes,
        overhead_ns_per_node=per_node(best_traced - best_untraced, nodes),
        traced_ns_per_node=per_node(best_traced, nodes),
        bytes_per_node=per_node(nbytes, nodes),
        match=match,
    )


COLUMNS = [
    # heading, Row field, format
    ("workload", "name", "{}"),
    ("untraced ms", "untraced_ms", "{:.2f}"),
    ("traced ms", "traced_ms", "{:.2f}"),
    ("ratio", "ratio", "{:.1f}x"),
    ("nodes", "nodes", "{:,}"),
    ("ns/node (overhead)", "overhead_ns_per_node", "{:.1f}"),
    ("ns/node (raw)", "traced_ns_per_node", "{:.1f}"),
    ("bytes/node", "bytes_per_node", "{:.1f}"),
]


def format_table(rows: list[Row]) -> str:
    cells = [[heading for heading, _, _ in COLUMNS]]
    for row in rows:
        line = []
        for _, field, fmt in COLUMNS:
            value = getattr(row, field)
            line.append("n/a" if value is None else fmt.format(value))
        if not row.match:
            line[0] += " MISMATCH"
        cells.append(line)
    widths = [max(len(line[i]) for line in cells) for i in range(len(COLUMNS))]
    lines = []
    for n, line in enumerate(cells):
        first = line[0].ljust(widths[0])
        rest = (cell.rjust(width) for cell, width in zip(line[1:], widths[1:]))
        lines.append("  ".join([first, *rest]))
        if n == 0:
            lines.append("  ".join("-" * width for width in widths))
    return "\n".join(lines)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5, metavar="N",
                        help="timed runs of each variant; the minimum is kept (default 5)")
    parser.add_argument("--only", metavar="NAME,...",
                        help="comma-separated workloads to run (default: all of "
                             + ", ".join(BY_NAME) + ")")
    parser.add_argument("--json", metavar="PATH", help="also write the rows as JSON to PATH")
    args = parser.parse_args(argv)
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    if args.only:
        names = [name.strip() for name in args.only.split(",") if name.strip()]
        unknown = [name for name in names if name not in BY_NAME]
        if unknown:
            parser.error(f"unknown workload(s): {', '.join(unknown)}; "
                         f"choose from {', '.join(BY_NAME)}")
        args.workloads = [BY_NAME[name] for name in names]
    else:
        args.workloads = list(WORKLOADS)
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    version = getattr(tracer, "__version__", "n/a")
    print(f"Python {platform.python_version()} ({platform.python_implementation()})"
          f" | tracer {version} | best of {args.repeat} run(s) each", flush=True)
    print(flush=True)

    rows = []
    for workload in args.workloads:
        print(f"running {workload.name}: {workload.description} ...", file=sys.stderr, flush=True)
        rows.append(bench(workload, args.repeat))

    print(format_table(rows))

    if args.json:
        with open(args.json, "w", encoding="utf-8") as out:
            json.dump(
                {
                    "python": platform.python_version(),
                    "implementation": platform.python_implementation(),
                    "tracer_version": version,
                    "repeat": args.repeat,
                    "rows": [asdict(row) for row in rows],
                },
                out,
                indent=2,
            )
            out.write("\n")

    mismatched = [row.name for row in rows if not row.match]
    if mismatched:
        print(f"\nMISMATCH: traced results differ from untraced ones for: "
              f"{', '.join(mismatched)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
