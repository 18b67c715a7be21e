"""tracer.ppl's costs on a loop of draws (a regression with n observations, n+2 draws).

Prints, per model size, best-of-N times of: the untraced model, `tracer.track` with
the same primitive boundary, `ppl.trace`, `ppl.replay` of every choice,
`ppl.condition` on one site, `ppl.update` of one site; ratios to plain tracking; and
the memory per choice.  NumPyro's `handlers.trace(handlers.seed(model, 0))` on the
same loop model runs when numpyro is installed (the `bench` extra; not here today).

Run:  nice -n 10 python bench/ppl.py [n ...]
"""

from __future__ import annotations

import random
import sys
import time
import tracemalloc

import tracer
import tracer.ppl as ppl
from tracer.context import Context


def regression(r, n):
    a = r.gauss(0.0, 1.0)
    b = r.gauss(0.0, 1.0)
    ys = []
    for i in range(n):
        ys.append(r.gauss(a + b * i / n, 0.5))
    return sum(ys) / len(ys)


def best(fn, repeat=3):
    out = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return min(out)


def numpyro_loop(n):
    try:
        import jax.random  # noqa: F401
        import numpyro
        import numpyro.distributions as dist
        from numpyro import handlers
    except ImportError:
        return None

    def model():
        a = numpyro.sample("a", dist.Normal(0.0, 1.0))
        b = numpyro.sample("b", dist.Normal(0.0, 1.0))
        for i in range(n):
            numpyro.sample(f"y{i}", dist.Normal(a + b * i / n, 0.5))
    return best(lambda: handlers.trace(handlers.seed(model, 0)).get_trace(), 1)


def main(sizes):
    ctx = Context(modules=["random"])
    print(f"Python {sys.version.split()[0]}")
    print(f"{'draws':>7} {'untraced':>9} {'track':>8} {'ppl.trace':>10} {'replay':>8} "
          f"{'condition':>10} {'update':>8}  trace/track replay/track update/untraced  "
          f"B/choice")
    for n in sizes:
        r = random.Random(0)
        ppl.trace(regression, r, n)            # warm: scipy imported, plans built
        ct = ppl.trace(regression, r, n)
        site = next(iter(ct.choices))
        t_plain = best(lambda: regression(r, n))
        t_track = best(lambda: tracer.track(regression, r, n, ctx=ctx))
        t_ppl = best(lambda: ppl.trace(regression, r, n))
        t_replay = best(lambda: ppl.replay(ct))
        t_cond = best(lambda: ppl.condition(regression, {site: 0.1}, r, n))
        t_upd = best(lambda: ppl.update(ct, {site: 0.2}))
        tracemalloc.start()
        keep = ppl.trace(regression, r, n)
        size, _ = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        del keep
        print(f"{n + 2:>7} {t_plain * 1e3:>7.1f}ms {t_track * 1e3:>6.1f}ms {t_ppl * 1e3:>8.1f}ms "
              f"{t_replay * 1e3:>6.1f}ms {t_cond * 1e3:>8.1f}ms {t_upd * 1e3:>6.1f}ms  "
              f"{t_ppl / t_track:>10.2f}x {t_replay / t_track:>11.2f}x "
              f"{t_upd / t_plain:>14.1f}x  {size / (n + 2):>8.0f}")
        npy = numpyro_loop(n)
        if npy is not None:
            print(f"        numpyro handlers.trace(seed(model)): {npy * 1e3:.1f}ms, "
                  f"{npy / (n + 2) * 1e6:.0f} us per site")
    try:
        import numpyro  # noqa: F401
    except ImportError:
        print("(numpyro is not installed: no NumPyro column)")


if __name__ == "__main__":
    main([int(a) for a in sys.argv[1:]] or [1000, 10000])
