"""Finding the draws of a finished trace: which rows, at which addresses, with which
parameters — on the trace's columns, a call site at a time.

Rows that may be draws are found by callee name.  The rows of one call site that
call one sampler bind their parameters alike, so each such site is resolved once and
its parameters are read as columns of the refs array; an irregular site (`f(*args)`,
`sample(name, ...)`, a shuffle, a user sampler) is resolved row by row.  Addresses
are counted as the running hooks count them (_hooks.FixingContext): calls by (code,
call line) within their caller, draws by (site, line) within their call.  In a
fixing run every draw calls a dispatcher: what the program called is in the row's
metadata["substituted"].  What only
a Choice needs (addresses, parameter dicts, node views) is made when first asked.
"""

from __future__ import annotations

import collections
import operator
from typing import Any

import numpy as np

from .. import _core
from ..analysis.instructions import R_CALL, R_CALL_EX
from ..analysis.ir import ir
from ..views.names import callable_name
from ..views.table import KIND_NAMES, _line_table, _unit_tables, group_keys
from ._hooks import DRAW_NAME, code_name, original_of
from .address import component, join
from .densities import distribution_name
from .samplers import Draw, Sampler, UnknownSamplerError, method_names, resolve, sample

__all__ = ["scan", "same_shape", "Draws", "Site"]

_PRIMITIVE = int(np.flatnonzero(KIND_NAMES == "primitive")[0])
_NESTED = int(np.flatnonzero(KIND_NAMES == "nested")[0])
_FRAME = int(_core.FLAGS["frame"])
_EMPTY = np.empty(0, dtype=np.int64)


class _Slot:
    """Stands for input k of a call row while a site's parameters are bound."""
    __slots__ = ("k",)

    def __init__(self, k: int):
        self.k = k


class Site:
    """The draws of one call site with one sampler."""

    __slots__ = ("sampler", "site", "line", "template", "members", "columns",
                 "problem", "draws")

    def __init__(self, sampler: Sampler, site: str, line: int | None):
        self.sampler = sampler
        self.site = site            # the address's site name
        self.line = line            # None for a named site
        self.template: dict = {}    # params, a _Slot where a row's input goes
        self.members = np.empty(0, dtype=np.int64)   # indices into Draws, in order
        self.columns: dict = {}     # input k -> values, one per member
        self.problem: str | None = None   # why its density is unknown
        self.draws: Any = None   # an irregular site's Draws: by row while found, then per member

    def index(self, i: int) -> int:
        """The position among this site's draws of draw `i` of the trace."""
        return int(np.searchsorted(self.members, i))

    def params(self, j: int) -> dict:
        if self.draws is not None:
            return self.draws[j].params
        cols = self.columns
        out = {}
        for k, v in self.template.items():
            if type(v) is _Slot:
                c = cols[v.k]
                v = c.value if type(c) is _One else c[j]
            out[k] = v
        return out

    def varies(self, name: str) -> bool:
        """Whether parameter `name` of this regular site is a column (one entry per
        draw), not one object every draw has."""
        v = self.template.get(name)
        return type(v) is _Slot and type(self.columns[v.k]) is not _One

    def column_params(self) -> dict:
        """The parameters as columns (lists) where they vary, one object where not."""
        cols = self.columns
        out = {}
        for k, v in self.template.items():
            if type(v) is _Slot:
                c = cols[v.k]
                v = c.value if type(c) is _One else c
            out[k] = v
        return out


class Draws:
    """The draws of one trace, in draw order: `rows` (int64 array of trace rows),
    `values`, `site_of` (index into `sites`), `logp` (filled by
    densities.score_draws)."""

    def __init__(self, trace, tb, rows, values, sites, site_of):
        self.trace, self.tb = trace, tb
        self.rows, self.values = rows, values
        self.sites, self.site_of = sites, site_of
        self.logp = np.full(len(rows), np.nan)
        self._addresses: list[str] | None = None

    def __len__(self) -> int:
        return len(self.rows)

    def site(self, i: int) -> Site:
        return self.sites[self.site_of[i]]

    def params(self, i: int) -> dict:
        s = self.sites[self.site_of[i]]
        return s.params(s.index(i))

    def draw(self, i: int) -> Draw:
        s = self.sites[self.site_of[i]]
        if s.draws is not None:
            return s.draws[s.index(i)]
        return Draw(s.sampler, s.site, self.params(i))

    def distribution(self, i: int) -> str:
        s = self.sites[self.site_of[i]]
        return "unknown" if s.problem else distribution_name(Draw(s.sampler, s.site, {}))

    @property
    def addresses(self) -> list[str]:
        if self._addresses is None:
            self._addresses = _addresses(self)
        return self._addresses


