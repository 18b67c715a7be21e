"""What cold code costs: the first traced call of a code object against a warm one.

Usage::

    python bench/cold.py [--repeat N] [--batch B] [--toolz DIR [--no-gc] [--values P]
                         [--suite-only]]

Part 1, per code object, in one process, interleaved, best of N samples of B calls
each (--batch; per call): the untraced call,
a warm traced call (its plans built), the first traced call of a fresh copy of the
function (`code.replace()`: a new code object with no plan) with the plan cache
off -- the plan is built -- and with the plan cache holding the function's plans
(as in a second process), and the plan building alone, per instruction, by the
builder, by the same builder with its compiled passes off ("python": their Python
statements, the builder before session 10) and by the reference builder (dis decoding, every segment walked again in
every round: the builder before session 8); "build" is the builder's time for the
function's own code object; "load" reading that code object's plan from the cache
(the entry, its checks, the CodePlan), "load(py)" the same with the cache's typed
load path off (tracer.analysis._fastcache: its Python functions, as before session
12); "check" the load-time check alone, in the
core (`_core.plan_problem`), and "check(numpy)" the same rules in Python
(tracer.analysis.plancheck, which the cache ran before session 9).  "instrs" counts the function's own
instructions; the build columns are for its code object alone (words' lambda is
built at its own first call).

`--phases` instead times the plan builder per phase over every code object of
json (encoder, decoder, scanner), difflib, textwrap and ast: the IR's layout
(which the compiled builder no longer runs: it decodes into its own unit
arrays), the builder's set-up (decode, depths and effects), the first events,
the whole build, the same with the compiled passes off, and the reference
builder, in microseconds per instruction.

Part 2 (`--toolz DIR`, DIR an unpacked toolz sdist: `pip download --no-binary :all:
toolz`): toolz's own test functions (toolz/tests/test_*.py, the ones that take no
argument and pass untraced) run in fresh processes, each test traced on its own:
untraced, then traced in a first process (empty plan cache) twice over, then
traced in a second process (the cache the first one filled).  Times of the first
and second pass of each process and the ratios to the untraced pass.

Where a pass's instructions go: one process run alone, its passes under their own C
entry points (`--marked`), e.g. a second process with the plan cache filled::

    TRACER_PLAN_CACHE_DIR=D python bench/cold.py --suite-worker DIR --traced   # fills D
    TRACER_PLAN_CACHE_DIR=D valgrind --tool=callgrind --toggle-collect=filter_next \
        python bench/cold.py --suite-worker DIR --traced --marked   # its pass 1 alone
    (--toggle-collect=filterfalse_next: pass 2 alone)

`--hold` (with `--marked`) keeps each test's root until the next `track` returns,
as the timed passes do (they bind it to a name): the collector then meets the
traces after their call, which the marked passes otherwise drop at once.

`--track-cost` instead measures what one `tracer.track` call costs beyond the call
it traces: a trivial function (`def f(x): return x`) called untraced and tracked, in
loops of B calls (--batch), interleaved, best of N (--repeat), in microseconds per
call -- the fixed cost a suite pays once per traced test.

`--instructions` (with `--toolz DIR`) gives the suite's verdict in instructions, which
do not move with the machine's load: callgrind counts the untraced pass 2 (the
timed ratio's denominator) and the traced pass 1 of a second process (the plan
cache filled by a first, uncounted, process), each under `--marked`, with its
cache simulation (`--cache-sim=yes`: L1 and last-level misses) and, with
`--branch-sim`, its branch simulation (mispredictions); it prints both counts,
their ratio, and callgrind's cycle estimate (Ir + 10 per L1 miss + 100 per
last-level miss + 10 per misprediction) -- what a timed ratio weighs that an
instruction count does not.  Minutes under valgrind: run it niced.

`--no-gc` runs those processes with the garbage collector off: a process whose
plans came from the cache holds fewer long-lived objects than one that built them,
so the collector's full collections (which walk every trace still alive) come
more often, which is not the plans' cost.

`--values P` traces the suite with `Context(values=P)` ("none", "weak", ...): what
the traces keep of values decides how much cyclic garbage the collector meets
(exceptions kept as values hold their tracebacks and frames); the time each pass
spent in the collector is printed beside it.

`--heap` (with `--toolz DIR`) instead counts the long-lived objects the collector
tracks after the suite's two passes and a full collection (`gc.get_objects()`, the
last trace dropped), by type, in the three processes (untraced, a first traced
process, a second one with the plan cache filled), and prints what the traced
processes hold above the untraced one: what every full collection walks that
tracing added.

`--gc-walk` (with `--toolz DIR`) instead counts the objects each pass's
collections walked (the sizes of the generations a collection takes in, read
at its start, summed by the generation collected) in the three processes: how
much more the collector walks in a traced pass, and in which generations.

Each pass's line of part 2 gives the time the garbage collector took in it (its
`gc.callbacks`) and its collections by generation (young/middle/full).

All times are the process's CPU time (time.process_time): the machine is shared,
and wall-clock samples there include other processes' turns.
"""

