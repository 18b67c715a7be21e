"""The subprocess side: run programs untraced and traced, write one JSON line per step.

Reads `{"programs": [{"id": ..., "source": ...}, ...], "progress": PATH}` on stdin.
Before each program it appends `{"begin": id}` to PATH (flushed), after it
`{"id": id, ...record}`, so when the interpreter dies the parent knows which program
was running.  Run as `python -m fuzz.child` with `tests/` on the path.
"""

from __future__ import annotations

import faulthandler
import gc
import io
import json
import re
import sys
import time
import traceback
import types
import zlib
from collections import Counter

import numpy as np

import tracer
from tracer._core import FLAGS, NodeKind
from tracer.views import UNKNOWN
from tracer.views.nodes import node_at

# Each program is traced again under one value policy but "keep", chosen by its id
# (a replay runs the same one), and on the general paths: the program must behave
# as untraced, and its trace must have the structure of the "keep" trace (and, on
# the general paths, its values too).
POLICIES = ("none", "summary", "weak")
STRUCTURE = ("kind", "flags", "parent", "offset", "aux", "code", "ref_start", "refs")
KIND_NESTED = int(NodeKind.K_NESTED)
PRINT_LEVELS = 3
ALL_LEVELS = sys.getrecursionlimit()
ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")
ROW = re.compile(r"^GraphError: row (\d+):")


def main() -> None:
    faulthandler.enable()  # a segfault leaves a Python traceback on stderr for the report
    job = json.load(sys.stdin)
    with open(job["progress"], "a", encoding="utf-8") as progress:
        for program in job["programs"]:
            _write(progress, {"begin": program["id"]})
            try:
                record = run_program(program["source"], program["id"])
            except Exception as exc:
                # Not the traced program's doing (its exceptions are caught and compared)
                # nor tracer's checks' (guarded): a generator or harness bug.
                record = {"harness_error": "".join(traceback.format_exception(exc)[-3:]).strip()}
            record["id"] = program["id"]
            _write(progress, record)


def _write(progress, entry: dict) -> None:
    progress.write(json.dumps(entry) + "\n")
    progress.flush()


def load(source: str, name: str) -> types.ModuleType:
    """A fresh module from `source` (fresh LOG, fresh counters, fresh defaults)."""
    module = types.ModuleType("fuzzed")
    exec(compile(source, f"<fuzz {name}>", "exec"), module.__dict__)
    return module


def run_program(source: str, name: str) -> dict:
    """Run `main(*ARGS)` untraced, then traced in a fresh copy of the module; check the trace."""
    started = time.perf_counter()
    module = load(source, name)
    untraced = _observe(lambda: module.main(*module.ARGS))
    record = {"untraced": untraced, "log_untraced": safe_repr(module.LOG)}
    untraced_seconds = time.perf_counter() - started

    module = load(source, name)
    root = None
    try:
        root = tracer.track(module.main, *module.ARGS)
        traced = {"returned": safe_repr(root.value)}
    except tracer.TrackingError as err:
        record["tracker_error"] = _describe(err) + (f" (caused by {_describe(err.__cause__)})"
                                                   if err.__cause__ is not None else "")
        traced = ({"raised": type(err.exception).__name__, "message": str(err.exception)}
                  if err.exception is not None else {"returned": safe_repr(err.result)})
        root = tracer.last_trace()
    except Exception as exc:
        traced = {"raised": type(exc).__name__, "message": str(exc)}
        root = tracer.last_trace()
    record.update(traced=traced, log_traced=safe_repr(module.LOG))
    if root is not None:
        record["nodes"] = len(root.trace)
        record.update(check_trace(root, module.LOG, complete="tracker_error" not in record))
    record["seconds"] = [round(untraced_seconds, 4), round(time.perf_counter() - started - untraced_seconds, 4)]
    if "tracker_error" not in record:
        record["policy"] = run_under_policy(source, name, root)
        record["general"] = run_on_general_paths(source, name, root)
    return record


def policy_of(name: str) -> tuple[str, bool]:
    """The value policy program `name` is traced under a second time, and whether
    through the general call entry (FollowCalls) rather than the plain one."""
    h = zlib.crc32(name.encode())
    return POLICIES[h % len(POLICIES)], bool(h & 8)


