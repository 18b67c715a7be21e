"""HIPS autograd's own numpy-level tests, run with tracer's gradients (issue 23).

Downloads autograd 1.9.1's source distribution at run time (its `tests/` directory
is not copied into this project), imports its test modules with `autograd`,
`autograd.numpy`, `autograd.test_util` and `autograd.builtins` replaced by plain
numpy and tracer's `grad`/`check_grads`, runs each test function (each
`pytest.mark.parametrize` case separately) and counts:

- passed: every gradient check of the test holds;
- wrong value: a gradient differs from the central difference (or the test's own
  assertion on a gradient fails);
- missing rule: `tracer.NoRuleError` (counted by function);
- other errors: anything else (by exception type and message);
- not applicable: forward-mode-only checks, and complex arguments or results unless
  `--complex` is given (then checked as autograd checks them: complex directions,
  the covector of a complex value its conjugate, inner products Re(sum(conj(a) b))).

`check_grads` is autograd's test: for each call, the vector-Jacobian product along
a random output direction is compared with a central difference (eps 1e-6) along a
random input direction (tolerance 1e-6 absolute or relative).  Second-order checks
(autograd's default `order=2`) are counted apart: `--order 2` runs them through
`tracer.vjp` of the first-order pullback, which needs the pullback itself to be
traceable.

    .venv-3.13/bin/python bench/autograd_suite.py [--order 1|2] [--show missing|wrong|other]
"""

from __future__ import annotations

import argparse
import builtins
import collections
import contextlib
import functools
import importlib
import inspect
import io
import itertools
import os
import subprocess
import sys
import tarfile
import tempfile
import traceback
import types
from pathlib import Path

import numpy as np

import tracer
from tracer.ad.errors import NoRuleError, describe_callable

VERSION = "1.9.1"
MODULES = ["test_numpy", "test_scalar_ops", "test_builtins", "test_list", "test_dict",
           "test_tuple", "test_systematic", "test_binary_ops", "test_linalg", "test_truediv"]
EPS = 1e-6
TOL = RTOL = 1e-6


class WrongValue(AssertionError):
    """A gradient that differs from the central difference."""


class NotApplicable(Exception):
    """A check tracer does not claim: forward mode only, complex values."""


COMPLEX = [False]  # --complex: check complex arguments and results too


# -- the values autograd's checks draw directions in ---------------------------------------------
def _leaves(x) -> list:
    """The float leaves of a value (arrays, numbers, lists, tuples, dicts) as arrays."""
    if isinstance(x, (list, tuple)):
        return [leaf for item in x for leaf in _leaves(item)]
    if isinstance(x, dict):
        return [leaf for k in sorted(x) for leaf in _leaves(x[k])]
    if x is None:
        return []  # tracer's adjoint of an argument holding no float
    a = np.asarray(x)
    if a.dtype.kind == "c" and not COMPLEX[0]:
        raise NotApplicable("complex values")
    return [a]


def _rebuild(x, leaves):
    """A value shaped like `x` from an iterator of leaf arrays."""
    if isinstance(x, (list, tuple)):
        items = [_rebuild(item, leaves) for item in x]
        return items if isinstance(x, list) else tuple(items)
    if isinstance(x, dict):
        return {k: _rebuild(x[k], leaves) for k in sorted(x)}
    if x is None:
        return None
    leaf = next(leaves)
    if isinstance(x, np.ndarray):
        return leaf.reshape(x.shape).astype(x.dtype)
    return complex(leaf) if np.iscomplexobj(x) else float(leaf)


def _randn_like(x, rng):
    return [_randn(leaf, rng) for leaf in _leaves(x)]


def _randn(leaf, rng):
    """A random direction in the space of `leaf` (complex for a complex one)."""
    if leaf.dtype.kind == "c":
        return rng.standard_normal(leaf.shape) + 1j * rng.standard_normal(leaf.shape)
    return rng.standard_normal(leaf.shape)


def _covector(leaf):
    return np.conj(leaf) if np.iscomplexobj(leaf) else leaf


def _inner(a: list, b: list) -> float:
    return float(sum(np.real(np.sum(np.conj(np.asarray(p)) * np.asarray(q)))
                     for p, q in zip(a, b)))