from __future__ import annotations

import argparse
from collections import Counter
import contextlib
import gc
import importlib.util
import itertools
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import types
from pathlib import Path

import tracer
from tracer.context import Context
from tracer.analysis import bytecode, cache, plan
from tracer.analysis.bytecode import _decode_fast
from tracer import _core
from tracer.analysis.plan import CodePlan, _Builder
from tracer.analysis.plancheck import plan_violation


# -- workloads: self-contained functions (builtins only), so a first call builds one plan --
def poly(x):
    y = 3 * x * x - 2 * x + 1
    if y > 10:
        y = y // 3
    return y


def words(text):
    counts = {}
    for w in text.split():
        w = w.strip(".,;").lower()
        if not w:
            continue
        counts[w] = counts.get(w, 0) + 1
    best = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    return best[:3]


def tokens(src):
    out, i, n = [], 0, len(src)
    while i < n:
        c = src[i]
        if c.isspace():
            i += 1
        elif c.isdigit():
            j = i
            while j < n and src[j].isdigit():
                j += 1
            out.append(("num", int(src[i:j])))
            i = j
        elif c.isalpha() or c == "_":
            j = i
            while j < n and (src[j].isalnum() or src[j] == "_"):
                j += 1
            out.append(("name", src[i:j]))
            i = j
        elif c in "+-*/()=<>":
            if src[i:i + 2] in ("==", "<=", ">="):
                out.append(("op", src[i:i + 2]))
                i += 2
            else:
                out.append(("op", c))
                i += 1
        else:
            raise SyntaxError(f"bad character {c!r} at {i}")
    return out


def stats(xs):
    n = len(xs)
    if n == 0:
        return None
    mean = sum(xs) / n
    var = 0.0
    lo = hi = xs[0]
    for x in xs:
        var += (x - mean) ** 2
        if x < lo:
            lo = x
        elif x > hi:
            hi = x
    try:
        ratio = hi / lo
    except ZeroDivisionError:
        ratio = float("inf")
    return {"n": n, "mean": mean, "sd": (var / n) ** 0.5, "range": (lo, hi), "ratio": ratio}


def schedule(tasks, workers):
    free = [(0, w) for w in range(workers)]
    done = []
    for name, cost, deps in sorted(tasks, key=lambda t: (len(t[2]), t[0])):
        start = max([end for d in deps for (n, _, end) in done if n == d], default=0)
        free.sort()
        at, w = free.pop(0)
        at = max(at, start)
        done.append((name, w, at + cost))
        free.append((at + cost, w))
    return max(end for _, _, end in done), done


WORKLOADS = [
    ("poly", poly, (7,)),
    ("words", words, ("the cat and the hat. The cat sat; the end",)),
    ("tokens", tokens, ("x1 = (a + 12) * b_2 <= 7",)),
    ("stats", stats, ([3.0, 1.5, 4.0, 1.0, 5.5, 9.0],)),
    ("schedule", schedule, ([("a", 3, ()), ("b", 2, ("a",)), ("c", 4, ("a",)),
                             ("d", 1, ("b", "c"))], 2)),
]