class FollowCalls(tracer.Context):
    """A canrecur hook that follows every call: every frame starts on the general
    entry, its rows on the fast paths."""

    def canrecur(self, f, /, *args, **kwargs) -> bool:
        return True


class GeneralPaths(FollowCalls):
    """FollowCalls and a node hook on returns: every call, resume, yield and row
    takes the recorder's general paths, the reference its fast paths are compared
    with."""

    def trackedreturn(self, node) -> None:
        pass


def run_under_policy(source: str, name: str, keep_root) -> dict:
    """Trace `main(*ARGS)` again, in a fresh copy of the module, under policy_of(name):
    its outcome and LOG (compared with the untraced run's by classify), and where its
    trace's structure differs from the "keep" trace `keep_root`'s (None if it does not)."""
    values, follow = policy_of(name)
    kind = FollowCalls if follow else tracer.Context
    return _run_again(source, name, keep_root, lambda: kind(values=values),
                      {"values": values, "follow": follow})


def run_on_general_paths(source: str, name: str, keep_root) -> dict:
    """Trace `main(*ARGS)` again, in a fresh copy of the module, with GeneralPaths:
    its outcome and LOG, and where its trace (columns and values) differs from
    `keep_root`'s, the one the fast paths recorded."""
    return _run_again(source, name, keep_root, GeneralPaths, {"general": True})


def _run_again(source: str, name: str, keep_root, make_ctx, out: dict) -> dict:
    module = load(source, name)
    root = None
    try:
        root = tracer.track(module.main, *module.ARGS, ctx=make_ctx())
        traced = {"returned": safe_repr(root.value)}
    except tracer.TrackingError as err:
        return dict(out, tracker_error=_describe(err))
    except Exception as exc:
        traced = {"raised": type(exc).__name__, "message": str(exc)}
        root = tracer.last_trace()
    out = dict(out, traced=traced, log_traced=safe_repr(module.LOG))
    if root is not None:
        out["validate"] = _check(lambda: tracer.validate(root))
        if "asyncio" not in source:
            # (asyncio keeps its tasks in weak sets: under a policy a task dies
            # when the program drops it and the set's weakref callback runs
            # inside the traced call, as untraced; the "keep" trace holds the
            # task, so the callback runs later or never.  And its event loop's
            # state differs from run to run.)
            out["structure"] = _guard(lambda: _difference(keep_root, root, "general" in out))
            if out["structure"]:
                # The collector runs at other times in another run (the trace
                # holds other objects), and with it the finalizers of cyclic
                # garbage: a difference counts if it stays with the collector
                # off in two fresh runs.
                out["structure"] = _guard(lambda: _without_collector(source, name, make_ctx,
                                                                     "general" in out))
    return out


def _without_collector(source: str, name: str, make_ctx, with_values: bool) -> str | None:
    roots = []
    gc.collect()
    gc.disable()
    try:
        for ctx in (tracer.Context(), make_ctx()):
            module = load(source, name)
            try:
                roots.append(tracer.track(module.main, *module.ARGS, ctx=ctx))
            except Exception:
                roots.append(tracer.last_trace())
    finally:
        gc.enable()
    return _difference(*roots, with_values)


def _difference(keep_root, root, with_values: bool) -> str | None:
    """_structure_difference, then (`with_values`: both traces keep the objects) where
    the two rows' values differ in type or in repr (addresses left out)."""
    found = _structure_difference(keep_root, root)
    if found or not with_values:
        return found
    a, b = keep_root.trace, root.trace
    for row in range(len(a)):
        va, vb = a.value(row), b.value(row)
        if type(va).__qualname__ != type(vb).__qualname__ or \
                ADDRESS.sub("", safe_repr(va)) != ADDRESS.sub("", safe_repr(vb)):
            return f"the value of row {row} differs from the fast paths' ({type(vb).__qualname__})"
    return None


def _structure_difference(keep_root, root) -> str | None:
    """Where trace `root`'s columns (all but its values) first differ from
    `keep_root`'s, or None.  Generators closed by their finalizer are left out of
    both: under a policy one the program drops is closed when it drops it, inside
    the traced call, as untraced, while the "keep" trace holds it past the call."""
    if keep_root is None:
        return "no trace under keep to compare with"
    a, b = _structure(keep_root.trace), _structure(root.trace)
    if len(a["kind"]) != len(b["kind"]):
        return f"{len(b['kind'])} rows, {len(a['kind'])} under keep (closed generators left out)"
    for column in STRUCTURE:
        x, y = a[column], b[column]
        if len(x) != len(y) or (x != y).any():
            at = next((i for i in range(min(len(x), len(y))) if x[i] != y[i]), min(len(x), len(y)))
            return f"column {column} differs from keep's at {at}"
    return None


