"""Analyse every code object reachable from every importable stdlib module.

Run as a script (in its own process, since importing the whole stdlib has side
effects): prints one JSON line with counts and the failures.  Every plan is built
by the fast builder and the reference one (tests/plan_compare.py), which must agree.
"""

import importlib
import io
import json
import sys
import types
import warnings
from contextlib import redirect_stderr, redirect_stdout

# Modules whose import opens windows, browsers or prints, or that are not modules.
SKIP = {"antigravity", "this", "idlelib", "turtledemo", "__main__", "_pyrepl", "tkinter",
        "turtle", "_tkinter", "pydoc_data"}


def code_objects(module):
    seen_objs, seen_codes, stack = set(), {}, [module]
    while stack:
        obj = stack.pop()
        if id(obj) in seen_objs:
            continue
        seen_objs.add(id(obj))
        if isinstance(obj, types.ModuleType):
            if obj is not module:
                continue
            stack.extend(vars(obj).values())
        elif isinstance(obj, type):
            if getattr(obj, "__module__", None) != module.__name__:
                continue
            stack.extend(vars(obj).values())
        elif isinstance(obj, (staticmethod, classmethod)):
            stack.append(obj.__func__)
        elif isinstance(obj, property):
            stack.extend(x for x in (obj.fget, obj.fset, obj.fdel) if x is not None)
        elif isinstance(obj, types.FunctionType):
            stack.append(obj.__code__)
        elif isinstance(obj, types.CodeType):
            seen_codes[id(obj)] = obj
            stack.extend(c for c in obj.co_consts if isinstance(c, types.CodeType))
    return list(seen_codes.values())


def main():
    from plan_compare import compare_builders
    from tracer.analysis.ir import IR
    from tracer.analysis.plan import PLAN_EXACT, PLAN_INTERVENE, PLAN_INTERVENE_CALLS, PLAN_PLAIN

    modules = failures = 0
    codes = 0
    errors = []
    for name in sorted(sys.stdlib_module_names):
        if name in SKIP:
            continue
        try:
            with warnings.catch_warnings(), redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()):
                warnings.simplefilter("ignore")
                mod = importlib.import_module(name)
        except BaseException:
            continue
        modules += 1
        for code in code_objects(mod):
            codes += 1
            try:
                # Each variant (plain, snapshots, substitute/override, callables'
                # substitute/override only) built by the fast builder and by the
                # reference one: the same plan.
                plan = compare_builders(code, PLAN_PLAIN)
                compare_builders(code, PLAN_EXACT)
                compare_builders(code, PLAN_INTERVENE)
                compare_builders(code, PLAN_INTERVENE_CALLS)
                IR(code)
                assert max(plan.depth) <= code.co_stacksize
            except Exception as exc:  # noqa: BLE001 - collected and reported
                failures += 1
                if len(errors) < 20:
                    errors.append(f"{name}:{code.co_qualname}: {type(exc).__name__}: {exc}")
    print(json.dumps({"modules": modules, "codes": codes, "failures": failures, "errors": errors}))


if __name__ == "__main__":
    main()