def fresh(f):
    """A copy of `f` whose code objects (and nested ones) are new: no plan yet."""
    def renew(code):
        consts = tuple(renew(c) if isinstance(c, types.CodeType) else c for c in code.co_consts)
        return code.replace(co_consts=consts)

    g = types.FunctionType(renew(f.__code__), f.__globals__, f.__name__, f.__defaults__,
                           f.__closure__)
    g.__kwdefaults__ = f.__kwdefaults__
    return g


def _time(fn, batch: int) -> float:
    """Seconds per call of fn(i) for i in range(batch), gc collected before."""
    gc.collect()
    t = time.process_time()
    for i in range(batch):
        fn(i)
    return (time.process_time() - t) / batch


@contextlib.contextmanager
def _compiled_passes(on: bool):
    """The builder with its compiled passes (tracer.analysis._fastplan), or with
    their Python statements (the same plans), for the "python/instr" column."""
    saved = bytecode._fastplan, plan._fastplan
    if not on:
        bytecode._fastplan = plan._fastplan = None
    try:
        yield
    finally:
        bytecode._fastplan, plan._fastplan = saved


@contextlib.contextmanager
def _fast_cache(on: bool):
    """The plan cache's typed load path (tracer.analysis._fastcache), or its Python
    functions, for the "load(py)" column."""
    saved = cache._fast, cache._code_parts_fast, cache._decode_fast
    if not on:
        cache._fast, cache._code_parts_fast, cache._decode_fast = None, cache._code_parts, cache._decode
    try:
        yield
    finally:
        cache._fast, cache._code_parts_fast, cache._decode_fast = saved


def per_code(repeat: int, batch: int) -> list[dict]:
    plan_dir = tempfile.mkdtemp(prefix="tracer-cold-bench-")
    rows = []
    for name, f, args in WORKLOADS:
        cache.set_plan_cache(plan_dir)
        tracer.track(f, *args)  # warm: plans built (and written to the cache directory)
        best = {k: float("inf") for k in ("untraced", "warm", "cold", "cold_cached",
                                          "build", "build_python", "build_reference", "load",
                                          "load_python", "check",
                                          "check_numpy")}
        for _ in range(repeat):
            best["untraced"] = min(best["untraced"], _time(lambda i: f(*args), batch))
            cache.set_plan_cache(None)
            best["warm"] = min(best["warm"], _time(lambda i: tracer.track(f, *args), batch))
            for key, where in (("cold", None), ("cold_cached", plan_dir)):
                copies = [fresh(f) for _ in range(batch)]  # new code objects: no plans
                cache.set_plan_cache(where)
                best[key] = min(best[key], _time(lambda i: tracer.track(copies[i], *args), batch))
            for key, reference in (("build", False), ("build_python", False),
                                   ("build_reference", True)):
                codes = [fresh(f).__code__ for _ in range(batch)]
                with _compiled_passes(key != "build_python"):
                    best[key] = min(best[key], _time(
                        lambda i: _Builder(codes[i], 0, reference).build(), batch))
            # Reading the function's own plan from the cache (the entry, its checks, the
            # CodePlan), and the load-time check alone: in the core, and the rules in
            # Python (numpy) it replaced.
            cache.set_plan_cache(plan_dir)
            for key in ("load", "load_python"):
                codes = [fresh(f).__code__ for _ in range(batch)]
                with _fast_cache(key == "load"):
                    best[key] = min(best[key], _time(
                        lambda i: CodePlan(codes[i], 0, **cache.entry(codes[i], 0).read()), batch))
            cache.set_plan_cache(None)
            built = _Builder(f.__code__, 0).build()
            best["check"] = min(best["check"], _time(
                lambda i: _core.plan_problem(built, f.__code__), batch))
            best["check_numpy"] = min(best["check_numpy"], _time(
                lambda i: plan_violation(built, f.__code__), batch))
        rows.append({"name": name, "instructions": len(_decode_fast(f.__code__)), **best})
    cache.set_plan_cache(None)
    shutil.rmtree(plan_dir, ignore_errors=True)
    return rows


