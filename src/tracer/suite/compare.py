"""`compare_counts(a, b)`: what work changed between two traces, two sets of runs or
two versions of a program, name by name with relative changes, as `pyperf
compare_to` states what changed in times."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field

from .counts import Counts, counts

__all__ = ["compare_counts", "CountsComparison", "CountChange"]


@dataclass
class CountChange:
    """One name's count in a and in b (the mean per run for sets of runs)."""

    name: str
    a: float
    b: float

    @property
    def change(self) -> float:
        return self.b - self.a

    @property
    def relative(self) -> float | None:
        """(b - a) / a; None when a is 0 (a name that is new in b)."""
        return None if self.a == 0 else (self.b - self.a) / self.a

    def as_dict(self) -> dict:
        return {"name": self.name, "a": self.a, "b": self.b, "change": self.change,
                "relative": self.relative}


@dataclass
class CountsComparison:
    """What `compare_counts` returns: the names whose counts changed (largest change
    first), how many did not, and the totals.  `str()` is a report."""

    by: str
    changed: list[CountChange]
    unchanged: int
    total_a: float
    total_b: float
    runs: tuple[int, int] = (1, 1)
    threshold: float = 0.0
    below_threshold: list[CountChange] = field(default_factory=list)

    @property
    def same(self) -> bool:
        """No count changed beyond the threshold."""
        return not self.changed

    def as_dict(self) -> dict:
        """Plain data (JSON-able)."""
        return {"by": self.by, "runs": list(self.runs), "threshold": self.threshold,
                "total_a": self.total_a, "total_b": self.total_b, "same": self.same,
                "unchanged": self.unchanged,
                "changed": [c.as_dict() for c in self.changed],
                "below_threshold": [c.as_dict() for c in self.below_threshold]}

    def to_json(self) -> str:
        return json.dumps(self.as_dict(), indent=2)

    def __str__(self) -> str:
        return format_comparison(self)


def compare_counts(a, b, by: str = "callee", threshold: float = 0.0) -> CountsComparison:
    """Compare the work counts of `a` and `b` by `by` (see `tracer.counts`).

    `a` and `b` are what `counts` takes (a root node, a saved trace's path, a list of
    them, a folder of saved traces) or `Counts` already made (a baseline read back
    with `Counts.from_dict`).  Sets of runs compare by their mean count per run.
    A name whose count changed by no more than `threshold` (relative: 0.05 is 5 %)
    is listed in `below_threshold`, not in `changed`; a name new in b or gone from
    it is always a change.
    """
    if threshold < 0:
        raise ValueError(f"threshold must be 0 or more (a relative change), not {threshold}")
    ca = a if isinstance(a, Counts) else counts(a, by)
    cb = b if isinstance(b, Counts) else counts(b, by)
    if ca.by != by or cb.by != by:
        raise ValueError(f"counts by {ca.by} and {cb.by} compared by {by}: count both by {by}")
    changed, below, unchanged = [], [], 0
    for name in sorted(set(ca) | set(cb)):
        c = CountChange(name, ca.per_run(name), cb.per_run(name))
        if c.a == c.b:
            unchanged += 1
        elif c.relative is not None and c.b != 0 and abs(c.relative) <= threshold:
            below.append(c)
        else:
            changed.append(c)
    changed.sort(key=lambda c: (-abs(c.change), c.name))
    return CountsComparison(by, changed, unchanged, ca.total / ca.runs, cb.total / cb.runs,
                            (ca.runs, cb.runs), threshold, below)


def _number(x: float) -> str:
    return f"{x:,.0f}" if float(x).is_integer() else f"{x:,.2f}"


def _signed(x: float) -> str:
    return ("+" if x > 0 else "") + _number(x)


def _relative(c: CountChange) -> str:
    if c.a == 0:
        return "new"
    if c.b == 0:
        return "gone"
    return f"{c.relative:+.1%}"


def format_comparison(d: CountsComparison, show: int = 20) -> str:
    """A report: one line per changed name (at most `show`), then the totals."""
    runs = "" if d.runs == (1, 1) else f" (mean per run over {d.runs[0]} and {d.runs[1]} runs)"
    if d.same:
        head = f"work by {d.by}: no change{runs}"
        if d.below_threshold:
            head += f" beyond {d.threshold:.1%} ({len(d.below_threshold)} below it)"
        return f"{head}; {d.unchanged:,} names, total {_number(d.total_a)}"
    rows = d.changed[:show]
    width = max([len(d.by)] + [len(c.name) for c in rows])
    lines = [f"work by {d.by}{runs}:",
             f"{d.by:<{width}}  {'a':>10}  {'b':>10}  {'change':>10}  {'relative':>8}"]
    for c in rows:
        lines.append(f"{c.name:<{width}}  {_number(c.a):>10}  {_number(c.b):>10}  "
                     f"{_signed(c.change):>10}  {_relative(c):>8}")
    if len(d.changed) > show:
        lines.append(f"... and {len(d.changed) - show:,} more changed")
    total = CountChange("total", d.total_a, d.total_b)
    lines.append(f"{'total':<{width}}  {_number(total.a):>10}  {_number(total.b):>10}  "
                 f"{_signed(total.change):>10}  {_relative(total):>8}")
    tail = f"{len(d.changed):,} changed, {d.unchanged:,} unchanged"
    if d.below_threshold:
        tail += f", {len(d.below_threshold):,} within {d.threshold:.1%}"
    lines.append(tail)
    return "\n".join(lines)
