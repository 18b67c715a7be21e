"""`tracer.diff(a, b)`: how two traces of the same program (or of two versions of it)
differ: where control flow first went another way, which values differ on the path
both took, and which calls one made that the other did not.

The two call trees are walked together.  In each pair of matched calls the children
are paired by what they are (kind, function and bytecode position; a recorded call by
the function it ran), as a sequence alignment (difflib) when the two lists differ, so
the walk picks up again after a branch went another way.  Site keys are computed on
the columns with numpy; values are compared only for paired nodes.
"""

from __future__ import annotations

import difflib
from dataclasses import asdict, dataclass, field

import numpy as np

from ..views.nodes import Node, node_at
from ..views.show import format_node
from ..views.values import short_value
from ..export.rows import ARGUMENT, JUMP, NESTED, call_name, callee_codes, code_key
from .values import same_value

__all__ = ["diff", "TraceDiff", "Divergence", "ValueChange", "CallChange"]


@dataclass
class Divergence:
    """The first place (in the first trace's order) where the runs went different ways."""

    reason: str           # "branch": a jump went elsewhere; "structure": different nodes
    path: str             # the calls from the root down to where it happened
    function: str         # the function whose body diverged
    line: int | None      # its source line in the first trace (in the second when absent there)
    a: str                # what the first trace did there (a node as printlevels shows it)
    b: str                # what the second did
    row_a: int | None     # the nodes' rows (None where a side has no node there)
    row_b: int | None


@dataclass
class ValueChange:
    """A node both runs recorded whose values differ."""

    path: str
    function: str
    line: int | None
    index: int | None     # the node's @k in the first trace (None: the compared call itself)
    a: str                # short texts of the two values
    b: str
    row_a: int
    row_b: int


@dataclass
class CallChange:
    """A recorded call one trace made and the other did not."""

    path: str             # the calls down to the one that made it
    function: str         # the function called
    index: int            # its @k in the call that made it
    nodes: int            # nodes inside it
    row: int              # its row in its own trace


@dataclass
class TraceDiff:
    """What `tracer.diff` returns; `str(d)` is a readable report."""

    divergence: Divergence | None
    values: list[ValueChange]
    added: list[CallChange]      # calls in b only
    removed: list[CallChange]    # calls in a only
    paired: int                  # nodes paired between the two traces
    nodes_a: int
    nodes_b: int
    values_total: int            # value changes found (`values` keeps the first `limit`)
    only_a: int = 0              # nodes of a not paired (subtrees included)
    only_b: int = 0              # nodes of b not paired
    notes: list[str] = field(default_factory=list)

    @property
    def same(self) -> bool:
        """No divergence, no differing value, no call added or removed."""
        return (self.divergence is None and not self.values_total and not self.added
                and not self.removed)

    def as_dict(self) -> dict:
        """Plain data (JSON-able)."""
        out = asdict(self)
        out["same"] = self.same
        return out

    def __str__(self) -> str:
        return format_diff(self)


def diff(a: Node, b: Node, *, rel_tol: float = 1e-9, abs_tol: float = 0.0,
         limit: int = 1000) -> TraceDiff:
    """Compare trace `a` with trace `b` (roots from `tracer.track` or `tracer.load`, or
    any two call nodes).

    Floats (and numpy arrays) count as equal within `rel_tol`/`abs_tol`
    (`math.isclose`'s meaning); objects without an equality of their own (a
    `random.Random`) by their repr without addresses.  At most `limit` value changes
    are kept (`values_total` counts them all).
    """
    for name, n in (("a", a), ("b", b)):
        if not isinstance(n, Node):
            raise TypeError(f"diff needs two nodes (tracer.track's results); {name} is "
                            f"{type(n).__name__}")
    codes: dict = {}
    walk = _Walk(_Side(a, codes), _Side(b, codes), rel_tol, abs_tol, limit)
    walk.run()
    return TraceDiff(
        divergence=walk.divergence, values=walk.values, added=walk.added,
        removed=walk.removed, paired=walk.paired, nodes_a=walk.a.hi - walk.a.lo,
        nodes_b=walk.b.hi - walk.b.lo, values_total=walk.values_total,
        only_a=walk.only[0], only_b=walk.only[1])


