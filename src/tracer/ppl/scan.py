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

import itertools
import operator
from typing import Any

import numpy as np

from .. import _core
from ..views.table import KIND_NAMES
from ._hooks import DRAW_NAME, code_name, original_of
from .address import component, join
from .densities import distribution_name
from .samplers import Draw, Sampler, UnknownSamplerError, method_names, resolve, sample

__all__ = ["scan", "same_shape", "Draws", "Site"]

_PRIMITIVE = int(np.flatnonzero(KIND_NAMES == "primitive")[0])
_NESTED = int(np.flatnonzero(KIND_NAMES == "nested")[0])
_FRAME = int(_core.FLAGS["frame"])


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
        return {k: (cols[v.k][j] if type(v) is _Slot else v) for k, v in self.template.items()}

    def varies(self, name: str) -> bool:
        """Whether parameter `name` of this regular site is a column (one per draw)."""
        return type(self.template.get(name)) is _Slot

    def column_params(self) -> dict:
        """The parameters as columns (lists) where they vary, scalars where not."""
        cols = self.columns
        return {k: (cols[v.k] if type(v) is _Slot else v) for k, v in self.template.items()}


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


def _candidate_rows(tb) -> np.ndarray:
    names = tb.callee_names
    wanted = method_names() | {DRAW_NAME}
    ok = np.array([str(n).rsplit(".", 1)[-1] in wanted for n in names.tolist()], dtype=bool)
    if not ok.any():
        return np.empty(0, dtype=np.int64)
    # a sampler written in C that calls Python code (numpy's choice, poisson) is a call
    # with a body of frames entered from C: a nested row
    kind = tb["kind"]
    return np.flatnonzero(ok[tb["callee_id"]] & ((kind == _PRIMITIVE) | (kind == _NESTED)))


def _value_reader(trace):
    pool, value = trace.pool, trace.value
    return lambda c: value(c) if c >= 0 else pool[-c - 1]


def _outermost(trace, tb, rows: np.ndarray) -> np.ndarray:
    """Leave out candidates inside another candidate's call (a draw is the outermost
    sampler call)."""
    if not (tb["kind"][rows] == _NESTED).any():
        return rows
    keep, until = [], -1
    for r in rows.tolist():
        if r < until:
            continue
        keep.append(r)
        until = max(until, trace.end(r))
    return np.array(keep, dtype=np.int64)