def print_per_code(rows: list[dict]) -> None:
    print(f"{'function':10} {'instrs':>6} {'untraced':>9} {'warm':>9} {'cold':>9} "
          f"{'cold/warm':>9} {'cached':>9} {'cached/warm':>11} {'build':>9} {'build/instr':>11} "
          f"{'python/instr':>12} {'reference/instr':>15} {'speed-up':>8} {'load':>8} {'load(py)':>8} {'check':>7} "
          f"{'check(numpy)':>12}")
    for r in rows:
        us = {k: r[k] * 1e6 for k in ("untraced", "warm", "cold", "cold_cached", "build",
                                       "build_python", "build_reference", "load", "load_python",
                                       "check", "check_numpy")}
        n = r["instructions"]
        print(f"{r['name']:10} {n:6d} {us['untraced']:7.1f}us {us['warm']:7.1f}us "
              f"{us['cold']:7.1f}us {r['cold'] / r['warm']:8.1f}x {us['cold_cached']:7.1f}us "
              f"{r['cold_cached'] / r['warm']:10.1f}x {us['build']:7.1f}us {us['build'] / n:9.2f}us "
              f"{us['build_python'] / n:10.2f}us {us['build_reference'] / n:13.2f}us {r['build_reference'] / r['build']:7.1f}x "
              f"{us['load']:6.1f}us {us['load_python']:6.1f}us {us['check']:5.2f}us {us['check_numpy']:10.1f}us")


# -- part 2: toolz's test suite in fresh processes --------------------------------------------
def _suite_tests(toolz_dir: Path) -> list:
    tests = []
    for path in sorted((toolz_dir / "toolz" / "tests").glob("test_*.py")):
        spec = importlib.util.spec_from_file_location(f"toolz_tests_{path.stem}", path)
        module = importlib.util.module_from_spec(spec)
        try:
            spec.loader.exec_module(module)
        except Exception:  # noqa: BLE001 - a module that does not import untraced is left out
            continue
        for name, fn in sorted(vars(module).items()):
            if name.startswith("test") and isinstance(fn, types.FunctionType) \
                    and fn.__code__.co_argcount == 0 and fn.__module__ == module.__name__:
                tests.append(fn)
    return tests