def _axpy(x, alpha, direction):
    leaves = iter(np.asarray(leaf, dtype=complex if np.iscomplexobj(leaf) else float) + alpha * d
                  for leaf, d in zip(_leaves(x), direction))
    return _rebuild(x, leaves)


def _close(a: float, b: float) -> bool:
    return abs(a - b) < TOL or abs(a - b) / abs(a + b) < RTOL


# -- tracer's check_grads -------------------------------------------------------------------------
class Checker:
    """autograd's `check_grads(f, argnum, modes, order)(*args, **kwargs)` on tracer."""

    def __init__(self, order: int):
        self.order = order
        self.rng = np.random.default_rng(0)
        self.second = collections.Counter()  # second-order outcomes
        self.second_why = collections.Counter()  # by what failed
        self.second_wrong: list[str] = []  # the tests whose second order is wrong
        self.second_tests: dict[str, list[str]] = {}  # failure -> the tests it stopped
        self.current = ""  # the test running
        self.checked = 0  # first-order checks run (per test)
        self.skipped = 0  # checks tracer does not claim (per test)

    def check_grads(self, f, argnum=0, modes=("fwd", "rev"), order=2):
        def run(*args, **kwargs):
            if "rev" not in modes:
                self.skipped += 1  # forward mode only
                return
            try:
                self.check_vjp(f, args, kwargs, argnum)
            except NotApplicable:
                self.skipped += 1  # complex values: the test's other checks still count
                return
            self.checked += 1
            if order > 1:
                self._second_order(f, args, kwargs, argnum)
        return run

    def combo_check(self, fun, *check_args, **check_kwargs):
        def run(*arg_lists, **kwarg_lists):
            pairs = [[(k, x) for x in xs] for k, xs in kwarg_lists.items()]
            for args in itertools.product(*arg_lists):
                for kws in itertools.product(*pairs):
                    self.check_grads(fun, *check_args, **check_kwargs)(*args, **dict(kws))
        return run

    def check_vjp(self, f, args, kwargs, argnum):
        """Raise WrongValue unless the VJP along a random direction matches."""
        nums = tuple(argnum) if isinstance(argnum, (tuple, list)) else (argnum,)
        x = tuple(args[p] for p in nums)
        for a in x:
            _leaves(a)  # complex arguments are not applicable
        y, pullback = tracer.vjp(f, *args, **kwargs)
        y_leaves = _leaves(y)
        u = [_randn(leaf, self.rng) for leaf in y_leaves]
        seed = _rebuild(y, iter([_covector(d) for d in u]))
        adj = pullback(seed)
        v = _randn_like(x, self.rng)
        # An argument with no float in it (an empty dict) has no adjoint: None.
        exact = _inner(v, [_covector(leaf) for p in nums for leaf in _leaves(adj[p])])

        def at(alpha):
            moved = _axpy(x, alpha, v)
            new = list(args)
            for p, m in zip(nums, moved):
                new[p] = m
            return _leaves(f(*new, **kwargs))

        numeric = _inner(u, [(a - b) / EPS for a, b in zip(at(EPS / 2), at(-EPS / 2))])
        if not _close(exact, numeric):
            raise WrongValue(f"VJP check of {getattr(f, '__name__', f)}: analytic "
                             f"{exact!r}, numeric {numeric!r}")

    def _second_order(self, f, args, kwargs, argnum):
        """autograd's second-order check: the pullback as a function of (x, v)."""
        if self.order < 2:
            self.second["not run"] += 1
            return
        nums = tuple(argnum) if isinstance(argnum, (tuple, list)) else (argnum,)
        y = f(*args, **kwargs)
        v = _rebuild(y, iter(_randn_like(y, self.rng)))

        def pulled(*xv):
            # The arguments rebuilt by a comprehension (traced: no stores into a list).
            new = [xv[nums.index(i)] if i in nums else a for i, a in enumerate(args)]
            _, pb = tracer.vjp(f, *new, **kwargs)
            out = pb(xv[-1])
            return tuple([out[p] for p in nums])

        try:
            self.check_vjp(pulled, tuple(args[p] for p in nums) + (v,), {},
                           tuple(range(len(nums) + 1)))
            self.second["passed"] += 1
        except NotApplicable:
            self.second["not applicable"] += 1
        except Exception as e:  # counted apart: the first order decides the test
            kind, what = _classify(e)
            if os.environ.get("AUTOGRAD_SUITE_TRACEBACKS"):
                traceback.print_exc(file=sys.__stderr__)
            self.second[kind] += 1
            self.second_why[f"{kind}: {what}"] += 1
            self.second_tests.setdefault(f"{kind}: {what}", []).append(self.current)
            if kind == "wrong value":
                self.second_wrong.append(f"{self.current}: {what}")