class _Side:
    """One trace's columns and the site key of each row of its subtree."""

    def __init__(self, node: Node, codes: dict):
        self.trace = trace = node.trace
        self.lo, self.hi = lo, hi = node.row, trace.end(node.row)
        cols = trace.columns()
        self.kind = cols["kind"]
        self.aux = cols["aux"]
        shared = np.array([codes.setdefault(code_key(c), len(codes)) for c in trace.codes] + [-1],
                          dtype=np.int64)  # the extra -1: code column -1 (no code) maps to it
        kind = cols["kind"][lo:hi].astype(np.int64)
        code = shared[cols["code"][lo:hi]]
        # What pairs a node with its counterpart: kind, function and bytecode offset;
        # an argument by its position, a recorded call by the function it ran (so a
        # call pairs across two versions of its caller whose offsets moved).
        where = cols["offset"][lo:hi].astype(np.int64)
        args = kind == ARGUMENT
        where[args] = cols["aux"][lo:hi][args]
        callee = callee_codes(cols, lo, hi)
        calls = kind == NESTED
        where[calls] = np.where(callee[calls] >= 0, shared[callee[calls]], -2)
        code[calls] = -1
        self.keys = kind | ((code + 2) << 3) | ((where + 2 ** 20) << 24)

    def key(self, rows: list[int]) -> np.ndarray:
        return self.keys[np.asarray(rows, dtype=np.int64) - self.lo]

    def node(self, row: int) -> Node:
        return node_at(self.trace, row)


class _Walk:
    def __init__(self, a: _Side, b: _Side, rel_tol: float, abs_tol: float, limit: int):
        self.a, self.b = a, b
        self.rel_tol, self.abs_tol, self.limit = rel_tol, abs_tol, limit
        self.divergence: Divergence | None = None
        self.first_row = None   # the divergence's place in a's preorder
        self.values: list[ValueChange] = []
        self.values_total = 0
        self.added: list[CallChange] = []
        self.removed: list[CallChange] = []
        self.paired = 0
        self.only = [0, 0]   # nodes of a, of b, left unpaired

    def run(self) -> None:
        a, b = self.a, self.b
        self.paired = 1
        if a.keys[0] != b.keys[0]:
            self.diverge("structure", (), a.lo, b.lo, a.lo)
            self.only = [a.hi - a.lo, b.hi - b.lo]
            self.paired = 0
            return
        self.compare_values((self._step(a.lo),), a.lo, b.lo)
        # Matched call pairs, walked depth first (a list, not recursion: traces nest
        # deeper than Python's recursion limit).
        stack = [(a.lo, b.lo, ())]
        while stack:
            ra, rb, path = stack.pop()
            path = path + (self._step(ra),)
            inner = self.pair_children(ra, rb, path)
            stack.extend((ca, cb, path) for ca, cb in reversed(inner))

    def _step(self, row: int) -> tuple[int | None, str]:
        trace = self.a.trace
        index = node_at(trace, row).index if trace.parent(row) >= 0 else None
        return index, call_name(trace, row)

    def pair_children(self, ra: int, rb: int, path: tuple) -> list[tuple[int, int]]:
        a, b = self.a, self.b
        kids_a, kids_b = a.trace.children(ra), b.trace.children(rb)
        blocks = _align(a.key(kids_a), b.key(kids_b))
        inner = []
        for tag, i0, i1, j0, j1 in blocks:
            if tag == "equal":
                for ca, cb in zip(kids_a[i0:i1], kids_b[j0:j1]):
                    self.paired += 1
                    if a.kind[ca] == JUMP:
                        if a.aux[ca] != b.aux[cb] or not same_value(
                                a.trace.value(ca), b.trace.value(cb)):
                            self.diverge("branch", path, ca, cb, ca)
                        continue
                    self.compare_values(path, ca, cb)
                    if a.kind[ca] == NESTED:
                        inner.append((ca, cb))
                continue
            # Nodes only one side has: the runs went different ways here.
            at = kids_a[i0] if i0 < len(kids_a) else a.trace.end(ra)
            self.diverge("structure", path, kids_a[i0] if i0 < i1 else None,
                         kids_b[j0] if j0 < j1 else None, at)
            for k, (side, rows, out) in enumerate(((a, kids_a[i0:i1], self.removed),
                                                   (b, kids_b[j0:j1], self.added))):
                if rows:
                    self.only[k] += side.trace.end(rows[-1]) - rows[0]
                for r in rows:
                    if side.kind[r] == NESTED:
                        out.append(self._call_change(side, r, path))
        return inner

    def compare_values(self, path: tuple, ra: int, rb: int) -> None:
        a, b = self.a, self.b
        if a.kind[ra] == ARGUMENT and a.aux[ra] == 0:
            return  # the callee itself: the same function, by the pairing key
        va, vb = a.trace.value(ra), b.trace.value(rb)
        if same_value(va, vb, self.rel_tol, self.abs_tol):
            return
        self.values_total += 1
        if len(self.values) < self.limit:
            node = a.node(ra)
            index = None if ra == a.lo else node.index
            self.values.append(ValueChange(
                _path_text(path), path[-1][1] if path else "", _line(node),
                index, short_value(va), short_value(vb), ra, rb))

    def diverge(self, reason: str, path: tuple, ra: int | None, rb: int | None, at: int) -> None:
        """Keep the divergence that comes first in a's row order (rows are preorder)."""
        if self.first_row is not None and at >= self.first_row:
            return
        self.first_row = at
        na = self.a.node(ra) if ra is not None else None
        nb = self.b.node(rb) if rb is not None else None
        self.divergence = Divergence(
            reason, _path_text(path), path[-1][1] if path else "",
            _line(na) if na is not None else _line(nb),
            format_node(na) if na is not None else "(nothing: the call had ended or went on elsewhere)",
            format_node(nb) if nb is not None else "(nothing: the call had ended or went on elsewhere)",
            ra, rb)

    def _call_change(self, side: _Side, row: int, path: tuple) -> CallChange:
        trace = side.trace
        return CallChange(_path_text(path), call_name(trace, row), side.node(row).index,
                          trace.end(row) - row - 1, row)