def _structure(trace) -> dict:
    """`trace`'s columns but its values, without the subtrees of generators closed
    by a finalizer (a frame entered from C whose node raised GeneratorExit), rows
    renumbered; a pool ref as -1 (a policy pools by what it keeps: an object the
    "keep" trace pools once, a closure's cell, may be pooled at each use)."""
    cols = trace.columns()
    n = len(trace)
    kind, flags, parent, aux = cols["kind"], cols["flags"], cols["parent"], cols["aux"]
    dropped = np.zeros(n, dtype=bool)
    for row in np.nonzero(flags & FLAGS["frame"])[0].tolist():
        if dropped[row] or not _closed_generator(trace.value(row)):
            continue
        dropped[row:trace.end(row)] = True
    kept = ~dropped
    # A row's new number; an end (aux of a nested row) as the count of kept rows before it.
    before = np.concatenate([[0], np.cumsum(kept)])
    new = before[:-1]
    ref_start, refs = cols["ref_start"], cols["refs"]
    out = {name: cols[name][kept] for name in ("kind", "flags", "offset", "code")}
    out["parent"] = np.where(parent[kept] >= 0, new[np.maximum(parent[kept], 0)], parent[kept])
    nested = kind[kept] == KIND_NESTED
    out["aux"] = np.where(nested, before[np.clip(aux[kept], 0, n)], aux[kept])
    row_refs = [refs[ref_start[r]:ref_start[r + 1]] for r in np.nonzero(kept)[0].tolist()]
    out["ref_start"] = np.concatenate([[0], np.cumsum([len(x) for x in row_refs])]) if row_refs else np.zeros(1)
    flat = np.concatenate(row_refs) if row_refs else np.zeros(0, dtype=refs.dtype)
    out["refs"] = np.where(flat >= 0, new[np.clip(flat, 0, max(n - 1, 0))], -1) if n else flat
    return out


def _closed_generator(value) -> bool:
    return isinstance(value, GeneratorExit) or getattr(value, "type", None) is GeneratorExit


def check_trace(root, log: list, complete: bool) -> dict:
    """The checks every trace must pass: {check: None or what went wrong}.

    Any exception from tracer while checking is a finding, reported as that check's
    failure, never a crash of the child.
    """
    out = {"validate": _check(lambda: tracer.validate(root))}
    if out["validate"] and (row := ROW.search(out["validate"])):
        out["validate"] += " at " + _guard(lambda: _describe_node(
            node_at(root.trace, _innermost_open(root, int(row.group(1))))))
    out["printlevels"] = _check(lambda: tracer.printlevels(root, PRINT_LEVELS, file=io.StringIO()))
    if out["printlevels"]:
        out["printlevels"] += _guard(lambda: _unprintable(root, PRINT_LEVELS))
    else:
        # Beyond what was asked: every level, so a node too deep for the three levels
        # above (inside a resumed generator, say) is still checked.
        out["printlevels_all"] = _check(lambda: tracer.printlevels(root, ALL_LEVELS, file=io.StringIO()))
        if out["printlevels_all"]:
            out["printlevels_all"] += _guard(lambda: _unprintable(root, ALL_LEVELS))
    if complete:  # after a TrackingError the trace stops where tracking did
        out["complete"] = _guard(lambda: _check_complete(root, log))
    out["sources"] = _guard(lambda: _check_sources(root))
    return out


def _check_sources(root) -> str | None:
    """Every input of the trace has a known source: none is tracer.views.UNKNOWN (a
    local the recorder read before it saw it stored, e.g. after a generator's resume)."""
    t = root.trace
    for row in range(len(t)):
        for r in t.refs(row):
            if not isinstance(r, int) and r[1] is UNKNOWN:
                node = node_at(t, row)
                if "$cleanup_throw(" in tracer.format_node(node):
                    # Known limit, left for now: a coroutine resumed by throw() at an
                    # `await` (asyncio.gather cancelling) carries its stack but the
                    # last value sent, which CLEANUP_THROW takes (seed 20261519).
                    continue
                return f"an input of unknown source at {_describe_node(node)}"
    return None