def suite_worker(toolz_dir: Path, traced: bool, no_gc: bool, values: str | None = None,
                 marked: bool = False, heap: bool = False, hold: bool = False,
                 walk: bool = False) -> None:
    if no_gc:
        gc.disable()
    tests = _suite_tests(toolz_dir)
    passing = []
    for fn in tests:  # which pass untraced (run in a separate warm-up process too)
        try:
            fn()
            passing.append(fn)
        except Exception:  # noqa: BLE001
            pass
    times, gc_times, nodes, failures = [], [], 0, 0
    ctx = Context(values=values) if values else None
    if traced:
        passing = [fresh(fn) for fn in passing]  # nothing analysed by the check above
    # CPU time spent in the garbage collector during each pass (its callbacks), and
    # its collections by generation.
    in_gc = [0.0, 0.0]
    collections = [0, 0, 0]
    # (--gc-walk: the objects each collection walks, by the generation collected --
    # the sizes of the generations it takes in, read at its start; slow, untimed)
    walked = [0, 0, 0]

    def on_gc(phase: str, info: dict) -> None:
        if phase == "start":
            if walk:
                walked[info["generation"]] += sum(
                    len(gc.get_objects(generation=g)) for g in range(info["generation"] + 1))
            in_gc[1] = time.process_time()
        else:
            in_gc[0] += time.process_time() - in_gc[1]
            collections[info["generation"]] += 1

    gc.callbacks.append(on_gc)
    held = [None]

    def one(fn) -> bool:
        # (--marked's passes: the trace is not bound to a name here, or this frame,
        # kept by the f_back of a traceback the trace holds, would make a cycle)
        nonlocal nodes, failures
        try:
            if hold:
                # (--hold: each root kept until the next track returns, as the
                # unmarked passes keep it in `root`; a list item, not this frame)
                held[0] = tracer.track(fn, ctx=ctx)
                nodes += len(held[0].trace)
            else:
                nodes += len(tracer.track(fn, ctx=ctx).trace)
        except Exception:  # noqa: BLE001
            failures += 1
        return True

    def plain(fn) -> bool:
        fn()
        return True

    gc_counts, faults, system, walks = [], [], [], []
    for k in range(2):
        in_gc[0] = 0.0
        collections[:] = [0, 0, 0]
        walked[:] = [0, 0, 0]
        usage = resource.getrusage(resource.RUSAGE_SELF)
        t = time.process_time()
        if marked:
            # pass 1 under filter_next, pass 2 under filterfalse_next (C entry points
            # of the interpreter, as bench/callgrind_marks.py uses them): `valgrind
            # --tool=callgrind --toggle-collect=filter_next` counts pass 1 alone.
            # Untraced too, so the ratio can be read in instructions.
            step = one if traced else plain
            if k == 0:
                list(filter(step, passing))
            else:
                list(itertools.filterfalse(lambda fn: not step(fn), passing))
        else:
            for fn in passing:
                if traced:
                    try:
                        root = tracer.track(fn, ctx=ctx)
                        nodes += len(root.trace)
                    except Exception:  # noqa: BLE001
                        failures += 1
                else:
                    fn()
        times.append(time.process_time() - t)
        after = resource.getrusage(resource.RUSAGE_SELF)
        # (page faults and kernel time: what a process's CPU time holds that
        # callgrind's instruction counts do not)
        faults.append(after.ru_minflt + after.ru_majflt - usage.ru_minflt - usage.ru_majflt)
        system.append(after.ru_stime - usage.ru_stime)
        gc_times.append(in_gc[0])
        gc_counts.append(list(collections))
        walks.append(list(walked))
    gc.callbacks.remove(on_gc)
    out = {"tests": len(passing), "times": times, "gc": gc_times,
           "collections": gc_counts, "nodes": nodes // 2, "failures": failures,
           "faults": faults, "system": system}
    if walk:
        out["walked"] = walks
    if heap:
        tracer.api._state.last = None  # (the last trace, kept for tracer.last_trace)
        gc.collect()
        out["heap"] = dict(Counter(
            f"{getattr(type(o), '__module__', '?')}.{type(o).__qualname__}"
            for o in gc.get_objects()))
    print(json.dumps(out))


def suite(toolz_dir: Path, no_gc: bool, values: str | None = None, heap: bool = False,
          walk: bool = False) -> dict:
    plan_dir = tempfile.mkdtemp(prefix="tracer-cold-suite-")
    env = dict(os.environ, TRACER_PLAN_CACHE_DIR=plan_dir)
    env.pop("TRACER_PLAN_CACHE", None)

    def run(traced: bool) -> dict:
        out = subprocess.run([sys.executable, __file__, "--suite-worker", str(toolz_dir)]
                             + (["--traced"] if traced else []) + (["--no-gc"] if no_gc else [])
                             + (["--values", values] if values else [])
                             + (["--heap"] if heap else []) + (["--gc-walk"] if walk else []),
                             env=env, capture_output=True, text=True, check=True)
        return json.loads(out.stdout.strip().splitlines()[-1])

    try:
        untraced = run(False)
        first = run(True)
        second = run(True)
    finally:
        shutil.rmtree(plan_dir, ignore_errors=True)
    return {"untraced": untraced, "first": first, "second": second}


def print_walk(r: dict) -> None:
    print("\nobjects the collector walked in each pass (the generations each collection "
          "took in, summed; collections in parentheses), young / middle / full:")
    for label, key in (("untraced", "untraced"), ("first process (empty plan cache)", "first"),
                       ("second process (plan cache filled)", "second")):
        w, c = r[key]["walked"], r[key]["collections"]
        print(f"  {label:36} " + "   ".join(
            f"pass {k + 1} {sum(w[k]):9,} = " + " / ".join(
                f"{n:,} ({m})" for n, m in zip(w[k], c[k])) for k in range(2)))