# -- fake autograd --------------------------------------------------------------------------------
def _grad(fun, argnum=0):
    return tracer.grad(fun, argnum)


def _value_and_grad(fun, argnum=0):
    return tracer.value_and_grad(fun, argnum)


def _unsupported(name):
    def f(*args, **kwargs):
        raise NotImplementedError(f"autograd.{name} has no tracer counterpart")
    return f


def fake_modules(checker: Checker) -> dict:
    """The modules the tests import, backed by numpy and tracer."""
    ag = types.ModuleType("autograd")
    ag.grad = _grad
    ag.value_and_grad = _value_and_grad
    for name in ("elementwise_grad", "jacobian", "hessian", "make_vjp", "make_jvp",
                 "hessian_tensor_product", "make_hvp", "make_ggnvp", "deriv",
                 "holomorphic_grad", "grad_named", "checkpoint", "primitive"):
        setattr(ag, name, _unsupported(name))
    ag.isinstance = builtins.isinstance
    ag.tuple, ag.list, ag.dict = builtins.tuple, builtins.list, builtins.dict
    agb = types.ModuleType("autograd.builtins")
    agb.isinstance = builtins.isinstance
    agb.tuple, agb.list, agb.dict = builtins.tuple, builtins.list, builtins.dict
    util = types.ModuleType("autograd.test_util")
    util.check_grads = checker.check_grads
    util.combo_check = checker.combo_check
    ag.numpy = np
    ag.builtins = agb
    ag.test_util = util
    return {"autograd": ag, "autograd.numpy": np, "autograd.numpy.random": np.random,
            "autograd.numpy.linalg": np.linalg, "autograd.builtins": agb,
            "autograd.test_util": util}


@contextlib.contextmanager
def swapped_modules(mods: dict, tests_dir: Path):
    saved = {k: sys.modules.get(k) for k in list(sys.modules)
             if k == "autograd" or k.startswith("autograd.")}
    for k in saved:
        del sys.modules[k]
    sys.modules.update(mods)
    sys.path.insert(0, str(tests_dir))
    try:
        yield
    finally:
        sys.path.remove(str(tests_dir))
        for k in mods:
            sys.modules.pop(k, None)
        sys.modules.update({k: v for k, v in saved.items() if v is not None})


# -- running ----------------------------------------------------------------------------------------
def fetch_tests(workdir: Path) -> Path:
    """autograd's sdist, downloaded by pip and unpacked: its tests/ directory."""
    subprocess.run([sys.executable, "-m", "pip", "download", "--no-binary", ":all:",
                    "--no-deps", f"autograd=={VERSION}", "-d", str(workdir), "-q"],
                   check=True)
    sdist = next(workdir.glob(f"autograd-{VERSION}.tar.gz"))
    with tarfile.open(sdist) as tar:
        members = [m for m in tar.getmembers() if "/tests/" in m.name]
        tar.extractall(workdir, members=members, filter="data")
    return workdir / f"autograd-{VERSION}" / "tests"


def cases(module):
    """(name, zero-argument callable) for each test function and parametrize case."""
    for name, fn in vars(module).items():
        if not name.startswith("test_") or not inspect.isfunction(fn) \
                or fn.__module__ != module.__name__:
            continue
        grids = []
        for mark in getattr(fn, "pytestmark", []):
            if mark.name == "parametrize":
                names, values = mark.args[0], mark.args[1]
                names = [n.strip() for n in names.split(",")] if isinstance(names, str) \
                    else list(names)
                grids.append([dict(zip(names, v if len(names) > 1 else (v,)))
                              for v in values])
        if not grids:
            yield f"{module.__name__}::{name}", fn
            continue
        for combo in itertools.product(*grids):
            kw = {k: v for d in combo for k, v in d.items()}
            label = "-".join(str(v) for v in kw.values())
            yield f"{module.__name__}::{name}[{label}]", functools.partial(fn, **kw)


