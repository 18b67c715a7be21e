"""Which input of its call each parameter was bound from, for the whole trace at once.

A cross-call slice walks from a callee's ArgumentNode to the caller's input it was
bound from (and back).  The binding depends only on the call site (its keyword names,
whether it is a star call) and on the callee's signature, so it is worked out once
per (call site, callee code) pair in Python and applied to all the calls of that pair
with numpy: a few Python steps per distinct call site, not per call.
"""

from __future__ import annotations

import inspect

import numpy as np

from .. import _core
from ..analysis.instructions import R_CALL, R_CALL_EX
from ..analysis.ir import ir
from .table import group_keys, group_sites, row_chunks

__all__ = ["arg_sources", "UNKNOWN_SOURCE", "NO_SOURCE", "GATHERED"]

UNKNOWN_SOURCE = -1   # not known: every input of the call counts
NO_SOURCE = -2        # a default value (or not a parameter of an entered call)
GATHERED = -3         # gathered from several arguments (*args, **kwargs, a star call)

# Plain ints: numpy treats an IntEnum operand as a strong int64 and takes a slow path
# (a mask of 6·10^7 rows took 30x longer, and its result 8 bytes per row).
_ARGUMENT = int(_core.NodeKind.K_ARGUMENT)
_NESTED = int(_core.NodeKind.K_NESTED)
_CARRIED = int(_core.NodeFlag.F_CARRIED)
_FRAME = int(_core.NodeFlag.F_FRAME)


def arg_sources(trace) -> tuple[np.ndarray, np.ndarray]:
    """`(rows, sources)`, int32 arrays, `rows` ascending: the parameters' ArgumentNodes
    of the calls whose body was recorded and, for each, the index into its call's
    refs of the input it was bound from (0 for the callee); `GATHERED` when it
    gathered several arguments (`*args`, `**kwargs`, a star call); `NO_SOURCE` for a
    default value.  Other rows have no source.  The core checks each binding against
    the objects (see `_arg_source` in _core/graph.pxi); in a trace whose values are
    not the objects (a value policy, a snapshot) it cannot, and each call is bound
    here for the callee its row holds: a bound method binds its instance from the
    callee and the other parameters one input on.  Cached on the trace."""
    cache = trace._cache
    if cache is None:
        cache = trace._cache = {}
    found = cache.get("arg_sources")
    if found is None:
        found = cache["arg_sources"] = _bind(trace)
    return found


def _parameter_rows(kind: np.ndarray, flags: np.ndarray) -> np.ndarray:
    """The ArgumentNodes that are parameters (not values a resumed frame carried)."""
    parts = []
    for lo, hi in row_chunks(len(kind)):
        found = np.flatnonzero((kind[lo:hi] == _ARGUMENT) & (flags[lo:hi] & _CARRIED == 0))
        parts.append(found.astype(np.int32) + np.int32(lo))
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int32)


def _bind(trace) -> tuple[np.ndarray, np.ndarray]:
    cols = trace.columns()
    kind, flags, parent = cols["kind"], cols["flags"], cols["parent"]
    code, offset, aux, ref_start = cols["code"], cols["offset"], cols["aux"], cols["ref_start"]
    args = _parameter_rows(kind, flags)
    calls = parent[args]
    # Calls the caller's code made (not frames entered from C, not the root).
    keep = calls > 0
    args, calls = args[keep], calls[keep]
    keep = (kind[calls] == _NESTED) & (flags[calls] & _FRAME == 0)
    args, calls = args[keep], calls[keep]
    out = np.full(len(args), NO_SOURCE, dtype=np.int32)
    if not len(args):
        return args, out
    position = aux[args]
    nin = ref_start[calls + 1] - ref_start[calls]
    # One group per (call site, callee code): the binding is the same within a group.
    site_codes, site_offsets, site_of = group_sites(code[calls], offset[calls])
    ncodes = max(len(trace.codes), 1)
    groups, which = group_keys(site_of.astype(np.int64) * ncodes + code[args],
                               len(site_codes) * ncodes)
    # A trace whose values are not the objects (a value policy, a snapshot): the
    # core cannot check a binding against them and takes this table as it is, so
    # each call is bound for the callee its row holds (_core.callee_kinds).
    held = _core.callee_kinds(trace, calls) if trace.snapshots else None
    for g, key in enumerate(groups.tolist()):
        site, callee_code = divmod(key, ncodes)
        site_code, site_offset = int(site_codes[site]), int(site_offsets[site])
        members = np.flatnonzero(which == g)
        rule = _site_rule(trace.codes[site_code], site_offset, trace.codes[callee_code])
        if held is None:
            out[members] = _apply(rule, position[members], nin[members])
            continue
        for kind, apply in ((_PLAIN, _apply), (_BOUND, _apply_bound), (_UNKNOWN, _apply_unknown)):
            part = members[held[members] == kind]
            if len(part):
                out[part] = apply(rule, position[part], nin[part])
    return args, out