def _candidates(trace, cols: dict) -> tuple[np.ndarray, np.ndarray, list]:
    """(rows, callee, objects): the call rows whose callee's name may be a draw's
    (a sampler method's or a declared sampler's: resolve() decides), in row order;
    per row the index of its callee in `objects`, one entry per distinct callee.

    The calls are told from operators and specials, and the calls with a recorded
    body named by its code, in one pass in the core (`_core.callee_ids`, as the
    table's callee column does); the others are named by their callee, the call's
    first input, once per pooled constant (a method called through its class, as
    `r.gauss(...)` is recorded) or per object, without naming every call of the
    run.  A sampler written in C that calls Python code (numpy's choice, poisson)
    is a call with a body of frames entered from C: a nested row named so."""
    wanted = _wanted()
    by_code = np.array([1 if code_name(c.co_qualname).rsplit(".", 1)[-1] in wanted else 2
                        for c in trace.codes], dtype=np.int32)
    ids = _core.callee_ids(trace, cols["code"], *_unit_tables(trace, _site_kinds), by_code)
    # ids: 1 a call whose body was recorded, by a sampler's name; 2 another such call,
    # an operator or a special; -2 - k a call of pool entry k; -1 of a row's value
    pool = trace.pool
    npool = len(pool)
    objects: list = []
    index: dict = {}               # id(object) -> its index in objects

    def object_index(o) -> int:
        k = index.get(id(o))
        if k is None:
            k = index[id(o)] = len(objects)
            objects.append(o)
        return k
    # a pooled callee is named once: a lookup table by id (+ npool + 2 >= 0)
    lut = np.full(npool + 5, -1, dtype=np.int64)
    wanted_ids = [-1, 1]           # the ids that may be draws
    for k, o in enumerate(pool):
        if callable(o) and callable_name(o).rsplit(".", 1)[-1] in wanted:
            lut[npool - k] = object_index(o)
            wanted_ids.append(-2 - k)
    lut[npool + 3] = -2                  # id 1: a recorded body (its callee from refs)
    lut[npool + 1] = -3                  # id -1: a row's value (named below)
    # a few values, compared in one pass each (no per-row lookup over the trace)
    mask = ids == wanted_ids[0]
    for v in wanted_ids[1:]:
        mask |= ids == v
    rows = np.flatnonzero(mask)
    callee = lut[ids[rows] + (npool + 2)]
    kind, ref_start, refs = cols["kind"], cols["ref_start"], cols["refs"]
    kinds = kind[rows]
    call = (kinds == _PRIMITIVE) | (kinds == _NESTED)
    if not call.all():               # a special named by its input: no draw
        rows, callee = rows[call], callee[call]
    late = np.flatnonzero(callee < -1)
    if len(late):
        # the calls of row values, and those with a recorded body: by their callee
        at_rows = rows[late]
        has = ref_start[at_rows + 1] > ref_start[at_rows]
        codes = refs[ref_start[at_rows[has]]].astype(np.int64)
        body = callee[late[has]] == -2
        out = np.full(len(late), -1, dtype=np.int64)
        addresses = np.where(codes < 0, codes, _core.value_addresses(trace, np.maximum(codes, 0)))
        _, first, which = np.unique(addresses, return_index=True, return_inverse=True)
        which = which.reshape(-1)
        named = np.empty(len(first), dtype=np.int64)
        for j, c in enumerate(codes[first].tolist()):
            o = trace.value(c) if c >= 0 else pool[-c - 1]
            named[j] = object_index(o) if callable_name(o).rsplit(".", 1)[-1] in wanted \
                else -1
        sel = named[which]
        # a call with a recorded body is a candidate by its body's name whatever
        # its callee's name
        for j in np.flatnonzero(body & (sel < 0)).tolist():
            c = int(codes[j])
            sel[j] = object_index(trace.value(c) if c >= 0 else pool[-c - 1])
        out[np.flatnonzero(has)] = sel
        callee[late] = out
        keep = callee >= 0
        rows, callee = rows[keep], callee[keep]
    return rows, callee, objects


_SITE_KINDS: dict = {}