# Above this many pairs of unmatched middle nodes, a call's children are not aligned
# (difflib's matcher is quadratic): the middle counts as replaced.
_ALIGN_LIMIT = 4_000_000


def _align(ka: np.ndarray, kb: np.ndarray) -> list[tuple[str, int, int, int, int]]:
    """difflib-style opcodes pairing two children lists by their keys.

    The common prefix and suffix are found with numpy; only the middle between them
    (where a branch went another way) goes through difflib's matcher.
    """
    na, nb = len(ka), len(kb)
    n = min(na, nb)
    differ = np.flatnonzero(ka[:n] != kb[:n])
    head = int(differ[0]) if differ.size else n
    if head == na == nb:
        return [("equal", 0, na, 0, nb)]
    m = n - head
    differ = np.flatnonzero(ka[na - m:][::-1] != kb[nb - m:][::-1])
    tail = int(differ[0]) if differ.size else m
    ops = [("equal", 0, head, 0, head)] if head else []
    a0, a1, b0, b1 = head, na - tail, head, nb - tail
    if (a1 - a0) * (b1 - b0) <= _ALIGN_LIMIT:
        matcher = difflib.SequenceMatcher(None, ka[a0:a1].tolist(), kb[b0:b1].tolist(),
                                          autojunk=False)
        ops += [(tag, i0 + a0, i1 + a0, j0 + b0, j1 + b0)
                for tag, i0, i1, j0, j1 in matcher.get_opcodes()]
    else:
        ops.append(("replace", a0, a1, b0, b1))
    if tail:
        ops.append(("equal", na - tail, na, nb - tail, nb))
    return ops


def _line(node: Node) -> int | None:
    try:
        loc = node.location
    except (AttributeError, KeyError, IndexError):
        return None
    return None if loc is None else loc.line


def _path_text(path: tuple) -> str:
    """`geom › @8 geom › @8 geom`: each call with its @k in the call that made it."""
    return " › ".join(name if index is None else f"@{index} {name}" for index, name in path)


# -- printing -------------------------------------------------------------------------

def format_diff(d: TraceDiff, show: int = 10) -> str:
    """A readable report; at most `show` value changes and call changes of each kind."""
    if d.same:
        return (f"no difference: {d.paired:,} nodes paired, values equal "
                f"({d.nodes_a:,} and {d.nodes_b:,} nodes)")
    lines = [f"{d.nodes_a:,} nodes in a, {d.nodes_b:,} in b: {d.paired:,} paired, "
             f"{d.only_a:,} only in a, {d.only_b:,} only in b"]
    v = d.divergence
    if v is None:
        lines.append("control flow: the same in both")
    else:
        what = "a branch went another way" if v.reason == "branch" else "the runs did different things"
        where = f"{v.function}" + (f", line {v.line}" if v.line is not None else "")
        lines += [f"first divergence: {what}, in {where}", f"  call path: {v.path}",
                  f"  a: {v.a}", f"  b: {v.b}"]
    if d.values_total:
        lines.append(f"values that differ on the common path: {d.values_total:,}")
        for c in d.values[:show]:
            line = f" L{c.line}" if c.line is not None else ""
            what = "result" if c.index is None else f"@{c.index}{line}"
            lines.append(f"  {c.path}: {what}  a: {c.a}  b: {c.b}")
        if d.values_total > show:
            lines.append(f"  ... and {d.values_total - show:,} more")
    for title, calls in (("calls only in b (added)", d.added), ("calls only in a (removed)", d.removed)):
        if calls:
            lines.append(f"{title}: {len(calls):,}")
            for c in calls[:show]:
                lines.append(f"  {c.path}: @{c.index} {c.function} ({c.nodes:,} nodes inside)")
            if len(calls) > show:
                lines.append(f"  ... and {len(calls) - show:,} more")
    return "\n".join(lines)

