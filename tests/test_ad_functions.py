"""tracer.grad on the functions of ad_cases.py: against central finite differences,
and against HIPS autograd (the `test` extra installs it) on the same code."""

from __future__ import annotations

import numpy as np
import pytest

import tracer

from ad_cases import CASES, PLAIN, autograd_namespace

IDS = [c[0] for c in CASES]


def _leaves(x):
    """The float leaves of a (nested) argument, as (path, value), and a rebuilder."""
    if isinstance(x, np.ndarray):
        return [(i, float(v)) for i, v in np.ndenumerate(x)]
    if isinstance(x, (tuple, list)):
        return [((k,) + p, v) for k, item in enumerate(x) for p, v in _leaves(item)]
    if isinstance(x, dict):
        return [((k,) + p, v) for k, item in x.items() for p, v in _leaves(item)]
    return [((), float(x))]


def _replace(x, path, value):
    if not path:
        return value
    if isinstance(x, np.ndarray):
        y = x.copy()
        y[path] = value
        return y
    head, rest = path[0], path[1:]
    if isinstance(x, dict):
        y = dict(x)
        y[head] = _replace(x[head], rest, value)
        return y
    items = list(x)
    items[head] = _replace(x[head], rest, value)
    return items if isinstance(x, list) else tuple(items)


def _get(g, path):
    if isinstance(g, np.ndarray):
        return float(g[path])
    for p in path:
        g = g[p]
    return float(g)


def _finite_difference(f, args, p, path, eps=1e-6):
    x0 = _get(args[p], path) if path else float(args[p])
    up = list(args)
    down = list(args)
    up[p] = _replace(args[p], path, x0 + eps)
    down[p] = _replace(args[p], path, x0 - eps)
    return (float(f(*up)) - float(f(*down))) / (2 * eps)


def _per_argnum(argnums, g):
    return zip((argnums,) if isinstance(argnums, int) else argnums,
               (g,) if isinstance(argnums, int) else g)


def _assert_same_structure(grad, arg):
    if isinstance(arg, np.ndarray):
        assert isinstance(grad, np.ndarray) and grad.shape == arg.shape
    elif isinstance(arg, (tuple, list)):
        assert type(grad) is type(arg) and len(grad) == len(arg)
        for g, a in zip(grad, arg):
            _assert_same_structure(g, a)
    elif isinstance(arg, dict):
        assert isinstance(grad, dict) and grad.keys() == arg.keys()
        for k in arg:
            _assert_same_structure(grad[k], arg[k])
    else:
        assert np.ndim(grad) == 0


def test_enough_functions():
    assert len(CASES) >= 60


@pytest.mark.parametrize("name,make,args,argnums", CASES, ids=IDS)
def test_gradient_matches_finite_differences(name, make, args, argnums):
    f = make(PLAIN)
    g = tracer.grad(f, argnums)(*args)
    for p, gp in _per_argnum(argnums, g):
        _assert_same_structure(gp, args[p])
        for path, _ in _leaves(args[p]):
            fd = _finite_difference(f, args, p, path)
            got = _get(gp, path) if path else float(gp)
            assert got == pytest.approx(fd, rel=1e-4, abs=1e-6), (name, p, path)


@pytest.mark.parametrize("name,make,args,argnums", CASES, ids=IDS)
def test_gradient_reused_on_new_arguments(name, make, args, argnums):
    """The cached program (or a re-trace, when a guard fails) on perturbed inputs."""
    f = make(PLAIN)
    gf = tracer.grad(f, argnums)
    first = gf(*args)  # traced, swept by the interpreter
    again = [gf(*args) for _ in range(3)]  # interpreted, then compiled (COMPILE_AFTER = 2)
    for g in again:
        for (p, gp), (_, fp) in zip(_per_argnum(argnums, g), _per_argnum(argnums, first)):
            for path, _ in _leaves(args[p]):
                a = _get(gp, path) if path else float(gp)
                b = _get(fp, path) if path else float(fp)
                assert a == pytest.approx(b, rel=1e-12, abs=1e-15), (name, p, path)
    progs = [prog for runner in gf.paths.values() for ps in runner.cache.values() for prog in ps]
    assert any(prog.compiled for prog in progs)
    moved = list(args)
    for p, _ in _per_argnum(argnums, argnums):
        for path, v in _leaves(args[p]):
            moved[p] = _replace(moved[p], path, v * 1.01 + 0.003)
    g = gf(*moved)
    for p, gp in _per_argnum(argnums, g):
        for path, _ in _leaves(args[p]):
            fd = _finite_difference(f, moved, p, path)
            got = _get(gp, path) if path else float(gp)
            assert got == pytest.approx(fd, rel=1e-4, abs=1e-6), (name, p, path)


@pytest.mark.parametrize("name,make,args,argnums", CASES, ids=IDS)
def test_gradient_matches_autograd(name, make, args, argnums):
    autograd = pytest.importorskip("autograd", reason="HIPS autograd is not installed "
                                   "(pip install 'tracer[test]' installs it)")
    try:
        ref_f = make(autograd_namespace())
        ref = autograd.grad(ref_f, argnums)(*args)
    except Exception as exc:  # noqa: BLE001 - autograd needs its own numpy and types
        pytest.skip(f"autograd cannot differentiate this code as written: "
                    f"{type(exc).__name__}: {exc}")
    got = tracer.grad(make(PLAIN), argnums)(*args)
    for (p, gp), (_, rp) in zip(_per_argnum(argnums, got), _per_argnum(argnums, ref)):
        for path, _ in _leaves(args[p]):
            a = _get(gp, path) if path else float(gp)
            b = _get(rp, path) if path else float(rp)
            assert a == pytest.approx(b, rel=1e-9, abs=1e-12), (name, p, path)