def print_heap(r: dict, top: int = 12) -> None:
    base = r["untraced"]["heap"]
    print(f"\nlong-lived objects the collector tracks after the suite's two passes "
          f"(gc.get_objects() after gc.collect()): untraced {sum(base.values()):,}")
    for label, key in (("first process (empty plan cache)", "first"),
                       ("second process (plan cache filled)", "second")):
        h = r[key]["heap"]
        extra = {t: h.get(t, 0) - base.get(t, 0) for t in set(h) | set(base)}
        print(f"  {label}: {sum(h.values()):,} ({sum(h.values()) - sum(base.values()):+,}); "
              f"by type: " + ", ".join(f"{t} {n:+,}" for t, n in
                                        sorted(extra.items(), key=lambda kv: -abs(kv[1]))[:top]
                                        if n))


def print_suite(r: dict, no_gc: bool, values: str | None = None) -> None:
    base = r["untraced"]["times"][1]
    how = ", ".join(x for x in ("garbage collector off" if no_gc else "",
                                f"values={values!r}" if values else "") if x)
    print(f"\ntoolz's tests{f' ({how})' if how else ''}: "
          f"{r['untraced']['tests']} test functions, "
          f"{r['first']['nodes']:,} nodes a pass, untraced pass {base * 1e3:.1f} ms "
          f"(failures traced: {r['first']['failures']}, {r['second']['failures']}; "
          f"time in the collector in parentheses, and its collections of generations "
          f"0/1/2)")

    def colls(key: str, k: int) -> str:
        c = r[key].get("collections")
        return "/".join(map(str, c[k])) if c else "?"

    def kernel(key: str, k: int) -> str:
        f, s = r[key].get("faults"), r[key].get("system")
        return f"{f[k]:,} faults, sys {s[k] * 1e3:.1f} ms" if f else ""

    (u1, u2), (ug1, ug2) = r["untraced"]["times"], r["untraced"]["gc"]
    print(f"  {'untraced':36} pass 1 {u1 * 1e3:8.1f} ms {'':8}(gc {ug1 * 1e3:5.1f} ms, "
          f"{colls('untraced', 0):>9}; {kernel('untraced', 0)})   pass 2 {u2 * 1e3:8.1f} ms "
          f"{'':8}(gc {ug2 * 1e3:5.1f} ms, {colls('untraced', 1):>9}; {kernel('untraced', 1)})")
    for label, key in (("first process (empty plan cache)", "first"),
                       ("second process (plan cache filled)", "second")):
        (t1, t2), (g1, g2) = r[key]["times"], r[key]["gc"]
        print(f"  {label:36} pass 1 {t1 * 1e3:8.1f} ms ({t1 / base:6.1f}x, gc {g1 * 1e3:5.1f} ms, "
              f"{colls(key, 0):>9}; {kernel(key, 0)})   pass 2 {t2 * 1e3:8.1f} ms ({t2 / base:6.1f}x, "
              f"gc {g2 * 1e3:5.1f} ms, {colls(key, 1):>9}; {kernel(key, 1)})")


# Callgrind's events: the instructions, the first-level and last-level cache misses
# (instruction and data), the mispredicted conditional and indirect branches.
_CG_EVENTS = {"Ir": "instructions", "I1mr": "", "D1mr": "", "D1mw": "", "ILmr": "",
              "DLmr": "", "DLmw": "", "Bcm": "", "Bim": ""}


def _callgrind_totals(path: Path) -> dict:
    names = totals = None
    for line in path.read_text().splitlines():
        if line.startswith("events:"):
            names = line.split()[1:]
        elif line.startswith("totals:") or line.startswith("summary:"):
            totals = [int(x) for x in line.split()[1:]]
    if names is None or totals is None:
        raise RuntimeError(f"no totals in {path}")
    return dict(zip(names, totals))


def _cycle_estimate(c: dict) -> float:
    # callgrind_annotate's estimate: Ir + 10 Bm + 10 L1m + 100 LLm
    l1 = c.get("I1mr", 0) + c.get("D1mr", 0) + c.get("D1mw", 0)
    ll = c.get("ILmr", 0) + c.get("DLmr", 0) + c.get("DLmw", 0)
    return c["Ir"] + 10 * (c.get("Bcm", 0) + c.get("Bim", 0)) + 10 * l1 + 100 * ll


