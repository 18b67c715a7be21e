"""The plan cache's load path per code object: what a plan read from the cache costs in
a process that has not read it yet, and in one that holds the plan of another code
object of the same content.

Usage::

    python bench/plancache.py [--repeat N]

Every code object of json.decoder, json.encoder, difflib, textwrap and ast, compiled
afresh from their sources, has its plan written to a fresh cache directory; then,
best of N, process CPU time per code object, over fresh copies (`code.replace()`:
no plan in the core yet):

- "entry": `cache.entry(code, 0)` alone (the key; where the cache has packs, the
  pack's place);
- "load": the plan read as a new process reads it (the cache's in-process state
  dropped first: each pack read and indexed again) and its CodePlan made, by
  `cache.load` (build_plan's first step: one typed call) where the cache has it,
  else by `CodePlan(code, 0, **cache.entry(code, 0).read())`;
- "load (entry)": the same through `cache.entry(code, 0).read()` and CodePlan(...)
  (the load path before session 14, and the one that says why an entry is refused);
- "first sight": the core's whole set-up of a code object it has not seen, from
  the cache (`_core.plan_of`: the plan loaded, its CPlan made and stored on the
  code object);
- "reused": the same as "load" in a process that already holds those plans (code
  compiled again with the same content), where the cache keeps plans by content;
- "tracked/plan": objects the garbage collector tracks after a load, per plan
  (the CodePlans kept alive).

It runs on any version of tracer with a plan cache (the "before" numbers of
bench/RESULTS.md came from main's checkout with the same script).
"""

from __future__ import annotations

import argparse
import gc
import importlib
import shutil
import sys
import tempfile
import time
import types
from pathlib import Path

from tracer import _core
from tracer.analysis import cache
from tracer.analysis.plan import CodePlan, build_plan

MODULES = ["json.decoder", "json.encoder", "difflib", "textwrap", "ast"]


def corpus() -> list[types.CodeType]:
    found: list[types.CodeType] = []

    def collect(c: types.CodeType) -> None:
        found.append(c)
        for k in c.co_consts:
            if isinstance(k, types.CodeType):
                collect(k)

    for name in MODULES:
        mod = importlib.import_module(name)
        collect(compile(Path(mod.__file__).read_text(), mod.__file__, "exec"))
    return found


def _drop_state() -> None:
    # As a new process: nothing read or kept (versions without packs keep nothing).
    forget = getattr(cache, "forget", None)
    if forget is not None:
        forget()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    codes = corpus()
    folder = tempfile.mkdtemp(prefix="tracer-plancache-bench-")
    try:
        cache.set_plan_cache(folder)
        for c in codes:
            build_plan(c)
        _drop_state()
        best = {k: float("inf") for k in ("entry", "load", "load_entry", "first_sight", "reused")}
        fast = getattr(cache, "load", None)

        def load(c):
            plan = fast(c, 0, CodePlan) if fast is not None else None
            return plan if plan is not None else CodePlan(c, 0, **cache.entry(c, 0).read())
        tracked = 0.0
        for _ in range(args.repeat):
            copies = [c.replace() for c in codes]
            t = time.process_time()
            for c in copies:
                cache.entry(c, 0)
            best["entry"] = min(best["entry"], time.process_time() - t)

            copies = [c.replace() for c in codes]
            _drop_state()
            gc.collect()
            before = len(gc.get_objects())
            t = time.process_time()
            plans = [load(c) for c in copies]
            best["load"] = min(best["load"], time.process_time() - t)
            tracked = (len(gc.get_objects()) - before) / len(plans)

            copies = [c.replace() for c in codes]
            _drop_state()
            gc.collect()
            t = time.process_time()
            plans = [CodePlan(c, 0, **cache.entry(c, 0).read()) for c in copies]
            best["load_entry"] = min(best["load_entry"], time.process_time() - t)

            copies = [c.replace() for c in codes]
            _drop_state()
            gc.collect()
            t = time.process_time()
            plans = [_core.plan_of(c, 0) for c in copies]
            best["first_sight"] = min(best["first_sight"], time.process_time() - t)

            if hasattr(cache, "forget"):
                copies = [c.replace() for c in codes]
                t = time.process_time()
                plans = [load(c) for c in copies]
                best["reused"] = min(best["reused"], time.process_time() - t)
            del plans
        n = len(codes)
        print(f"Python {sys.version.split()[0]}, {n} code objects of {', '.join(MODULES)}, "
              f"best of {args.repeat}")
        print(f"  entry  {best['entry'] * 1e6 / n:7.2f} us")
        print(f"  load   {best['load'] * 1e6 / n:7.2f} us")
        print(f"  load (entry) {best['load_entry'] * 1e6 / n:7.2f} us")
        print(f"  first sight  {best['first_sight'] * 1e6 / n:7.2f} us")
        if best["reused"] != float("inf"):
            print(f"  reused {best['reused'] * 1e6 / n:7.2f} us")
        print(f"  tracked objects per loaded plan: {tracked:.1f}")
    finally:
        cache.set_plan_cache(None)
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
