"""Benchmark runner: how much does ``tracer.track`` cost compared with a plain call?

Usage::

    python bench/run.py [--repeat N] [--only NAME,...] [--json PATH] [--contexts]

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

Each run's result is dropped after its timing, and with it the trace
(``tracer.last_trace()`` holds a returned call's trace only weakly), so a traced
run does not pay for freeing the one before it.  The freed trace's column
buffers are kept for the next trace (``tracer.views.spare_columns_limit``), so the timed
runs, which follow the warm-up, record into memory an earlier run touched: the
steady state of a program that traces repeatedly.  The values a trace kept (the
program's own objects) are freed with it, and the allocator may give that memory
back to the system: a traced run that keeps much (the MLP's arrays) then pays
page faults for it again.

The machine the results were taken on is shared and noisy; the minimum of more
repeats (``--repeat 25``) is the steadier figure.

With ``--contexts`` it prints instead what tracking contexts cost: the untraced
time, the traced time under each context of ``CONTEXTS`` as a ratio to it, the
number of nodes recorded (under ``tracer.context.DEFAULT``) and the number of nodes the
metadata hook annotated; the results of every context are checked as above.
The protocol is the same, all the variants interleaved, except that the previous
trace is freed before the timer starts, so no variant pays for freeing another
variant's (bigger) trace, and the order of the variants rotates from round to
round, so no variant always runs first after the untraced run (which pays page
faults); use ``--repeat 2`` or more.
"""

from __future__ import annotations

import argparse
import gc
import json
import platform
import sys
import time
from dataclasses import asdict, dataclass
from typing import Any, Callable, Sequence

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
    events_per_node: float | None
    match: bool


def timed(workload: Workload, call: Callable[..., Any],
          release_trace: bool = False) -> tuple[int, Any]:
    """Run ``call(func, *args, **kwargs)`` once on fresh arguments.

    Returns the elapsed nanoseconds and the call's result.  With ``release_trace``
    the trace that ``tracer.last_trace()`` still holds is freed first, outside the
    timed region (see ``release_last_trace``).
    """
    args, kwargs = workload.make_args()
    if release_trace:
        release_last_trace()
    gc.collect()
    start = time.perf_counter_ns()
    result = call(workload.func, *args, **kwargs)
    elapsed = time.perf_counter_ns() - start
    return elapsed, result