# What _core.callee_kinds says a call's callee was.
_PLAIN, _BOUND, _UNKNOWN = 0, 1, 2


def _apply_bound(rule, position: np.ndarray, nin: np.ndarray) -> np.ndarray:
    """_apply for a bound method called (the callee, input 0, is the method): its
    first parameter is bound from the callee, the others as if its function had
    been called without it."""
    if rule is None:
        return _apply(rule, position, nin)
    kwnames, params = rule
    if not params or params[0][0] != "pos":
        # (the instance went to *args, or nowhere: which input is which is not known)
        return _apply_unknown(rule, position, nin)
    # (the instance's parameter lands on position 0 here, which _apply binds to
    # the callee; the function's own row, -1 here, is set back to the callee)
    out = _apply((kwnames, params[1:]), position - 1, nin)
    out[position == 0] = 0
    return out


def _apply_unknown(rule, position: np.ndarray, nin: np.ndarray) -> np.ndarray:
    """A call whose callee the trace does not say: every input counts."""
    out = np.full(len(position), UNKNOWN_SOURCE, dtype=np.int32)
    out[position == 0] = 0
    return out


def _site_rule(site_code, site_offset: int, callee_code):
    """How parameters bind at one call site for one callee: None when every input is
    needed (a star call, an unknown site), else (kwnames, per-parameter kinds)."""
    rec = ir(site_code).recs.get(site_offset)
    if rec is None or rec.sem == R_CALL_EX or rec.sem != R_CALL:
        return None
    co = callee_code
    names = co.co_varnames
    npos = co.co_argcount
    nkwonly = co.co_kwonlyargcount
    star = bool(co.co_flags & inspect.CO_VARARGS)
    starstar = bool(co.co_flags & inspect.CO_VARKEYWORDS)
    params = []
    for j in range(npos + nkwonly + star + starstar):
        if j < npos:
            params.append(("pos", names[j]))
        elif j < npos + nkwonly:
            params.append(("kwonly", names[j]))
        elif star and j == npos + nkwonly:
            params.append(("args", names[j]))
        else:
            params.append(("kwargs", names[j]))
    return tuple(rec.kwnames or ()), params


def _apply(rule, position: np.ndarray, nin: np.ndarray) -> np.ndarray:
    if rule is None:
        out = np.full(len(position), GATHERED, dtype=np.int32)
        out[position == 0] = 0
        return out
    kwnames, params = rule
    k = len(kwnames)
    npos = sum(1 for how, _ in params if how == "pos")
    named = {name for how, name in params if how in ("pos", "kwonly")}
    out = np.full(len(position), NO_SOURCE, dtype=np.int32)
    out[position == 0] = 0
    given = nin - 1 - k          # positional arguments passed (after the callee)
    for j, (how, name) in enumerate(params):
        at = position == j + 1
        if not at.any():
            continue
        if how == "args":      # *args: the positional arguments past the named ones
            out[at & (given > npos)] = GATHERED
            continue
        if how == "kwargs":    # **kwargs: the keyword arguments no parameter is named by
            if set(kwnames) - named:
                out[at] = GATHERED
            continue
        if name in kwnames:
            out[at] = (nin[at] - k + kwnames.index(name)).astype(np.int32)
        elif how == "pos":
            passed = at & (j < given)
            out[passed] = j + 1
    return out