def _site_kinds(code) -> np.ndarray:
    """Per code unit of `code`: 2 where an operator or special is recorded (named by
    its site: no draw), -1 where a call is (named by its callee)."""
    got = _SITE_KINDS.get(code)
    if got is None:
        if len(_SITE_KINDS) > 4096:
            _SITE_KINDS.clear()
        recs = ir(code).recs
        got = np.full(max(recs, default=0) // 2 + 1, -1, dtype=np.int32)
        for off, rec in recs.items():
            if rec.sem not in (R_CALL, R_CALL_EX):
                got[off // 2] = 2
        _SITE_KINDS[code] = got
    return got


_WANTED: list = [-1, frozenset()]


def _wanted() -> frozenset:
    """method_names() and DRAW_NAME, made again when a sampler was declared since."""
    from .samplers import _TABLE
    if _WANTED[0] != len(_TABLE):
        _WANTED[:] = [len(_TABLE), method_names() | {DRAW_NAME}]
    return _WANTED[1]


_LINES: dict = {}


def _line_of(code, offset: int) -> int:
    """The source line of the instruction at `offset` of `code`, as the table's
    `line` column has it (views.table._line_table), -1 where none."""
    t = _LINES.get(code)
    if t is None:
        if len(_LINES) > 4096:
            _LINES.clear()
        t = _LINES[code] = _line_table(code)
    if offset < 0 or not len(t):
        return -1
    return int(t[min(offset // 2, len(t) - 1)])


def _value_reader(trace):
    pool, value = trace.pool, trace.value
    return lambda c: value(c) if c >= 0 else pool[-c - 1]


def _outermost(trace, cols: dict, rows: np.ndarray) -> np.ndarray:
    """Leave out candidates inside another candidate's call (a draw is the outermost
    sampler call): a row is kept when no earlier candidate's subtree reaches it
    (subtrees nest, so the running maximum of their ends says it)."""
    kind = cols["kind"][rows]
    nested = kind == _NESTED
    if not nested.any():
        return rows
    ends = rows + 1
    at = np.flatnonzero(nested)
    ends[at] = [trace.end(r) for r in rows[at].tolist()]
    reach = np.maximum.accumulate(ends)
    keep = np.ones(len(rows), dtype=bool)
    keep[1:] = rows[1:] >= reach[:-1]
    return rows[keep]


def scan(root, unknown: str = "error", dispatched: bool = False, snaps=None) -> Draws:
    """The draws under `root`, in the order they were made.

    `unknown="error"` raises UnknownSamplerError at a draw whose distribution is not
    known; `"record"` keeps it (its site has `problem` set, its logp stays NaN).
    `dispatched`: `root` is a run whose draws were substituted (a replay by
    position, _hooks.SequenceContext): its rows are the substituted ones, found
    without callee names.
    """
    trace = root.trace
    cols = trace.columns()
    if dispatched:
        cand, callee, _ = _substituted(trace)
    else:
        cand, callee, _ = _candidates(trace, cols)
    groups = _groups(trace, cols, cand, callee)
    sites, site_of = _sites(trace, cols, cand, groups, snaps)
    rows_arr, site_of = _ordered(trace, cols, sites, cand, site_of)
    _read_columns(trace, cols, sites, rows_arr, snaps)
    values = _read_values(trace, sites, rows_arr, snaps)
    draws = Draws(trace, trace.table(), rows_arr, values, sites, site_of)
    if unknown == "error" and any(s.problem for s in sites):
        for i, sid in enumerate(site_of.tolist()):
            if sites[sid].problem:
                raise UnknownSamplerError(
                    f"the draw at {draws.addresses[i]} ({sites[sid].problem}); tracer.ppl "
                    f"cannot score it.  Declare the sampler with "
                    f"@tracer.ppl.sampler(logpdf=...), or trace with unknown='record' to "
                    f"keep it with logp=None")
    return draws


def _substituted(trace):
    """(rows, callee, called) of a run whose draws were substituted: the rows with
    metadata["substituted"] (what the program called) in recording order, per row an
    index of what it called (equal indices: one callable), and the callables.  Read
    from the trace's store of substitutions (Trace.substitutions): no metadata dict
    is made or read per row."""
    cand, index, called = trace.substitutions()
    if not len(cand):
        return cand, _EMPTY, called
    if len(called) == 1:                                    # one sampler called
        return cand, np.zeros(len(cand), dtype=np.int64), called
    ids = np.fromiter(map(id, called), dtype=np.int64, count=len(called))
    first = np.unique(ids, return_inverse=True)[1].reshape(-1).astype(np.int64)
    return cand, first[index], called


def _groups(trace, cols: dict, cand: np.ndarray, callee: np.ndarray) -> dict:
    """The candidate rows (ascending) by (code, offset, callee): key -> positions in
    `cand` (ascending), the groups in the order of their first row: one resolution
    per group."""
    if not len(cand):
        return {}
    code = cols["code"][cand]
    offset = cols["offset"][cand]
    # one int per (code, code unit, callee), dense enough to be grouped without a sort
    unit = (offset.astype(np.int64) + 2) // 2       # offset -1 (no instruction) -> 0
    width = int(unit.max()) + 1
    ncallee = int(callee.max()) + 1
    key = ((code.astype(np.int64) + 1) * width + unit) * ncallee + callee
    size = (int(code.max()) + 2) * width * ncallee
    distinct, which = group_keys(key, size)
    if len(distinct) <= 32:
        parts = [np.flatnonzero(which == g) for g in range(len(distinct))]
    else:
        order = np.argsort(which, kind="stable")
        parts = np.split(order, np.flatnonzero(np.diff(which[order])) + 1)
    groups: dict = {}
    for pos in sorted(parts, key=_FIRST):
        j = int(pos[0])
        groups[(int(code[j]), int(offset[j]), int(callee[j]))] = pos
    return groups


def _sites(trace, cols: dict, cand: np.ndarray, groups: dict, snaps):
    """(sites, site of each candidate, -1 for none): each group resolved once (a
    regular site's rows bind alike) or row by row (a star call, `sample(name,
    ...)`, a shuffle, a user sampler, an unknown density)."""
    ref_start, refs = cols["ref_start"], cols["refs"]
    read = _value_reader(trace)
    trace_codes = trace.codes
    shapes: dict = {}           # (code, offset) -> (star call, keyword names)
    sites: list[Site] = []
    site_ids: dict = {}
    site_of = np.full(len(cand), -1, dtype=np.int64)
    called = _called(trace)
    for (c, o, *_), pos_g in groups.items():
        rows_g = cand[pos_g]
        first = int(rows_g[0])
        shape = shapes.get((c, o))
        if shape is None:
            node = _core.node_view(trace, first)
            shape = shapes[(c, o)] = (node.is_star_call, tuple(node.keywords))
        star, kwnames = shape
        f = called(first, read(int(refs[ref_start[first]])) if not star else
                   _core.node_view(trace, first).function.value)
        irregular = star or f is sample
        todo = rows_g.tolist() if irregular else [first]
        i = 0
        while i < len(todo):
            r = todo[i]
            at = int(pos_g[i])
            i += 1
            args, kwargs = _call_args(trace, r, star, kwnames, read, ref_start, refs,
                                      snaps)
            try:
                d = resolve(f, args, kwargs)
                problem = None
            except UnknownSamplerError as e:
                name = getattr(f, "__name__", type(f).__name__)
                d = Draw(Sampler(name, lambda *a, **k: {}, "unknown"), name,
                         {"args": args[1:], "kwargs": kwargs})
                problem = str(e)
            if d is None:
                if irregular:
                    continue
                break
            regular = not irregular and d.sampler.shuffles < 0 and d.sampler.user_logpdf \
                is None and problem is None
            line = None if f is sample else \
                (_line_of(trace_codes[c], o) if c >= 0 else -1)
            key = (id(d.sampler), d.site, line, c if regular else None,
                   o if regular else None)
            sid = site_ids.get(key)
            if sid is None:
                sid = site_ids[key] = len(sites)
                s = Site(d.sampler, d.site, line)
                s.problem = problem
                if regular:
                    s.template = _template(d.sampler, f, len(args), kwnames)
                else:
                    s.draws = {}      # row -> Draw, made a list in draw order below
                sites.append(s)
            s = sites[sid]
            if not regular:
                s.draws[r] = d
                site_of[at] = sid
                if not irregular:
                    # a user sampler, a shuffle, an unknown density: the site's
                    # other rows (same callee, so the same kind) one by one too
                    todo, irregular = rows_g.tolist(), True
            else:
                site_of[pos_g] = sid
    return sites, site_of


def _ordered(trace, cols: dict, sites: list, cand: np.ndarray, site_of: np.ndarray):
    """(rows, site of each): the draws in recording order, the outermost sampler
    calls only; each site's members (indices into the draws) set."""
    drawn = site_of >= 0
    rows_arr, site_of = cand[drawn], site_of[drawn]
    keep = _outermost(trace, cols, rows_arr) if len(rows_arr) else rows_arr
    if len(keep) != len(rows_arr):
        mask = np.isin(rows_arr, keep)
        rows_arr, site_of = rows_arr[mask], site_of[mask]
    # members of each site, in draw order
    if len(sites) == 1:
        sites[0].members = np.arange(len(rows_arr), dtype=np.int64)
    elif len(sites) <= 32:
        for sid, s in enumerate(sites):
            s.members = np.flatnonzero(site_of == sid)
    elif sites:
        by_site = np.argsort(site_of, kind="stable")
        bounds = np.cumsum(np.bincount(site_of, minlength=len(sites)))[:-1]
        for s, members in zip(sites, np.split(by_site, bounds)):
            s.members = members
    for s in sites:
        if s.draws is not None:
            s.draws = [s.draws[int(r)] for r in rows_arr[s.members].tolist()]
    return rows_arr, site_of


def _read_columns(trace, cols: dict, sites: list, rows_arr: np.ndarray, snaps) -> None:
    """A regular site's inputs as columns, one entry per member (a _One where all
    are one value); the copies made at the draws (snapshots.py) stand for what the
    trace holds."""
    ref_start, refs = cols["ref_start"], cols["refs"]
    copied = _copies_by_k(trace, snaps) if snaps is not None else {}
    in_copies = snaps.input_columns()[2] if copied else None
    for s in sites:
        if s.draws is None and len(s.members):
            site_rows = rows_arr[s.members]
            base = None
            for v in s.template.values():
                if type(v) is not _Slot or v.k in s.columns:
                    continue
                pos, src = copied[v.k].find(site_rows) if v.k in copied else _NONE
                if len(pos) < len(site_rows):
                    if base is None:
                        base = ref_start[site_rows]
                    col = _read_column(trace, refs[base + v.k], not len(pos))
                else:
                    col = None              # every draw's input copied
                s.columns[v.k] = _patched(col, pos, in_copies, src)


def _read_values(trace, sites: list, rows_arr: np.ndarray, snaps) -> list:
    """The draws' values (their copies where made); a shuffle's, the order it left."""
    values = snaps.copier.values_of(trace, rows_arr) if snaps is not None else None
    if values is None:     # (rows out of order: merged by searching, in numpy)
        value_rows, value_copies = snaps.value_columns() if snaps is not None else _NONE
        pos, src = _Where(len(trace), value_rows, np.arange(len(value_rows))).find(rows_arr)
        values = _patched(trace.values_at(rows_arr) if len(pos) < len(rows_arr) else None,
                          pos, value_copies, src)
    for s in sites:
        if s.sampler.shuffles < 0:
            continue
        for j, i in enumerate(s.members.tolist()):
            target = s.draws[j].target
            # shuffle returns None: the choice is the order it left (read now)
            values[i] = (tuple(np.asarray(target).tolist()) if isinstance(target, np.ndarray)
                         else tuple(target))
    return values


_FIRST = operator.itemgetter(0)


def _called(trace):
    """`called(row, callee)`: what call row `row` called — its callee, or for a
    fixing run's dispatcher what the program called in its place."""
    get = trace.metadata_get        # (no dict made for the row)

    def called(row: int, callee):
        if original_of(callee) is None:
            return callee
        return get(row, "substituted")
    return called


class _One:
    """A parameter column whose every entry is one object (a constant of the code,
    or one value every draw of the site read): kept once, not once per draw."""
    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value

    def __repr__(self) -> str:
        return f"_One({self.value!r})"


def _read_column(trace, codes: np.ndarray, whole: bool):
    """The values `codes` (refs entries) name, or a _One when they all name one
    value and `whole` (no entry is replaced by a copy afterwards)."""
    if whole and len(codes) > 1 and codes[0] == codes[-1] and (codes == codes[0]).all():
        return _One(trace.values_at(codes[:1])[0])
    return trace.values_at(codes)


_NONE = (np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64))


def _copies_by_k(trace, snaps) -> dict:
    """k -> _Where the calls whose input k was copied are, by row."""
    rows, ks, _ = snaps.input_columns()
    out = {}
    # the distinct positions (small non-negative ints), ascending: a count per
    # position, not np.unique's hashing of every copy's
    for k in (np.flatnonzero(np.bincount(ks)) if len(ks) else ks).tolist():
        idx = np.flatnonzero(ks == k)
        out[k] = _Where(len(trace), rows[idx], idx)
    return out


class _Where:
    """Rows that have a copy (ascending) and the index of each one's copy:
    `find(rows)` -> (positions in `rows` (ascending) that have one, their
    indices)."""

    __slots__ = ("n", "rows", "idx", "dense")

    def __init__(self, n: int, rows: np.ndarray, idx: np.ndarray):
        self.n, self.rows, self.idx = n, rows, idx
        self.dense = None

    def find(self, rows: np.ndarray):
        got = self.rows
        if not len(got) or not len(rows) or got[-1] < rows[0] or got[0] > rows[-1]:
            return _NONE
        if len(got) == len(rows) and np.array_equal(got, rows):
            return np.arange(len(rows)), self.idx     # every row's (a site's own copies)
        if len(got) * 64 < self.n:
            return _at(rows, got, self.idx)           # few: a binary search each
        if self.dense is None:                        # many: a row -> copy table
            self.dense = np.full(self.n, -1, dtype=np.int64)
            self.dense[got] = self.idx
        j = self.dense[rows]
        pos = np.flatnonzero(j >= 0)
        return pos, j[pos]


def _at(rows: np.ndarray, got_rows: np.ndarray, got_idx: np.ndarray):
    """(positions in `rows` (ascending), the matching entries of `got_idx`) of the
    entries of `got_rows` (ascending) that are among `rows`."""
    if not len(got_rows) or not len(rows):
        return _NONE
    at = np.searchsorted(rows, got_rows)
    ok = at < len(rows)
    ok[ok] = rows[at[ok]] == got_rows[ok]
    return at[ok], got_idx[ok]


def _patched(col: list | None, pos: np.ndarray, src: list, idx: np.ndarray) -> list:
    """`col` (a list of its own) with col[pos[j]] = src[idx[j]], in C loops (no
    object array made); `col` None: every position is in `pos`, in order (a new
    list)."""
    if col is None:
        return _items(src, idx)
    if not len(pos):
        return col
    collections.deque(map(col.__setitem__, pos.tolist(), _items(src, idx)), maxlen=0)
    return col


def _items(src: list, idx: np.ndarray) -> list:
    """[src[i] for i in idx] as a new list: a slice where idx is a run of
    consecutive positions (a site's own copies, in order)."""
    n = len(idx)
    if n and (n == 1 or (idx[-1] - idx[0] == n - 1 and (np.diff(idx) == 1).all())):
        a = int(idx[0])
        return src[a:a + n]
    return _core.take_items(src, idx)


def _call_args(trace, row, star, kwnames, read, ref_start, refs, snaps=None):
    """(args, kwargs) of call row `row` (its callee left out), its mutable inputs as
    they were at the call when `snaps` has them."""
    got = snaps.inputs_of(row) if snaps is not None else None
    if star:
        if got is None:
            _, args, kwargs = _core.node_view(trace, row).call_values()
            return args, kwargs
        codes = refs[ref_start[row]:ref_start[row + 1]].tolist()
        pos = got.get(1, read(codes[1])) if len(codes) > 1 else ()
        kw = got.get(2, read(codes[2])) if len(codes) > 2 else {}
        return tuple(pos), dict(kw)
    codes = refs[ref_start[row] + 1:ref_start[row + 1]].tolist()
    if got is None:
        vals = [read(x) for x in codes]
    else:
        vals = [got[k] if k in got else read(x) for k, x in enumerate(codes, 1)]
    nk = len(kwnames)
    npos = len(vals) - nk
    return tuple(vals[:npos]), dict(zip(kwnames, vals[npos:]))


def _template(sampler: Sampler, f, nargs: int, kwnames: tuple) -> dict:
    """The parameters of a regular site with a _Slot where each row's input goes
    (input k: the k-th entry of the row's refs, 0 the callee)."""
    from .samplers import takes_generator
    skip = 1 if takes_generator(f) else 0
    npos = nargs
    slots = [_Slot(1 + k) for k in range(skip, npos)]
    kw = {name: _Slot(1 + npos + i) for i, name in enumerate(kwnames)}
    return sampler.bind(*slots, **kw)


class _Paths:
    """Addresses of the recorded calls, built on demand and cached by row."""

    def __init__(self, trace, tb):
        self.trace = trace
        kind = tb["kind"]
        self.nested = np.flatnonzero(kind == _NESTED)
        parent = tb["parent"][self.nested].astype(np.int64)
        line = tb["line"][self.nested]
        # A C call that runs Python frames (list(gen), sorted(key=f), map) is a nested
        # row with those frames under it; the running program sees no frame for the C
        # call, so in an address it is no step: its frames count in its caller.
        self.transparent: set[int] = set()
        entered = (tb["flags"][self.nested] & _FRAME) != 0
        for p in np.unique(parent[entered]).tolist():
            if p >= 0 and not _is_python_call(trace, p):
                self.transparent.add(p)
        if self.transparent:
            for i in np.flatnonzero(entered).tolist():
                if int(parent[i]) in self.transparent:
                    parent[i] = trace.parent(int(parent[i]))
        # each call's name: its body's qualified name, from the code of its first
        # child (as FixingContext.enter names it from the frame); the table's callee
        # names only for a call without a recorded body (naming every callee of a
        # fixing run, one pooled dispatcher per draw, costs more than the run)
        self.names = self._names(trace, tb)
        self.cid = np.array([self._ids.setdefault(n, len(self._ids)) for n in self.names],
                            dtype=np.int64)
        self.occ = _occurrences(parent, self.cid, line, self.nested)
        self.line = line
        self.cache: dict[int, str] = {}

    def _names(self, trace, tb) -> list:
        self._ids: dict = {}
        nested = self.nested
        if not len(nested):
            return []
        parent_col = tb["parent"]
        code_col = tb["code"]
        first = nested + 1
        inside = first < len(parent_col)
        has = np.zeros(len(nested), dtype=bool)
        has[inside] = parent_col[first[inside]] == nested[inside]
        codes = trace.codes
        out: list = [None] * len(nested)
        table_names = None
        for i, (ok, f) in enumerate(zip(has.tolist(), first.tolist())):
            c = int(code_col[f]) if ok else -1
            if c >= 0:
                out[i] = code_name(codes[c].co_qualname)
                continue
            if table_names is None:
                table_names, table_ids = tb.callee_names, tb["callee_id"]
            out[i] = code_name(str(table_names[table_ids[nested[i]]]))
        return out

    def path(self, row: int) -> str:
        got = self.cache.get(row)
        if got is not None:
            return got
        t = self.trace
        chain = []
        r = row
        while r >= 0 and r not in self.cache:
            chain.append(r)
            r = t.parent(r)
        prefix = self.cache.get(r, "") if r >= 0 else ""
        for r in reversed(chain):
            i = int(np.searchsorted(self.nested, r))
            if i >= len(self.nested) or self.nested[i] != r or r in self.transparent:
                self.cache[r] = prefix   # not a recorded Python call: no component
                continue
            name = self.names[i]
            if t.parent(r) < 0:
                prefix = name
            else:
                prefix = join(prefix, component(name, int(self.line[i]), int(self.occ[i])))
            self.cache[r] = prefix
        return prefix


def _is_python_call(trace, row: int) -> bool:
    """Whether nested row `row` is a Python frame (not a C call that entered some)."""
    fn = _core.node_view(trace, row).function
    fn = getattr(fn, "value", None)
    return getattr(getattr(fn, "__func__", fn), "__code__", None) is not None


def _occurrences(*keys_then_rows) -> np.ndarray:
    """For each element, how many earlier elements (by the last array, the rows)
    have the same keys (all arrays but the last)."""
    *keys, rows = keys_then_rows
    n = len(rows)
    if n == 0:
        return np.empty(0, dtype=np.int64)
    order = np.lexsort((rows, *reversed(keys)))
    stacked = np.stack([np.asarray(k)[order] for k in keys])
    new_group = np.ones(n, dtype=bool)
    if n > 1:
        new_group[1:] = (stacked[:, 1:] != stacked[:, :-1]).any(axis=0)
    starts = np.flatnonzero(new_group)
    group_start = np.repeat(starts, np.diff(np.append(starts, n)))
    occ = np.empty(n, dtype=np.int64)
    occ[order] = np.arange(n) - group_start
    return occ


def _addresses(draws: Draws) -> list[str]:
    trace, tb = draws.trace, draws.tb
    if len(draws) == 0:
        return []
    paths = _Paths(trace, tb)
    parents = tb["parent"][draws.rows]
    site_key = np.array([_site_key(draws.sites[s]) for s in range(len(draws.sites))],
                        dtype=np.int64)[draws.site_of]
    lines = np.array([-(1 << 40) if draws.sites[s].line is None else draws.sites[s].line
                      for s in draws.site_of.tolist()], dtype=np.int64)
    occ = _occurrences(parents, site_key, lines, draws.rows).tolist()
    base = [component(s.site, s.line, 0) for s in draws.sites]
    prefix: dict[int, str] = {}
    out = []
    for p, sid, k in zip(parents.tolist(), draws.site_of.tolist(), occ):
        pre = prefix.get(p)
        if pre is None:
            pre = prefix[p] = paths.path(p) + "/"
        out.append(f"{pre}{base[sid]}[{k}]" if k else pre + base[sid])
    return out


_SITE_KEYS: dict = {}


def _site_key(site: Site) -> int:
    """An int per site name (sites of one name on one line are counted together)."""
    return _SITE_KEYS.setdefault(site.site, len(_SITE_KEYS))


def same_shape(old: Draws | None, new: Draws) -> bool:
    """Whether `new`'s draws have `old`'s addresses because the two runs recorded
    the same call tree: the same rows (kind, parent, code, offset, frame flag), the
    same code objects, the same callables at the calls with a body, and the draws
    at the same rows and sites.  Then `new` takes `old`'s addresses (they are a
    function of these alone: _Paths, _addresses) instead of computing them.  False
    when unsure (the caller compares the addresses themselves)."""
    if old is None or len(old) != len(new) or not np.array_equal(old.rows, new.rows):
        return False
    a, b = old.trace, new.trace
    if len(a) != len(b) or len(a.codes) != len(b.codes) or \
            any(x is not y for x, y in zip(a.codes, b.codes)):
        return False
    ca, cb = a.columns(), b.columns()
    for name in ("kind", "parent", "offset", "code"):
        if not np.array_equal(ca[name], cb[name]):
            return False
    if not np.array_equal(ca["flags"] & _FRAME, cb["flags"] & _FRAME):
        return False
    nested = np.flatnonzero(ca["kind"] == _NESTED)
    if len(nested):
        fa, fb = _callees(a, ca, nested), _callees(b, cb, nested)
        if any(map(_not_same, fa, fb)):
            return False
    keys: dict = {}
    sa = np.array([keys.setdefault((s.site, s.line), len(keys)) for s in old.sites],
                  dtype=np.int64)
    sb = np.array([keys.setdefault((s.site, s.line), len(keys)) for s in new.sites],
                  dtype=np.int64)
    if not np.array_equal(sa[old.site_of] if len(sa) else old.site_of,
                          sb[new.site_of] if len(sb) else new.site_of):
        return False
    new._addresses = old.addresses
    return True


def copy_scores(old: Draws | None, new: Draws) -> bool:
    """Give `new` the log-densities of `old` when each of its draws has the value,
    the sampler and the parameters the same draw of `old` had (a replay by position
    of the same call tree, same_shape): scoring again would compute the same numbers.
    False, nothing copied, when unsure (an irregular site, a value or parameter that
    does not compare equal as a plain bool, NaN, an unknown density)."""
    if old is None or len(old) != len(new) or len(old.sites) != len(new.sites) or \
            not np.array_equal(old.site_of, new.site_of) or np.isnan(old.logp).any():
        return False
    try:
        for a, b in zip(old.sites, new.sites):
            if a.sampler is not b.sampler or a.problem or b.problem or \
                    a.draws is not None or b.draws is not None or \
                    a.template.keys() != b.template.keys() or \
                    not np.array_equal(a.members, b.members):
                return False
            pa, pb = a.column_params(), b.column_params()
            for k, x in pa.items():
                if not _equal(x, pb[k]):
                    return False
        if not _equal(old.values, new.values):
            return False
    except (TypeError, ValueError):   # an array's == is no bool: unsure
        return False
    new.logp[:] = old.logp
    return True


def _equal(x, y) -> bool:
    # Equal as the program's values are (lists element by element), and of one type.
    return type(x) is type(y) and (x == y) is True


def _callees(trace, cols: dict, rows: np.ndarray) -> list:
    """What each of call rows `rows` called, read in one pass in C
    (`Trace.values_at`; a row with no inputs has none: None; a weakly held
    callee is read through its reference)."""
    start, stop = cols["ref_start"][rows], cols["ref_start"][rows + 1]
    has = start < stop
    codes = cols["refs"][start[has]]
    got = trace.values_at(codes)
    if has.all():
        return got
    out: list = [None] * len(rows)
    for i, v in zip(np.flatnonzero(has).tolist(), got):
        out[i] = v
    return out


_not_same = operator.is_not