def instructions(toolz_dir: Path, branch_sim: bool = False, values: str | None = None) -> dict:
    """The untraced pass 2 and a second process's traced pass 1, counted by callgrind."""
    work = Path(tempfile.mkdtemp(prefix="tracer-cold-cg-"))
    env = dict(os.environ, TRACER_PLAN_CACHE_DIR=str(work / "plans"), PYTHONHASHSEED="0")
    env.pop("TRACER_PLAN_CACHE", None)
    worker = [sys.executable, __file__, "--suite-worker", str(toolz_dir)]
    extra = ["--values", values] if values else []
    sim = ["--cache-sim=yes"] + (["--branch-sim=yes"] if branch_sim else [])
    try:
        subprocess.run(worker + ["--traced"] + extra, env=env, check=True,
                       capture_output=True)   # the first process fills the plan cache
        out = {}
        for key, args, mark in (("untraced", [], "filterfalse_next"),
                                ("second", ["--traced"] + extra, "filter_next")):
            dest = work / f"{key}.out"
            subprocess.run(["valgrind", "--tool=callgrind", *sim, f"--toggle-collect={mark}",
                            f"--callgrind-out-file={dest}", *worker, *args, "--marked"],
                           env=env, check=True, capture_output=True)
            out[key] = _callgrind_totals(dest)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return out


def print_instructions(r: dict) -> None:
    u, t = r["untraced"], r["second"]
    print(f"toolz's tests in instructions (callgrind): untraced pass 2 {u['Ir'] / 1e6:,.1f} M, "
          f"second process's traced pass 1 {t['Ir'] / 1e6:,.1f} M: {t['Ir'] / u['Ir']:.2f}x")
    for label, c in (("untraced pass 2", u), ("second process pass 1", t)):
        misses = ", ".join(f"{k} {c[k] / 1e6:,.2f} M" for k in _CG_EVENTS if k in c and k != "Ir")
        print(f"  {label:22} {misses}; cycle estimate {_cycle_estimate(c) / 1e6:,.1f} M")
    print(f"  cycle-estimate ratio {_cycle_estimate(t) / _cycle_estimate(u):.2f}x")


def _trivial(x):
    return x


def track_cost(repeat: int, batch: int) -> dict:
    """Microseconds per untraced call of a trivial function and per `tracer.track`
    of it (interleaved, best of `repeat` loops of `batch` calls)."""
    track = tracer.track
    f = _trivial

    def untraced() -> float:
        t = time.process_time()
        for i in range(batch):
            f(i)
        return time.process_time() - t

    def tracked() -> float:
        t = time.process_time()
        for i in range(batch):
            track(f, i)
        return time.process_time() - t

    tracked()  # (the plan built, the first trace's memory taken)
    best = {"untraced": float("inf"), "track": float("inf")}
    for _ in range(repeat):
        best["untraced"] = min(best["untraced"], untraced())
        best["track"] = min(best["track"], tracked())
    return {k: v * 1e6 / batch for k, v in best.items()}


PHASE_MODULES = ["json.encoder", "json.decoder", "json.scanner", "difflib", "textwrap", "ast"]


