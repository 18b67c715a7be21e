"""`tracer.diff(a, b)`: how two traces of the same program (or of two versions of it)
differ: where control flow first went another way, which values differ on the path
both took, and which calls one made that the other did not.

The two call trees are walked together.  In each pair of matched calls the children
are paired by what they are (kind, function and bytecode position; in a function the
two traces ran different versions of, what the node did instead of its position: the
callee's name, the argument's position; a recorded call by the function it ran), as a
sequence alignment (difflib) when the two lists differ, so the walk picks up again
after a branch went another way or an edited line did other work.  Site keys are computed on
the columns with numpy; values are compared only for paired nodes.
"""

from __future__ import annotations

import difflib
import hashlib
from dataclasses import asdict, dataclass, field

import numpy as np

from .. import _core
from ..views.nodes import Node, node_at
from ..views.show import format_node
from ..views.table import table
from ..views.values import short_value
from ..export.rows import ARGUMENT, JUMP, NESTED, call_name, callee_codes, code_key, code_name
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
    names: dict = {}
    sides = _Side(a, codes, names), _Side(b, codes, names)
    same = _same_versions(*sides, len(codes))
    for side in sides:
        side.make_keys(same)
    walk = _Walk(*sides, rel_tol, abs_tol, limit)
    walk.same_version = same
    walk.run()
    return TraceDiff(
        divergence=walk.divergence, values=walk.values, added=walk.added,
        removed=walk.removed, paired=walk.paired, nodes_a=walk.a.hi - walk.a.lo,
        nodes_b=walk.b.hi - walk.b.lo, values_total=walk.values_total,
        only_a=walk.only[0], only_b=walk.only[1])


class _Side:
    """One trace's columns and the site key of each row of its subtree."""

    def __init__(self, node: Node, codes: dict, names: dict):
        self.trace = trace = node.trace
        self.lo, self.hi = lo, hi = node.row, trace.end(node.row)
        cols = trace.columns()
        self.kind = cols["kind"]
        self.aux = cols["aux"]
        self.code = cols["code"]
        self.objects = np.empty(len(trace), dtype=object)   # each row's value
        self.objects[:] = trace.values()
        # Functions by qualified name (two versions of a program may live in two
        # files); the file and the bytecode tell its versions apart.
        self.shared = np.array([codes.setdefault(code_name(c), len(codes)) for c in trace.codes]
                               + [-1], dtype=np.int64)  # the extra -1: code -1 (no code)
        self.versions: dict[int, set] = {}
        for c in trace.codes:
            self.versions.setdefault(codes[code_name(c)], set()).add(
                (code_key(c)[1], _bytecode_hash(c)))
        # What a call called, by name, with ids shared by both sides.
        ids, callee_names = table(trace).ids_and_names("callee")
        name_ids = np.array([names.setdefault(n, len(names)) for n in callee_names.tolist()],
                            dtype=np.int64)
        self.callee = name_ids[ids[lo:hi]]

    def make_keys(self, same_version: np.ndarray) -> None:
        """Each row's key: kind, function, and where in it.  Where is the bytecode
        offset in a function both traces ran the same version of; in a function whose
        code changed, what the node did (the callee's name, the argument's position),
        so the sequence alignment pairs the nodes around an edit."""
        lo, hi = self.lo, self.hi
        cols = self.trace.columns()
        kind = cols["kind"][lo:hi].astype(np.int64)
        code = self.shared[cols["code"][lo:hi]]
        where = cols["offset"][lo:hi].astype(np.int64)
        edited = ~same_version[code]
        where[edited] = np.where(kind[edited] == ARGUMENT, 0, self.callee[edited])
        args = kind == ARGUMENT
        where[args] = cols["aux"][lo:hi][args]
        # A recorded call by the function it ran (so a call pairs across two versions
        # of its caller whose offsets moved).
        callee = callee_codes(cols, lo, hi)
        calls = kind == NESTED
        where[calls] = np.where(callee[calls] >= 0, self.shared[callee[calls]], -2)
        code[calls] = -1
        self.keys = kind | ((code + 2) << 3) | ((where + 2 ** 20) << 24)

    def key(self, rows: list[int]) -> np.ndarray:
        return self.keys[np.asarray(rows, dtype=np.int64) - self.lo]

    def node(self, row: int) -> Node:
        return node_at(self.trace, row)


