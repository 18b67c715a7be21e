"""Work counts: how many calls of each callee, nodes of each function or of each
line a traced run did.  Deterministic (the same program on the same inputs counts
the same on any machine, at any load), so a benchmark can report them beside its
times, and a suite can compare them across runs and versions (compare.py)."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path

import numpy as np

from ..views.nodes import Node
from ..views.table import table

__all__ = ["counts", "Counts", "BY"]

#: What `counts` counts by: the calls of each callee (its qualified name), the nodes
#: recorded in each function, the nodes recorded at each line (`file:line`).
BY = ("callee", "function", "line")


class Counts(dict):
    """Counts by name (a dict: name -> count), summed over `runs` runs.

    `by` says what was counted (see `BY`), `total` is the sum of the counts; `per_run`
    gives the mean count per run (what `compare_counts` compares, so sets of runs of
    different sizes compare)."""

    def __init__(self, by: str, values: Mapping[str, int] = (), runs: int = 1):
        super().__init__(values)
        self.by = by
        self.runs = runs

    @property
    def total(self) -> int:
        return int(sum(self.values()))

    def per_run(self, name: str) -> float:
        """The mean count of `name` per run (0 if it never occurred)."""
        return self.get(name, 0) / self.runs

    def top(self, n: int = 10) -> list[tuple[str, int]]:
        """The n largest counts, largest first (ties by name)."""
        return sorted(self.items(), key=lambda kv: (-kv[1], kv[0]))[:n]

    def as_dict(self) -> dict:
        """Plain data (JSON-able): `by`, `runs` and the counts."""
        return {"by": self.by, "runs": self.runs, "counts": dict(sorted(self.items()))}

    @classmethod
    def from_dict(cls, data: Mapping) -> "Counts":
        """Counts written by `as_dict` (a baseline file)."""
        try:
            return cls(str(data["by"]), {str(k): int(v) for k, v in data["counts"].items()},
                       int(data.get("runs", 1)))
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise ValueError(f"not work counts written by Counts.as_dict ({exc})") from None

    def __add__(self, other: "Counts") -> "Counts":
        if not isinstance(other, Counts) or other.by != self.by:
            return NotImplemented
        out = Counts(self.by, self, self.runs + other.runs)
        for name, n in other.items():
            out[name] = out.get(name, 0) + n
        return out

    def __repr__(self) -> str:
        return (f"<Counts by {self.by} over {self.runs} run{'s' * (self.runs != 1)}: "
                f"{len(self)} names, total {self.total:,}>")

    def __str__(self) -> str:
        rows = self.top(len(self))
        width = max([len(self.by)] + [len(name) for name, _ in rows])
        lines = [f"{self.by:<{width}}  {'count':>12}"]
        lines += [f"{name:<{width}}  {n:>12,}" for name, n in rows]
        return "\n".join(lines)


def counts(runs, by: str = "callee") -> Counts:
    """Work counts of a traced run, or summed over a set of runs.

    `runs`: a node (the root `tracer.track` returned, or any call node: its subtree
    is counted), a saved trace's path, or an iterable of those (a list of roots, a
    `tracer.persist.Runs` dataset, a folder of saved traces).  `by`:

    - ``"callee"``: calls of each callable, by its qualified name (`math.sqrt`,
      `list.append`, `Body.advance`: the names of `table()`'s callee column);
    - ``"function"``: nodes recorded in each function (its qualified name): the work
      done in its own body;
    - ``"line"``: nodes recorded at each source line, as ``file.py:38``.
    """
    if by not in BY:
        raise ValueError(f"by must be one of {BY}, not {by!r}")
    if isinstance(runs, (str, os.PathLike)) and Path(runs).is_dir():
        runs = _saved_traces(Path(runs))
    if isinstance(runs, (Node, str, os.PathLike)):
        return _count_one(_root(runs), by)
    if not isinstance(runs, Iterable):
        raise TypeError("counts needs a node of a trace (what tracer.track returns), a saved "
                        f"trace's path, or an iterable of those, not {type(runs).__name__}")
    total = None
    for item in runs:
        one = _count_one(_root(item), by)
        total = one if total is None else total + one
    if total is None:
        raise ValueError("counts of no runs: give at least one trace")
    return total


def _saved_traces(folder: Path) -> list[Path]:
    found = sorted(p for p in folder.rglob("*") if p.suffix in (".parquet", ".arrow",
                                                                 ".feather", ".ipc"))
    if not found:
        raise FileNotFoundError(f"no saved traces (*.parquet, *.arrow) under {str(folder)!r}")
    return found


def _root(item) -> Node:
    if isinstance(item, Node):
        return item
    if isinstance(item, (str, os.PathLike)):
        from ..persist.parquet import load
        return load(item)
    raise TypeError("counts needs nodes of traces (what tracer.track returns) or saved "
                    f"traces' paths, not {type(item).__name__}")


def _count_one(node: Node, by: str) -> Counts:
    trace = node.trace
    lo, hi = node.row, trace.end(node.row)
    tab = table(trace)
    where = None
    if lo > 0 or hi < len(trace):
        where = np.zeros(len(trace), dtype=bool)
        where[lo:hi] = True
    if by == "callee":
        names, n = tab.counts("callee", where)
        return Counts(by, {name: int(k) for name, k in zip(names.tolist(), n.tolist()) if name})
    if by == "function":
        names, n = tab.counts("function", where)
        return Counts(by, {name: int(k) for name, k in zip(names.tolist(), n.tolist())
                           if name})           # "": the root row, recorded in no function
    return _line_counts(trace, tab, lo, hi)


def _line_counts(trace, tab, lo: int, hi: int) -> Counts:
    """Nodes per `file:line`, counted on (code, line) pairs as one int key each (a
    bincount over the pairs' range), named once per pair."""
    code = tab["code"][lo:hi]
    line = tab["line"][lo:hi]
    keep = (code >= 0) & (line >= 0)
    if not keep.any():
        return Counts("line", {})
    width = int(line.max()) + 1
    keys = code[keep].astype(np.int64) * width + line[keep]
    present, n = np.unique(keys, return_counts=True) if int(keys.max()) > 4 * len(keys) \
        else _bincount(keys)
    out: dict[str, int] = {}
    for key, k in zip(present.tolist(), n.tolist()):
        cid, ln = divmod(key, width)
        name = f"{os.path.basename(trace.codes[cid].co_filename)}:{ln}"
        out[name] = out.get(name, 0) + int(k)
    return Counts("line", out)


def _bincount(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    counted = np.bincount(keys)
    present = np.flatnonzero(counted)
    return present, counted[present]