def phases(repeat: int) -> list[tuple[str, float]]:
    """The builder per phase over every code object of PHASE_MODULES (their source
    compiled afresh), best of `repeat`, in microseconds per instruction: each row
    runs the builder up to that phase."""
    codes: list[types.CodeType] = []

    def collect(c: types.CodeType) -> None:
        codes.append(c)
        for k in c.co_consts:
            if isinstance(k, types.CodeType):
                collect(k)

    for name in PHASE_MODULES:
        mod = importlib.import_module(name)
        collect(compile(Path(mod.__file__).read_text(), mod.__file__, "exec"))
    ninstr = sum(len(bytecode.layout(c, fast=True).instrs) for c in codes)

    def best(step) -> float:
        times = []
        for _ in range(repeat):
            t = time.process_time()
            for c in codes:
                step(c)
            times.append(time.process_time() - t)
        return min(times) * 1e6 / ninstr

    def first_events(c):
        b = _Builder(c, 0)
        if plan._fastplan is not None:
            plan._fastplan.initial_events(b, plan.pushes_bool)
        else:
            b.initial_events()

    rows = [("the IR's layout (not part of the build)", best(lambda c: bytecode.layout(c, fast=True))),
            ("set-up (decode, depths, effects)", best(lambda c: _Builder(c, 0))),
            ("+ first events", best(first_events)),
            ("whole build", best(lambda c: _Builder(c, 0).build()))]
    with _compiled_passes(False):
        rows.append(("whole build, compiled passes off", best(lambda c: _Builder(c, 0).build())))
    rows.append(("reference builder", best(lambda c: _Builder(c, 0, reference=True).build())))
    print(f"plan builder per phase: {len(codes)} code objects of {', '.join(PHASE_MODULES)}, "
          f"{ninstr:,} instructions, best of {repeat}")
    for label, us in rows:
        print(f"  {label:42s} {us:6.2f} us/instr")
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument("--batch", type=int, default=20, help="calls per timed sample")
    parser.add_argument("--toolz", type=Path, help="an unpacked toolz sdist (its tests)")
    parser.add_argument("--suite-worker", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--traced", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--marked", action="store_true",
                        help="with --suite-worker DIR: pass 1 under filter_next, pass 2 under "
                             "filterfalse_next, for callgrind --toggle-collect")
    parser.add_argument("--hold", action="store_true",
                        help="with --marked: keep each test's root until the next track "
                             "returns, as the timed passes do")
    parser.add_argument("--no-gc", action="store_true",
                        help="run the suite's processes with the garbage collector off")
    parser.add_argument("--values", help="trace the suite with Context(values=VALUES)")
    parser.add_argument("--suite-only", action="store_true", help="skip part 1")
    parser.add_argument("--heap", action="store_true",
                        help="with --toolz DIR: only the long-lived objects the collector "
                             "tracks after the suite's passes, traced against untraced")
    parser.add_argument("--gc-walk", action="store_true",
                        help="with --toolz DIR: only how many objects each pass's "
                             "collections walked, by generation, in the three processes")
    parser.add_argument("--phases", action="store_true",
                        help="only the builder per phase over a corpus of stdlib modules")
    parser.add_argument("--track-cost", action="store_true",
                        help="only the fixed cost of one tracer.track call of a trivial function")
    parser.add_argument("--instructions", action="store_true",
                        help="with --toolz DIR: the untraced pass and a second process's "
                             "traced pass 1 counted by callgrind (cache simulation), and "
                             "their ratio")
    parser.add_argument("--branch-sim", action="store_true",
                        help="with --instructions: callgrind's branch simulation too")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    if args.track_cost:
        us = track_cost(args.repeat, max(args.batch, 1000))
        print(f"Python {sys.version.split()[0]}, best of {args.repeat} loops of "
              f"{max(args.batch, 1000)} calls: untraced call {us['untraced']:.3f} us, "
              f"tracer.track of it {us['track']:.2f} us")
        return
    if args.suite_worker:
        suite_worker(args.suite_worker, args.traced, args.no_gc, args.values, args.marked,
                     args.heap, args.hold, args.gc_walk)
        return
    if args.instructions and args.toolz:
        print(f"Python {sys.version.split()[0]}")
        print_instructions(instructions(args.toolz, args.branch_sim, args.values))
        return
    if args.gc_walk and args.toolz:
        r = suite(args.toolz, args.no_gc, args.values, walk=True)
        print(f"Python {sys.version.split()[0]}")
        print_walk(r)
        return
    if args.heap and args.toolz:
        r = suite(args.toolz, args.no_gc, args.values, heap=True)
        print(f"Python {sys.version.split()[0]}")
        print_heap(r)
        return
    if args.phases:
        print(f"Python {sys.version.split()[0]}")
        phases(args.repeat)
        return
    print(f"Python {sys.version.split()[0]}, best of {args.repeat} samples of {args.batch} calls")
    result: dict = {}
    if not args.suite_only:
        rows = per_code(args.repeat, args.batch)
        print_per_code(rows)
        result["per_code"] = rows
    if args.toolz:
        result["suite"] = suite(args.toolz, args.no_gc, args.values)
        print_suite(result["suite"], args.no_gc, args.values)
    if args.json:
        args.json.write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