def _ranges(starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """The concatenation of `arange(s, e)` for each pair, without a loop."""
    lengths = ends - starts
    total = int(lengths.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    offsets = np.cumsum(lengths) - lengths
    return np.repeat(starts - offsets, lengths) + np.arange(total, dtype=np.int64)


# Pairs compared per step of `_same_values`: a value without a plain `==` (a numpy
# array) sends its step to the one-by-one comparison.
_VALUE_CHUNK = 1 << 14


def _same_values(objects_a: np.ndarray, objects_b: np.ndarray, ra: np.ndarray,
                 rb: np.ndarray, rel_tol: float, abs_tol: float) -> np.ndarray:
    """`same_value` of each pair of values, in bulk: `==` over object arrays in C,
    with the types compared too (True == 1, but not the same value); the pairs that
    fail it (floats within a tolerance, NaNs, objects compared by repr) or whose
    `==` is no plain truth are compared one by one."""
    out = np.empty(len(ra), dtype=bool)
    seen: dict = {}   # (id, id) -> same: the objects live in objects_a and objects_b
    for lo in range(0, len(ra), _VALUE_CHUNK):
        hi = min(len(ra), lo + _VALUE_CHUNK)
        va, vb = objects_a[ra[lo:hi]], objects_b[rb[lo:hi]]
        ta, tb = _types(va), _types(vb)
        try:
            with np.errstate(all="ignore"):
                equal = np.equal(va, vb).astype(bool, copy=False)
            equal &= ta == tb
        except Exception:  # an == without a truth (arrays), or one that raises
            equal = np.zeros(hi - lo, dtype=bool)
        # Floats that differ: within the tolerance (or both NaN), vectorized.
        floats = np.flatnonzero(~equal & (ta == float) & (tb == float))
        if len(floats):
            x = np.array(va[floats].tolist(), dtype=np.float64)
            y = np.array(vb[floats].tolist(), dtype=np.float64)
            with np.errstate(all="ignore"):
                close = np.abs(x - y) <= np.maximum(rel_tol * np.maximum(np.abs(x), np.abs(y)),
                                                    abs_tol)
            equal[floats] = close | (np.isnan(x) & np.isnan(y))
            floats = floats[~equal[floats]]
        checked = np.zeros(hi - lo, dtype=bool)
        checked[floats] = True                 # decided: floats out of tolerance
        # The rest one by one, each pair of objects once (a list read at many nodes).
        for k in np.flatnonzero(~equal & ~checked).tolist():
            x, y = va[k], vb[k]
            pair = (id(x), id(y))
            same = seen.get(pair)
            if same is None:
                same = seen[pair] = same_value(x, y, rel_tol, abs_tol)
            equal[k] = same
        out[lo:hi] = equal
    return out


_types = np.frompyfunc(type, 1, 1)


def _bytecode_hash(code) -> str:
    """What tells two versions of a function apart: its bytecode's hash (a loaded
    trace's code carries the one it was saved with)."""
    saved = getattr(code, "bytecode_sha256", None)
    if saved is not None:
        return saved
    return hashlib.sha256(code.co_code).hexdigest()


def _same_versions(a: _Side, b: _Side, ncodes: int) -> np.ndarray:
    """Per shared code id (and a last entry for id -1): whether no side ran another
    version of it."""
    same = np.ones(ncodes + 1, dtype=bool)
    for cid, versions in a.versions.items():
        other = b.versions.get(cid)
        if other is not None and (other != versions or len(versions) > 1):
            same[cid] = False
    return same


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
        self.same_version = np.ones(1, dtype=bool)  # per shared code id (see diff)
        # The pairs made, in walk order: (call path, rows in a, rows in b).
        self.blocks: list[tuple[tuple, np.ndarray, np.ndarray]] = []

    def run(self) -> None:
        a, b = self.a, self.b
        self.paired = 1
        if a.keys[0] != b.keys[0]:
            self.diverge("structure", (), a.lo, b.lo, a.lo)
            self.only = [a.hi - a.lo, b.hi - b.lo]
            self.paired = 0
            return
        root = (self._step(a.lo),)
        self.blocks.append((root, np.array([a.lo], dtype=np.int64),
                            np.array([b.lo], dtype=np.int64)))
        # Matched call pairs, walked depth first (a list, not recursion: traces nest
        # deeper than Python's recursion limit).
        stack = [(a.lo, b.lo, ())]
        while stack:
            ra, rb, path = stack.pop()
            path = path + (self._step(ra),)
            inner = self.pair_children(ra, rb, path)
            stack.extend((ca, cb, path) for ca, cb in reversed(inner))
        self.compare_paired()

    def _step(self, row: int) -> tuple[int | None, str]:
        trace = self.a.trace
        index = node_at(trace, row).index if trace.parent(row) >= 0 else None
        return index, call_name(trace, row)

    def pair_children(self, ra: int, rb: int, path: tuple) -> list[tuple[int, int]]:
        """Align the children of a matched pair of calls; keep the pairs (their values
        are compared at the end, all at once) and return the pairs of calls."""
        a, b = self.a, self.b
        kids_a = _core.child_rows(a.trace, ra).astype(np.int64)
        kids_b = _core.child_rows(b.trace, rb).astype(np.int64)
        blocks = _align(a.key(kids_a), b.key(kids_b))
        equal = np.array([blk[1:] for blk in blocks if blk[0] == "equal"],
                         dtype=np.int64).reshape(-1, 4)
        pa, pb = kids_a[_ranges(equal[:, 0], equal[:, 1])], kids_b[_ranges(equal[:, 2],
                                                                              equal[:, 3])]
        self.paired += len(pa)
        self.blocks.append((path, pa, pb))
        calls = a.kind[pa] == NESTED
        inner = list(zip(pa[calls].tolist(), pb[calls].tolist()))
        for tag, i0, i1, j0, j1 in blocks:
            if tag == "equal":
                continue
            # Nodes only one side has: the runs went different ways here.
            at = int(kids_a[i0]) if i0 < len(kids_a) else a.trace.end(ra)
            self.diverge("structure", path, int(kids_a[i0]) if i0 < i1 else None,
                         int(kids_b[j0]) if j0 < j1 else None, at)
            for k, (side, rows, out) in enumerate(((a, kids_a[i0:i1], self.removed),
                                                   (b, kids_b[j0:j1], self.added))):
                if len(rows):
                    self.only[k] += side.trace.end(int(rows[-1])) - int(rows[0])
                for r in rows[side.kind[rows] == NESTED].tolist():
                    out.append(self._call_change(side, r, path))
        return inner

    def compare_paired(self) -> None:
        """Compare the values of every pair the walk made, in walk order: jumps by
        their target and outcome (a difference is a branch that went another way),
        other nodes by value (`same_value`), the equal ones found in bulk."""
        a, b = self.a, self.b
        if not self.blocks:
            return
        ra = np.concatenate([blk[1] for blk in self.blocks])
        rb = np.concatenate([blk[2] for blk in self.blocks])
        which = np.repeat(np.arange(len(self.blocks)), [len(blk[1]) for blk in self.blocks])
        kind = a.kind[ra]
        # The callee itself (argument 0) is the same function by the pairing key.
        keep = ~((kind == ARGUMENT) & (a.aux[ra] == 0))
        differ = np.zeros(len(ra), dtype=bool)
        differ[keep] = ~_same_values(a.objects, b.objects, ra[keep], rb[keep],
                                     self.rel_tol, self.abs_tol)
        jumps = kind == JUMP
        # A jump's target is an offset: compared in a function both ran the same
        # version of; elsewhere its outcome (the value) only.
        moved = jumps & (a.aux[ra] != b.aux[rb]) & self.same_version[a.shared[a.code[ra]]]
        branch = np.flatnonzero(jumps & (differ | moved))
        if len(branch):
            k = int(branch[np.argmin(ra[branch])])
            self.diverge("branch", self.blocks[which[k]][0], int(ra[k]), int(rb[k]), int(ra[k]))
        changed = np.flatnonzero(differ & ~jumps)
        self.values_total += len(changed)
        for k in changed[:self.limit].tolist():
            path, ca, cb = self.blocks[which[k]][0], int(ra[k]), int(rb[k])
            node = a.node(ca)
            index = None if ca == a.lo else node.index
            self.values.append(ValueChange(
                _path_text(path), path[-1][1] if path else "", _line(node), index,
                short_value(a.objects[ca]), short_value(b.objects[cb]), ca, cb))

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
        # The rest, common suffix included: a resync near the middle's end then
        # checks its keys against what follows, not against a list cut short.
        return ops + _align_long(ka, kb, a0, na, b0, nb)
    if tail:
        ops.append(("equal", na - tail, na, nb - tail, nb))
    return ops


# How many keys in a row must agree for the long alignment to pair again after a
# difference (fewer would pair `dt * x` with the next `m1 * mag` after an edit), and
# the windows it looks ahead in, each tried when the smaller found nothing.
_RESYNC_RUN = 8
# A substitution of up to this many nodes on both sides, followed by this many
# agreeing keys, pairs again on the same diagonal (see `_resync`).
_SUBSTITUTION = 3
_SUBSTITUTED_RUN = 3
_RESYNC_WINDOWS = (64, 1024, 16384)


def _align_long(ka: np.ndarray, kb: np.ndarray, a0: int, a1: int, b0: int,
                b1: int) -> list[tuple[str, int, int, int, int]]:
    """Opcodes for two long children lists (a loop's body of 10^5 nodes), in time
    about linear in their length: equal runs are found with numpy, and after a
    difference the nearest place (fewest nodes skipped on both sides) where
    `_RESYNC_RUN` keys agree again, within a window.  A one-line edit in a loop then
    shows as that line's nodes in each iteration, everything else paired."""
    ops: list[tuple[str, int, int, int, int]] = []
    memo: dict = {}
    i, j = a0, b0
    while i < a1 and j < b1:
        run = _equal_run(ka, kb, i, j, min(a1 - i, b1 - j))
        if run:
            ops.append(("equal", i, i + run, j, j + run))
            i, j = i + run, j + run
            continue
        found = _resync(ka, kb, i, j, a1, b1, memo)
        if found is None:
            break
        ni, nj = found
        ops.append(("replace" if ni > i and nj > j else "delete" if ni > i else "insert",
                    i, ni, j, nj))
        i, j = ni, nj
    if i < a1 or j < b1:
        ops.append(("replace" if i < a1 and j < b1 else "delete" if i < a1 else "insert",
                    i, a1, j, b1))
    return ops


def _equal_run(ka: np.ndarray, kb: np.ndarray, i: int, j: int, n: int) -> int:
    """How many keys agree from ka[i] and kb[j] on (at most n), in growing steps."""
    run, step = 0, 64
    while run < n:
        m = min(step, n - run)
        differ = ka[i + run:i + run + m] != kb[j + run:j + run + m]
        k = int(differ.argmax())
        if differ[k]:
            return run + k
        run += m
        step *= 4
    return run


def _resync(ka, kb, i: int, j: int, a1: int, b1: int, memo: dict) -> tuple[int, int] | None:
    """The nearest (i', j') past a difference at (i, j), smallest skip i'-i + j'-j,
    from which `_RESYNC_RUN` keys (fewer at the lists' ends) agree.

    A loop repeats its differences: the skip found for the same keys ahead on both
    sides (the first window's worth) is remembered in `memo`.  A substitution of as
    many nodes on both sides (`+= 1` written `= x + 1`: one operator for another)
    pairs again right after it when `_SUBSTITUTED_RUN` keys agree there: in a short
    loop body the next substitution comes before `_RESYNC_RUN` keys could agree."""
    for s in range(1, _SUBSTITUTION + 1):
        if i + s < a1 and j + s < b1:
            run = _equal_run(ka, kb, i + s, j + s, min(_RESYNC_RUN, a1 - i - s, b1 - j - s))
            if run >= min(_SUBSTITUTED_RUN, a1 - i - s, b1 - j - s):
                return i + s, j + s
    w = _RESYNC_WINDOWS[0]
    context = None
    if i + w <= a1 and j + w <= b1:
        context = ka[i:i + w].tobytes() + kb[j:j + w].tobytes()
        skip = memo.get(context)
        if skip is not None:
            return i + skip[0], j + skip[1]
    found = _search(ka, kb, i, j, a1, b1)
    if found is not None and context is not None and found[0] - i < w and found[1] - j < w:
        memo[context] = (found[0] - i, found[1] - j)
    return found


def _search(ka, kb, i: int, j: int, a1: int, b1: int) -> tuple[int, int] | None:
    for window in _RESYNC_WINDOWS:
        ea, eb = min(a1, i + window), min(b1, j + window)
        run = min(_RESYNC_RUN, ea - i, eb - j)
        if run <= 0:
            return None
        grams_a = list(zip(*(ka[i + k:ea - run + 1 + k].tolist() for k in range(run))))
        grams_b = list(zip(*(kb[j + k:eb - run + 1 + k].tolist() for k in range(run))))
        first_b: dict = {}
        for dj, gram in enumerate(grams_b):
            first_b.setdefault(gram, dj)
        best = None
        for di, gram in enumerate(grams_a):
            if best is not None and di >= best[0] + best[1]:
                break
            dj = first_b.get(gram)
            if dj is not None and (di, dj) != (0, 0) and (
                    best is None or di + dj < best[0] + best[1]):
                best = (di, dj)
        if best is not None:
            return i + best[0], j + best[1]
        if ea == a1 and eb == b1:
            return None
    return None


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

