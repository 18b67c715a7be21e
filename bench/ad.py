"""Gradient benchmark: tracer.grad against HIPS autograd and JAX, side by side.

    python bench/ad.py [--repeat N] [--number K]

Three workloads, each written once over a module namespace so that every library
differentiates the same code: a scalar Python loop (`loop`: 200 iterations of
float arithmetic and `sin`, about 1,000 ops), a numpy MLP (`mlp`: 2 layers,
64 x 32 x 16, a batch of 128, squared loss) and a Hessian-vector product (`hvp`:
the gradient of <grad f(x), v> for f(x) = sum(tanh(W x)) + |x|^2 / 2, n = 50;
each library's grad of its own grad, jax's jitted).  For each: the time of one gradient
call, best of N rounds of K calls, for

- tracer.grad (math / numpy as written): its steady state (the path's generated
  code), its first call (trace, analysis, interpreted sweep) and the interpreted
  sweep of a traced path (re-running the tape's ops, before it is compiled),
- autograd.grad (autograd.numpy),
- jax.grad with jit off (`jax.disable_jit()`), and jax.jit(jax.grad(...)) (jax.numpy),

plus tracer's first call (trace + build + sweep) and the ratios to autograd.
Libraries that are not installed are reported as such (`pip install -e '.[bench]'`).
"""

from __future__ import annotations

import argparse
import math
import time
import types

import numpy as np

import tracer
from tracer.ad import api as tracer_api

LOOP_N = 200


def make_loop(M):
    def loop(x, n):
        s = 0.0
        y = x
        for i in range(n):
            y = y * 0.99 + M.sin(y) * 0.1
            s = s + y * y / (i + 1)
        return s
    return loop


def make_mlp(M):
    np_ = M.np

    def mlp(params, x, y):
        W1, b1, W2, b2 = params
        h = np_.tanh(x @ W1 + b1)
        out = h @ W2 + b2
        return np_.mean((out - y) ** 2)
    return mlp


def mlp_data():
    rng = np.random.default_rng(0)
    params = (rng.normal(size=(64, 32)) * 0.1, np.zeros(32),
              rng.normal(size=(32, 16)) * 0.1, np.zeros(16))
    x = rng.normal(size=(128, 64))
    y = rng.normal(size=(128, 16))
    return params, x, y


def best(fn, repeat, number):
    fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        times.append((time.perf_counter() - t0) / number)
    return min(times)


def namespaces():
    out = {"tracer": types.SimpleNamespace(sin=math.sin, np=np)}
    try:
        import autograd
        import autograd.numpy as anp

        out["autograd"] = (autograd, types.SimpleNamespace(sin=anp.sin, np=anp))
    except ImportError:
        pass
    try:
        import jax
        import jax.numpy as jnp

        jax.config.update("jax_enable_x64", True)  # float64, as numpy and autograd
        out["jax"] = (jax, types.SimpleNamespace(sin=jnp.sin, np=jnp))
    except ImportError:
        pass
    return out