def scan(root, unknown: str = "error", dispatched: bool = False, snaps=None) -> Draws:
    """The draws under `root`, in the order they were made.

    `unknown="error"` raises UnknownSamplerError at a draw whose distribution is not
    known; `"record"` keeps it (its site has `problem` set, its logp stays NaN).
    `dispatched`: `root` is a fixing run's (_hooks.FixingContext), whose every draw
    called a dispatcher: its rows are the substituted ones, found without callee names.
    """
    trace = root.trace
    tb = trace.table()
    originals = None
    if dispatched:
        # the substituted rows and what they called, read in C loops (map): a
        # replay's every draw has its metadata dict
        md = trace.metadata
        cand = np.fromiter(md, dtype=np.int64, count=len(md))
        originals = list(map(_SUBSTITUTED, md.values()))
        has = np.fromiter(map(operator.is_not, originals, itertools.repeat(None)),
                          dtype=bool, count=len(originals))
        if not has.all():
            cand = cand[has]
            originals = list(itertools.compress(originals, has.tolist()))
        if len(cand) > 1 and not (cand[1:] > cand[:-1]).all():   # rows in recording order
            order = np.argsort(cand, kind="stable")
            cand = cand[order]
            originals = [originals[i] for i in order.tolist()]
    else:
        cand = _candidate_rows(tb)
    cols = trace.columns()
    ref_start, refs = cols["ref_start"], cols["refs"]
    read = _value_reader(trace)
    codes, offsets, lines = tb["code"], tb["offset"], tb["line"]
    # group candidates by (code, offset, callee input): one resolution per group
    callee_refs = refs[ref_start[cand]].astype(np.int64) if len(cand) else \
        np.empty(0, dtype=np.int64)
    shapes: dict = {}           # (code, offset) -> (star call, keyword names)
    groups: dict = {}           # key -> rows (int64 array)
    if len(cand):
        # the callee of each row as an object id (one f for a group's rows); a fixing
        # run's rows call a dispatcher: what the program called is the row's
        # metadata["substituted"]
        obj_ids: dict = {}
        if originals is not None:
            ids = np.fromiter(map(id, originals), dtype=np.int64, count=len(originals))
            callee = np.unique(ids, return_inverse=True)[1].reshape(-1).astype(np.int64)
        else:
            codes_u, which = np.unique(callee_refs, return_inverse=True)
            objs = [read(int(c)) for c in codes_u.tolist()]
            obj_of_code = np.array([obj_ids.setdefault(id(o), len(obj_ids)) for o in objs],
                                   dtype=np.int64)
            callee = obj_of_code[which.reshape(-1)]
        site = (codes[cand].astype(np.int64) << 32) | offsets[cand].astype(np.int64)
        order = np.lexsort((cand, callee, site))
        site_s, callee_s, rows_s = site[order], callee[order], cand[order]
        cut = np.flatnonzero((site_s[1:] != site_s[:-1]) | (callee_s[1:] != callee_s[:-1])) + 1
        for start, rows_g in zip(np.concatenate([[0], cut]).tolist(), np.split(rows_s, cut)):
            groups[(int(site_s[start] >> 32), int(site_s[start] & 0xFFFFFFFF),
                    int(callee_s[start]))] = rows_g
    groups = dict(sorted(groups.items(), key=lambda kv: int(kv[1][0])))
    found_rows: list[int] = []
    found_site: list[int] = []
    sites: list[Site] = []
    site_ids: dict = {}
    per_row: list[tuple[int, int]] = []
    chunks: list[tuple[np.ndarray, int]] = []   # (rows, site) of regular sites
    called = _called(trace)
    for (c, o, *_), rows_g in groups.items():
        rows = rows_g.tolist()
        first = rows[0]
        shape = shapes.get((c, o))
        if shape is None:
            node = _core.node_view(trace, first)
            shape = shapes[(c, o)] = (node.is_star_call, tuple(node.keywords))
        star, kwnames = shape
        f = called(first, read(int(refs[ref_start[first]])) if not star else
                   _core.node_view(trace, first).function.value)
        irregular = star or f is sample
        todo = rows if irregular else rows[:1]
        i = 0
        while i < len(todo):
            r = todo[i]
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
            line = None if f is sample else int(lines[r])
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
                per_row.append((r, sid))
                if not irregular:
                    # a user sampler, a shuffle, an unknown density: the site's
                    # other rows (same callee, so the same kind) one by one too
                    todo, irregular = rows, True
            else:
                chunks.append((rows_g, sid))
    parts_rows = [c[0] for c in chunks] + [np.array([t[0] for t in per_row], dtype=np.int64)]
    parts_site = [np.full(len(c[0]), c[1], dtype=np.int64) for c in chunks] + \
        [np.array([t[1] for t in per_row], dtype=np.int64)]
    all_rows = np.concatenate(parts_rows)
    site_of = np.concatenate(parts_site)
    if len(all_rows) > 1 and not (all_rows[1:] > all_rows[:-1]).all():
        order = np.argsort(all_rows, kind="stable")
        all_rows, site_of = all_rows[order], site_of[order]
    rows_arr = all_rows
    keep = _outermost(trace, tb, rows_arr) if len(rows_arr) else rows_arr
    if len(keep) != len(rows_arr):
        mask = np.isin(rows_arr, keep)
        rows_arr, site_of = rows_arr[mask], site_of[mask]
    # members of each site, in draw order; a regular site's inputs as columns
    by_site = np.argsort(site_of, kind="stable")
    bounds = np.cumsum(np.bincount(site_of, minlength=len(sites)))[:-1] if len(sites) else []
    for s, members in zip(sites, np.split(by_site, bounds) if len(sites) else []):
        s.members = members
        if s.draws is not None:
            s.draws = [s.draws[int(r)] for r in rows_arr[members].tolist()]
    allv = trace.values()
    pool = trace.pool
    # the copies made at the draws (snapshots.py) stand for what the trace holds
    copied = _copies_by_k(snaps) if snaps is not None else {}
    in_copies = snaps.input_columns()[2] if copied else None
    for s in sites:
        if s.draws is None and len(s.members):
            site_rows = rows_arr[s.members]
            base = None
            for v in s.template.values():
                if type(v) is not _Slot or v.k in s.columns:
                    continue
                pos, src = _at(site_rows, *copied[v.k]) if v.k in copied else _NONE
                if len(pos) < len(site_rows):
                    if base is None:
                        base = ref_start[site_rows]
                    col = _read_many(allv, pool, refs[base + v.k])
                else:
                    col = None              # every draw's input copied
                s.columns[v.k] = _patched(col, pos, in_copies, src)
    value_rows, value_copies = snaps.value_columns() if snaps is not None else _NONE
    pos, src = _at(rows_arr, value_rows, np.arange(len(value_rows)))
    values = _patched(_read_many(allv, pool, rows_arr) if len(pos) < len(rows_arr) else None,
                      pos, value_copies, src)
    for s in sites:
        if s.sampler.shuffles < 0:
            continue
        for j, i in enumerate(s.members.tolist()):
            target = s.draws[j].target
            # shuffle returns None: the choice is the order it left (read now)
            values[i] = (tuple(np.asarray(target).tolist()) if isinstance(target, np.ndarray)
                         else tuple(target))
    draws = Draws(trace, tb, rows_arr, values, sites, site_of)
    if unknown == "error" and any(s.problem for s in sites):
        for i, sid in enumerate(site_of.tolist()):
            if sites[sid].problem:
                raise UnknownSamplerError(
                    f"the draw at {draws.addresses[i]} ({sites[sid].problem}); tracer.ppl "
                    f"cannot score it.  Declare the sampler with "
                    f"@tracer.ppl.sampler(logpdf=...), or trace with unknown='record' to "
                    f"keep it with logp=None")
    return draws