def untraced(func: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    return func(*args, **kwargs)


def _nothing() -> None:
    return None


def release_last_trace() -> None:
    """Free the trace of the latest ``track`` call if ``tracer.last_trace()`` keeps it
    (it does when that call raised), so that no timed run pays for freeing it.
    Tracking a no-op leaves a tiny trace in its place.
    """
    tracer.track(_nothing)


def best_times(workload: Workload, calls: Sequence[Callable[..., Any]], repeat: int,
               release_trace: bool = False, rotate: bool = False) -> list[int]:
    """The minimum nanoseconds of each of ``calls`` over ``repeat`` interleaved rounds.

    Each round times every call once with ``timed`` (passing it ``release_trace``);
    each result is dropped before the next run.  The calls run in the given order,
    or with ``rotate`` round r starts at call r (cyclically), so that no call
    always runs in the same place: a run can depend on the one before it (the
    first traced run after an untraced one pays page faults for memory the
    untraced run gave back).
    """
    best: list[int | None] = [None] * len(calls)
    for round_ in range(repeat):
        start = round_ % len(calls) if rotate else 0
        for i in (*range(start, len(calls)), *range(start)):
            t, result = timed(workload, calls[i], release_trace)
            del result
            best[i] = t if best[i] is None else min(best[i], t)
    return best  # type: ignore[return-value]


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


def check_result(workload: Workload, expected: Any, root: Any, variant: str = "traced") -> bool:
    """Whether ``root.value`` equals the untraced result; reports a MISMATCH if not.

    ``variant`` names the traced run in the report (e.g. the context used).
    """
    where = workload.name if variant == "traced" else f"{workload.name} ({variant})"
    try:
        got = root.value
    except AttributeError:
        print(f"MISMATCH in {where}: the root node has no .value", file=sys.stderr)
        return False
    if workload.same_result(expected, got):
        return True
    print(
        f"MISMATCH in {where}: traced result differs from untraced\n"
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
    events = getattr(getattr(root, "trace", None), "events", None)
    del expected, root

    best_untraced, best_traced = best_times(workload, [untraced, tracer.track], repeat)

    return Row(
        name=workload.name,
        untraced_ms=best_untraced / 1e6,
        traced_ms=best_traced / 1e6,
        ratio=best_traced / best_untraced if best_untraced else float("inf"),
        nodes=nodes,
        overhead_ns_per_node=per_node(best_traced - best_untraced, nodes),
        traced_ns_per_node=per_node(best_traced, nodes),
        bytes_per_node=per_node(nbytes, nodes),
        events_per_node=events / nodes if events is not None and nodes else None,
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
    ("events/node", "events_per_node", "{:.2f}"),
]


def format_table(rows: Sequence[Any], columns: list[tuple[str, Any, str]] = COLUMNS) -> str:
    """Rows as an aligned text table.

    ``columns`` holds (heading, field, format); a field is the name of an attribute
    of the row or a function of the row.  Rows need a ``match`` attribute.
    """
    cells = [[heading for heading, _, _ in columns]]
    for row in rows:
        line = []
        for _, field, fmt in columns:
            value = field(row) if callable(field) else getattr(row, field)
            line.append("n/a" if value is None else fmt.format(value))
        if not row.match:
            line[0] += " MISMATCH"
        cells.append(line)
    widths = [max(len(line[i]) for line in cells) for i in range(len(columns))]
    lines = []
    for n, line in enumerate(cells):
        first = line[0].ljust(widths[0])
        rest = (cell.rjust(width) for cell, width in zip(line[1:], widths[1:]))
        lines.append("  ".join([first, *rest]))
        if n == 0:
            lines.append("  ".join("-" * width for width in widths))
    return "\n".join(lines)


# --- what tracking contexts cost (--contexts) ----------------------------------------------

class NothingContext(tracer.Context):
    """A subclass that overrides nothing: as passive as ``tracer.context.DEFAULT``."""


class CanrecurContext(tracer.Context):
    """Overrides only ``canrecur`` (always True): one Python call per call event."""

    def canrecur(self, f, *args, **kwargs) -> bool:
        return True


class MetadataContext(tracer.Context):
    """Overrides only ``trackedprimitive``: marks every primitive call node's metadata."""

    def trackedprimitive(self, node) -> None:
        node.metadata["seen"] = True


# Label and context (None: tracer.context.DEFAULT) of each traced variant, in table order.
CONTEXTS: list[tuple[str, tracer.Context | None]] = [
    ("DEFAULT", None),
    ("nothing", NothingContext()),
    ("canrecur", CanrecurContext()),
    ("metadata-hook", MetadataContext()),
    # Snapshot policies: a copy of every mutable builtin (in C), a deepcopy of every value.
    ("snapshot-copy", tracer.Context(snapshot="copy")),
    ("snapshot-deepcopy", tracer.Context(snapshot="deepcopy")),
]
HOOKED = "metadata-hook"  # the variant whose annotated nodes the table shows


def tracking_with(ctx: tracer.Context | None) -> Callable[..., Any]:
    """``tracer.track`` under ``ctx``, called the way ``timed`` calls ``untraced``."""

    def track(func: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        return tracer.track(func, *args, ctx=ctx, **kwargs)

    return track


@dataclass
class ContextStats:
    """One context's figures on one workload."""

    traced_ms: float
    ratio: float
    nodes: int | None
    annotated: int | None  # nodes with metadata in the trace (one run)
    match: bool


@dataclass
class ContextRow:
    """One line of the --contexts table: a workload under every context of CONTEXTS."""

    name: str
    untraced_ms: float
    contexts: dict[str, ContextStats]  # by label, in the order of CONTEXTS

    @property
    def match(self) -> bool:
        return all(stats.match for stats in self.contexts.values())


def annotated_nodes(root: Any) -> int | None:
    """The number of nodes of ``root``'s trace that carry metadata."""
    try:
        return len(root.trace.metadata)
    except (AttributeError, TypeError):
        return None


def bench_contexts(workload: Workload, repeat: int) -> ContextRow:
    """Time ``workload`` untraced and under every context of CONTEXTS, interleaved."""
    calls = [tracking_with(ctx) for _, ctx in CONTEXTS]

    # Warm-up of every variant, which also supplies the result checks and statistics.
    _, expected = timed(workload, untraced)
    checks = []
    for (label, _), call in zip(CONTEXTS, calls):
        _, root = timed(workload, call)
        nodes, _ = trace_stats(root)
        checks.append((check_result(workload, expected, root, label), nodes,
                       annotated_nodes(root)))
        del root
    del expected

    best_untraced, *best_traced = best_times(workload, [untraced, *calls], repeat,
                                             release_trace=True, rotate=True)

    contexts = {
        label: ContextStats(
            traced_ms=best / 1e6,
            ratio=best / best_untraced if best_untraced else float("inf"),
            nodes=nodes,
            annotated=annotated,
            match=match,
        )
        for (label, _), best, (match, nodes, annotated) in zip(CONTEXTS, best_traced, checks)
    }
    row = ContextRow(name=workload.name, untraced_ms=best_untraced / 1e6, contexts=contexts)
    warn_node_counts(row)
    return row


def warn_node_counts(row: ContextRow) -> None:
    """Report on stderr when the contexts recorded different numbers of nodes."""
    counts = {label: stats.nodes for label, stats in row.contexts.items()}
    if len(set(counts.values())) > 1:
        print(f"note: {row.name}: node counts differ between contexts: {counts}",
              file=sys.stderr)


def context_columns() -> list[tuple[str, Any, str]]:
    """The columns of the --contexts table (see ``format_table``)."""
    first = CONTEXTS[0][0]
    return [
        ("workload", "name", "{}"),
        ("untraced ms", "untraced_ms", "{:.2f}"),
        *((f"{label} ratio", lambda row, label=label: row.contexts[label].ratio, "{:.2f}x")
          for label, _ in CONTEXTS),
        ("nodes", lambda row: row.contexts[first].nodes, "{:,}"),
        (f"{HOOKED} nodes", lambda row: row.contexts[HOOKED].annotated, "{:,}"),
    ]


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5, metavar="N",
                        help="timed runs of each variant; the minimum is kept (default 5)")
    parser.add_argument("--only", metavar="NAME,...",
                        help="comma-separated workloads to run (default: all of "
                             + ", ".join(BY_NAME) + ")")
    parser.add_argument("--json", metavar="PATH", help="also write the rows as JSON to PATH")
    parser.add_argument("--contexts", action="store_true",
                        help="instead of the default table, time tracking under each of "
                             + ", ".join(label for label, _ in CONTEXTS)
                             + " as ratios to the untraced time")
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

    run = bench_contexts if args.contexts else bench
    rows = []
    for workload in args.workloads:
        print(f"running {workload.name}: {workload.description} ...", file=sys.stderr, flush=True)
        rows.append(run(workload, args.repeat))

    if args.contexts:
        print(format_table(rows, context_columns()))
    else:
        print(format_table(rows))

    if args.json:
        report = {
            "python": platform.python_version(),
            "implementation": platform.python_implementation(),
            "tracer_version": version,
            "repeat": args.repeat,
        }
        if args.contexts:
            report["contexts"] = [label for label, _ in CONTEXTS]
            report["context_rows"] = [asdict(row) for row in rows]
        else:
            report["rows"] = [asdict(row) for row in rows]
        write_json(args.json, report)

    mismatched = [row.name for row in rows if not row.match]
    if mismatched:
        print(f"\nMISMATCH: traced results differ from untraced ones for: "
              f"{', '.join(mismatched)}", file=sys.stderr)
        return 1
    return 0


def write_json(path: str, report: dict[str, Any]) -> None:
    """Write ``report`` to ``path`` as indented JSON."""
    with open(path, "w", encoding="utf-8") as out:
        json.dump(report, out, indent=2)
        out.write("\n")


if __name__ == "__main__":
    sys.exit(main())