def run(repeat: int, number: int) -> None:
    ns = namespaces()
    params, x, y = mlp_data()
    workloads = [
        ("loop", make_loop, (0.7, LOOP_N), 0, max(1, number)),
        ("mlp", make_mlp, (params, x, y), 0, max(1, number)),
    ]
    print(f"best of {repeat} rounds; time per gradient call")
    print(f"{'workload':<8} {'library':<26} {'time':>10} {'vs autograd':>12}  gradient check")
    for name, make, args, argnums, k in workloads:
        rows = []
        f = make(ns["tracer"])
        t0 = time.perf_counter()
        g_tracer = tracer.grad(f, argnums)
        ref = g_tracer(*args)
        first = time.perf_counter() - t0
        rows.append(("tracer.grad", best(lambda: g_tracer(*args), repeat, k), "-"))
        rows.append(("tracer.grad, first call", first, "-"))
        tracer_api.COMPILE_AFTER = 10 ** 9  # a path not compiled: the interpreted sweep
        try:
            g_interp = tracer.grad(f, argnums)
            rows.append(("tracer.grad, interpreted", best(lambda: g_interp(*args), repeat,
                                                          max(1, k // 4)), "-"))
        finally:
            tracer_api.COMPILE_AFTER = 2
        if "autograd" in ns:
            autograd, M = ns["autograd"]
            g_ag = autograd.grad(make(M), argnums)
            rows.append(("autograd.grad", best(lambda: g_ag(*args), repeat, k),
                         _check(ref, g_ag(*args))))
        else:
            rows.append(("autograd.grad", None, "not installed"))
        if "jax" in ns:
            jax, M = ns["jax"]
            jf = make(M)
            jargs = args
            if name == "loop":
                g_jax = jax.grad(jf, argnums)

                def nojit():
                    with jax.disable_jit():
                        return g_jax(*jargs)
                g_jit = jax.jit(jax.grad(jf, argnums), static_argnums=(1,))
            else:
                jargs = jax.tree_util.tree_map(jax.numpy.asarray, args)
                g_jax = jax.grad(jf, argnums)

                def nojit():
                    with jax.disable_jit():
                        return g_jax(*jargs)
                g_jit = jax.jit(jax.grad(jf, argnums))
            rows.append(("jax.grad (jit off)", best(nojit, max(1, repeat // 3), max(1, k // 5)),
                         _check(ref, nojit())))
            rows.append(("jax.jit(jax.grad)", best(lambda: _block(g_jit(*jargs)), repeat, k),
                         _check(ref, g_jit(*jargs))))
        else:
            rows.append(("jax.grad (jit off)", None, "not installed"))
            rows.append(("jax.jit(jax.grad)", None, "not installed"))
        ag = next((t for lib, t, _ in rows if lib == "autograd.grad"), None)
        for lib, t, check in rows:
            if t is None:
                print(f"{name:<8} {lib:<26} {'-':>10} {'-':>12}  {check}")
                continue
            ratio = f"{t / ag:.3g}x" if ag else "-"
            print(f"{name:<8} {lib:<26} {_fmt(t):>10} {ratio:>12}  {check}")


HVP_N = 50


def make_hvp(M, grad):
    """A Hessian-vector product written once: the gradient of <grad f(x), v>."""
    np_ = M.np
    rng = np.random.default_rng(1)
    W = rng.normal(size=(HVP_N, HVP_N)) * 0.2

    def f(x):
        return np_.sum(np_.tanh(W @ x)) + 0.5 * np_.sum(x * x)

    def hvp(x, v):
        return grad(lambda y: np_.sum(grad(f)(y) * v))(x)
    return hvp


def run_hvp(repeat: int, number: int) -> None:
    """The `hvp` workload: second order, each library's grad of its own grad."""
    ns = namespaces()
    rng = np.random.default_rng(2)
    x, v = rng.normal(size=HVP_N), rng.normal(size=HVP_N)
    rows = []
    hvp = make_hvp(ns["tracer"], tracer.grad)
    t0 = time.perf_counter()
    ref = hvp(x, v)
    rows.append(("tracer.grad(tracer.grad)", None, "-"))
    first = time.perf_counter() - t0
    # f made once, as make_hvp makes it (a new f on every call would be a new function
    # to trace each time: the inner gradient's paths are kept with its function).
    f = _hvp_f(ns["tracer"])
    outer = tracer.grad(lambda y: np.sum(tracer.grad(f)(y) * v))
    rows[0] = ("tracer.grad(tracer.grad)", best(lambda: outer(x), repeat, number),
               _check(ref, outer(x)))
    rows.append(("tracer, first call", first, "-"))
    if "autograd" in ns:
        autograd, M = ns["autograd"]
        h = make_hvp(M, autograd.grad)
        rows.append(("autograd.grad(grad)", best(lambda: h(x, v), repeat, number),
                     _check(ref, h(x, v))))
    else:
        rows.append(("autograd.grad(grad)", None, "not installed"))
    if "jax" in ns:
        jax, M = ns["jax"]
        jf = _hvp_f(M)
        jv = jax.numpy.asarray(v)
        h = jax.jit(jax.grad(lambda y: jax.numpy.sum(jax.grad(jf)(y) * jv)))
        jx = jax.numpy.asarray(x)
        rows.append(("jax.jit(grad(grad))", best(lambda: _block(h(jx)), repeat, number),
                     _check(ref, h(jx))))
    else:
        rows.append(("jax.jit(grad(grad))", None, "not installed"))
    ag = next((t for lib, t, _ in rows if lib.startswith("autograd")), None)
    for lib, t, check in rows:
        if t is None:
            print(f"{'hvp':<8} {lib:<26} {'-':>10} {'-':>12}  {check}")
            continue
        ratio = f"{t / ag:.3g}x" if ag else "-"
        print(f"{'hvp':<8} {lib:<26} {_fmt(t):>10} {ratio:>12}  {check}")


def _hvp_f(M):
    """make_hvp's f on its own (the same W: the same seed)."""
    np_ = M.np
    W = np.random.default_rng(1).normal(size=(HVP_N, HVP_N)) * 0.2
    return lambda x: np_.sum(np_.tanh(W @ x)) + 0.5 * np_.sum(x * x)


def _block(x):
    import jax

    return jax.block_until_ready(x)


def _check(ref, other) -> str:
    a = _flat(ref)
    b = _flat(other)
    err = float(np.max(np.abs(a - b) / (1e-12 + np.abs(a)))) if a.size else 0.0
    return f"max rel. diff {err:.1e}"


def _flat(g):
    if isinstance(g, (tuple, list)):
        return np.concatenate([_flat(x) for x in g]) if g else np.zeros(0)
    return np.ravel(np.asarray(g, dtype=float))


def _fmt(t: float) -> str:
    if t >= 1e-3:
        return f"{t * 1e3:.2f} ms"
    return f"{t * 1e6:.1f} µs"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--number", type=int, default=20)
    a = ap.parse_args()
    run(a.repeat, a.number)
    run_hvp(a.repeat, a.number)


if __name__ == "__main__":
    main()