def _guard(call) -> str | None:
    """`call()`, or the description of the exception it raised."""
    try:
        return call()
    except Exception as exc:
        return f" (checking raised {_describe(exc)})"


def _observe(call) -> dict:
    try:
        return {"returned": safe_repr(call())}
    except Exception as exc:
        return {"raised": type(exc).__name__, "message": str(exc)}


def _check(call) -> str | None:
    """None if `call` succeeds, else its error and the innermost tracer frame raising it."""
    try:
        call()
    except Exception as exc:
        return _describe(exc)
    return None


def _describe(exc: BaseException) -> str:
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if "/tracer/" in f.filename]
    where = f" [in {frames[-1].name}, {frames[-1].filename.rsplit('/', 1)[-1]}:{frames[-1].lineno}]" if frames else ""
    return f"{type(exc).__name__}: {exc}{where}"


def _check_complete(root, log: list) -> str | None:
    """The trace records every `LOG.append` the traced run made (generated code touches
    LOG only through `LOG.append`): a trace that skips statements, as after a resumed
    delegating generator, records fewer."""
    recorded = []  # ids of the objects the recorded appends appended
    stack = [root]
    while stack:
        node = stack.pop()
        if isinstance(node, tracer.views.CallNode):
            function = getattr(node.function, "value", None)
            args = node.arguments
            if function is list.append and len(args) == 2 and getattr(args[0], "value", None) is log:
                recorded.append(id(getattr(args[1], "value", None)))
            elif getattr(function, "__self__", None) is log and getattr(function, "__name__", "") == "append":
                recorded.append(id(getattr(args[0], "value", None)) if args else None)
        stack.extend(node.children)
    if len(recorded) == len(log):
        return None
    # Name the first entry with no recorded append: its tag says which statement was lost.
    left = Counter(recorded)
    missing = None
    for entry in log:
        if left[id(entry)]:
            left[id(entry)] -= 1
        elif missing is None:
            missing = entry
    return (f"IncompleteTrace: LOG.append recorded {len(recorded)} times, the traced run appended "
            f"{len(log)}, first entry not recorded: {safe_repr(missing)[:60]}")


def _innermost_open(root, row: int) -> int:
    """For "row N: still open": the last open row, the call that never closed (validate
    names the outermost, usually an innocent caller of it); other errors: `row`."""
    t = root.trace
    if "open" not in FLAGS:
        return row
    rows = [r for r in range(row, len(t)) if t.flags(r) & FLAGS["open"]]
    return rows[-1] if rows else row


def _unprintable(root, levels: int) -> str:
    """Which node printlevels stopped at: the first one format_node cannot format."""
    stack = [(root, 1)]
    while stack:
        node, level = stack.pop()
        try:
            tracer.format_node(node)
        except Exception:
            return " at " + _describe_node(node)
        if level < levels:
            stack.extend((child, level + 1) for child in reversed(node.children))
    return ""


def _describe_node(node) -> str:
    """`KIND FUNCTION in CALLER` for a node: enough to tell failure classes apart."""
    def name(call):
        # A call's function is a Node or a Const; a call whose offset is unknown has
        # Const(None), but its callee is still its first child (@0).
        f = getattr(call.function, "value", None)
        if f is None and isinstance(call, tracer.views.NestedCallNode) and len(call):
            f = call[0].value
        return getattr(f, "__qualname__", None) or type(f).__name__
    try:
        parent = node.parent
        own = name(node) if isinstance(node, tracer.views.CallNode) else ""
        return f"{type(node).__name__} {own} in {name(parent) if parent is not None else 'root'}"
    except Exception as exc:  # the node may be what is broken
        return f"<node not describable: {type(exc).__name__}: {exc}>"


def safe_repr(value) -> str:
    """repr without object addresses (they differ between the two runs)."""
    try:
        return ADDRESS.sub(" at 0x?", repr(value))
    except Exception as exc:  # a huge int, a broken __repr__: still comparable
        return f"<repr failed: {type(exc).__name__}: {exc}>"


if __name__ == "__main__":
    main()