def _classify(e: BaseException) -> tuple[str, str]:
    if isinstance(e, NotApplicable):
        return "not applicable", str(e)
    if isinstance(e, AttributeError) and str(e).startswith("module 'numpy"):
        return "not applicable", str(e)  # autograd's own function, or gone in numpy 2
    if isinstance(e, NoRuleError):
        return "missing rule", describe_callable(e.function) + (
            "" if "no differentiation rule" in str(e) else " (partly: " + str(e).split(": ", 1)[-1][:70] + ")")
    if isinstance(e, AssertionError):
        return "wrong value", str(e).splitlines()[0][:120] if str(e) else "assert"
    first = str(e).splitlines()[0][:100] if str(e) else ""
    return "other error", f"{type(e).__name__}: {first}"


def run(tests_dir: Path, order: int, only: str = ""):
    checker = Checker(order)
    results = []
    with swapped_modules(fake_modules(checker), tests_dir):
        for modname in MODULES:
            sys.modules.pop(modname, None)
            np.random.seed(42)
            module = importlib.import_module(modname)
            for name, fn in cases(module):
                if only and only not in name:
                    continue
                np.random.seed(42)  # autograd's conftest fixture
                checker.checked = checker.skipped = 0
                checker.current = name
                try:
                    with contextlib.redirect_stdout(io.StringIO()):
                        fn()
                    if checker.skipped and not checker.checked:
                        results.append((name, "not applicable", "forward mode or complex"))
                    else:
                        results.append((name, "passed", ""))
                except Exception as e:
                    kind, what = _classify(e)
                    results.append((name, kind, what))
    return results, checker


def report(results, checker, show):
    second = checker.second
    counts = collections.Counter(kind for _, kind, _ in results)
    applicable = len(results) - counts["not applicable"]
    print(f"autograd {VERSION} tests ({', '.join(MODULES)}): {len(results)} tests")
    print(f"  passed         {counts['passed']:4d} of {applicable} applicable "
          f"({100 * counts['passed'] / max(applicable, 1):.0f} %)")
    for kind in ("wrong value", "missing rule", "other error", "not applicable"):
        print(f"  {kind:14s} {counts[kind]:4d}")
    if second:
        print("  second-order checks: " + ", ".join(f"{k} {v}" for k, v in second.items()))
        for k, v in checker.second_why.most_common(12):
            print(f"    {v:5d}  {k}")
        for w in checker.second_wrong:
            print(f"    second order wrong: {w}")
    by = collections.Counter(what for _, kind, what in results if kind == "missing rule")
    print("missing rules (tests): " + ", ".join(f"{k} {v}" for k, v in by.most_common()))
    by = collections.Counter(what for _, kind, what in results if kind == "other error")
    print("other errors (tests):")
    for k, v in by.most_common():
        print(f"  {v:3d}  {k}")
    for name, kind, what in results:
        if show and kind.startswith(show):
            print(f"{kind:14s} {name}  {what}")
    if show == "second":
        for why, names in sorted(checker.second_tests.items(), key=lambda kv: -len(kv[1])):
            print(f"second order {why}: {', '.join(sorted(set(names)))}")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--order", type=int, default=1, choices=(1, 2))
    ap.add_argument("--show", default="", help="list the tests of one outcome "
                    "(passed, wrong, missing, other, not; second: the tests of each "
                    "second-order failure)")
    ap.add_argument("--only", default="", help="run only the tests whose name holds this")
    ap.add_argument("--tests", type=Path, help="an unpacked autograd tests/ directory "
                    "(default: download the sdist)")
    ap.add_argument("--complex", action="store_true", help="check complex arguments and "
                    "results too (as autograd does), not count them as not applicable")
    opts = ap.parse_args(argv)
    COMPLEX[0] = opts.complex
    with tempfile.TemporaryDirectory() as tmp:
        tests_dir = opts.tests or fetch_tests(Path(tmp))
        results, checker = run(tests_dir, opts.order, opts.only)
    report(results, checker, opts.show)


if __name__ == "__main__":
    main()