def _called(trace):
    """`called(row, callee)`: what call row `row` called — its callee, or for a
    fixing run's dispatcher what the program called in its place."""
    md = trace.metadata

    def called(row: int, callee):
        if original_of(callee) is None:
            return callee
        return md[row]["substituted"]
    return called


def _read_many(allv: list, pool: list, codes: np.ndarray) -> list:
    """The values entries of the refs column name: rows' values and pool constants."""
    codes = np.asarray(codes, dtype=np.int64)
    out = [None] * len(codes)
    if len(codes) == 0:
        return out
    pos = codes >= 0
    if pos.all():
        got = operator.itemgetter(*codes.tolist())(allv)
        return list(got) if len(codes) > 1 else [got]
    for i, c in enumerate(codes.tolist()):
        out[i] = allv[c] if c >= 0 else pool[-c - 1]
    return out


_NONE = (np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64))
_SUBSTITUTED = operator.methodcaller("get", "substituted")


def _copies_by_k(snaps) -> dict:
    """k -> (rows, indices into the copies) of the calls whose input k was copied,
    by row."""
    rows, ks, _ = snaps.input_columns()
    out = {}
    for k in np.unique(ks).tolist():
        idx = np.flatnonzero(ks == k)
        out[k] = (rows[idx], idx)
    return out


def _at(rows: np.ndarray, got_rows: np.ndarray, got_idx: np.ndarray):
    """(positions in `rows` (ascending), the matching entries of `got_idx`) of the
    entries of `got_rows` (ascending) that are among `rows`."""
    if not len(got_rows) or not len(rows):
        return _NONE
    at = np.searchsorted(rows, got_rows)
    ok = at < len(rows)
    ok[ok] = rows[at[ok]] == got_rows[ok]
    return at[ok], got_idx[ok]


def _patched(col: list | None, pos: np.ndarray, src: np.ndarray, idx: np.ndarray) -> list:
    """`col` with col[pos[j]] = src[idx[j]] (`src` an object array), as a new list
    made in C loops; `col` None: every position is in `pos`, in order."""
    if col is None:
        return src[idx].tolist()
    if not len(pos):
        return col
    a = np.fromiter(col, dtype=object, count=len(col))
    a[pos] = src[idx]
    return a.tolist()


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
        if any(x is not y for x, y in zip(fa, fb)):
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
    """What each of call rows `rows` called (None for a row with no inputs)."""
    read = _value_reader(trace)
    start, stop = cols["ref_start"][rows].tolist(), cols["ref_start"][rows + 1].tolist()
    refs = cols["refs"]
    return [read(int(refs[x])) if x < y else None for x, y in zip(start, stop)]
