"""tracer.ppl's costs on three models of ~10^4 draws: a hierarchical regression, a
Chinese-restaurant-process mixture and a hidden Markov model.

Per model, interleaved best-of-N times of: the untraced model, `tracer.track` with the
same primitive boundary (the `random` module primitive), `ppl.trace`, `ppl.trace` with
`log_joint` and every Choice made, `ppl.replay` of every choice, `ppl.condition` on 1 %
of the sites, `ppl.update` of one site; the ratios; and the memory per choice
(tracemalloc: the ChoiceTrace with its Choices, trace included; and what ppl adds to
the trace).  Then a single-site update touching 1 % of a regression (incremental,
and the full re-run), and NumPyro's `handlers.trace(handlers.seed(model, 0))` on the
regression's loop beside tracer.track and ppl.trace, per sample site, when numpyro
is installed (`pip install 'tracer[ppl-bench]'`).

Run:  nice -n 10 python bench/ppl.py [repeats] [--before DIR]
      nice -n 10 python bench/ppl.py --relations      (relations() timings only)

`--before DIR`: DIR holds another version of the tracer.ppl package (e.g.
`git archive <commit> src/tracer/ppl | tar -x -C /tmp/before`, then
DIR=/tmp/before/src/tracer/ppl); it is loaded as `tracer.ppl_before` on the same core
and its ppl.trace, replay and condition are timed interleaved with this one's.
"""

from __future__ import annotations

import random
import sys
import time
import tracemalloc

import tracer
import tracer.ppl as ppl
from tracer.context import Context


def hier_regression(r, groups, per_group):
    mu_a = r.gauss(0.0, 5.0)
    slope = r.gauss(0.0, 5.0)
    ys = []
    for g in range(groups):
        a = r.gauss(mu_a, 1.0)
        for i in range(per_group):
            ys.append(r.gauss(a + slope * i / per_group, 0.5))
    return sum(ys) / len(ys)


def crp_mixture(r, n, alpha):
    counts, means, xs = [], [], []
    for i in range(n):
        weights = counts + [alpha]
        k = r.choices(range(len(weights)), weights=weights)[0]
        if k == len(counts):
            counts.append(0)
            means.append(r.gauss(0.0, 10.0))
        counts[k] += 1
        xs.append(r.gauss(means[k], 1.0))
    return len(counts), sum(xs) / n


def hmm(r, steps, trans, mus):
    z = r.randrange(len(mus))
    ys = []
    for t in range(steps):
        z = r.choices(range(len(mus)), weights=trans[z])[0]
        ys.append(r.gauss(mus[z], 1.0))
    return sum(ys)


TRANS = [[0.8, 0.1, 0.1], [0.1, 0.8, 0.1], [0.1, 0.1, 0.8]]
MODELS = [("hierarchical regression", hier_regression, (50, 200)),
          ("CRP mixture", crp_mixture, (5000, 2.0)),
          ("HMM", hmm, (5000, TRANS, [-2.0, 0.0, 2.0]))]


def timed(fn):
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def full(model, args):
    ct = ppl.trace(model, *args)
    ct.log_joint
    ct.choices
    return ct


def _load_before(path):
    """tracer.ppl of another version, from directory `path`, as tracer.ppl_before."""
    import importlib.util
    import os
    spec = importlib.util.spec_from_file_location(
        "tracer.ppl_before", os.path.join(path, "__init__.py"),
        submodule_search_locations=[path])
    module = importlib.util.module_from_spec(spec)
    sys.modules["tracer.ppl_before"] = module
    spec.loader.exec_module(module)
    return module


def observed_sites(ct):
    """{address: value} of 1 % of a run's sites, spread among its data draws
    (gauss with sigma <= 1): what the condition/do rows fix."""
    n = len(ct.choices)
    data = [a for a, c in ct.choices.items()
            if c.sampler.name == "gauss" and c.params["sigma"] <= 1.0]
    return {a: ct[a] for a in data[::max(1, len(data) * 100 // n // 100)][:max(1, n // 100)]}


def measure(name, model, args, repeats, before=None):
    ctx = Context(modules=["random"])
    r = random.Random(0)
    ct = full(model, (r,) + args)
    n = len(ct.choices)
    addrs = list(ct.choices)
    obs = observed_sites(ct)
    site = addrs[len(addrs) // 2]
    # the first incremental update of a run builds its tape (once per run: every
    # trace derived from it shares it); the timed updates come after
    t0 = time.perf_counter()
    first, _, _ = ppl.update(ct, {site: ct[site]})
    build = time.perf_counter() - t0
    cases = {
        "untraced": lambda: model(r, *args),
        "track": lambda: tracer.track(model, r, *args, ctx=ctx),
        "ppl.trace": lambda: ppl.trace(model, r, *args),
        "+choices": lambda: full(model, (r,) + args),
        "replay": lambda: ppl.replay(ct),
        "condition": lambda: ppl.condition(model, obs, r, *args),
        "update": lambda: ppl.update(ct, {site: ct[site]}),
    }
    if before is not None:
        old = before.trace(model, r, *args)
        old.choices
        old.log_joint
        cases["before: ppl.trace"] = lambda: before.trace(model, r, *args)
        cases["before: replay"] = lambda: before.replay(old)
        cases["before: condition"] = lambda: before.condition(model, obs, r, *args)
    best = {k: float("inf") for k in cases}
    for _ in range(repeats):
        for k, fn in cases.items():
            best[k] = min(best[k], timed(fn))
    tracemalloc.start()
    root = tracer.track(model, r, *args, ctx=ctx)
    plain, _ = tracemalloc.get_traced_memory()
    del root
    tracemalloc.stop()
    tracemalloc.start()
    keep = full(model, (r,) + args)
    with_ppl, _ = tracemalloc.get_traced_memory()
    del keep
    tracemalloc.stop()
    ms = {k: v * 1e3 for k, v in best.items()}
    print(f"{name}: {n} draws")
    print("  " + "  ".join(f"{k} {v:.1f}ms" for k, v in ms.items()))
    print(f"  ppl.trace/track {best['ppl.trace'] / best['track']:.2f}x, "
          f"+choices/track {best['+choices'] / best['track']:.2f}x, "
          f"track/untraced {best['track'] / best['untraced']:.2f}x, "
          f"replay/track {best['replay'] / best['track']:.2f}x, "
          f"condition/track {best['condition'] / best['track']:.2f}x, "
          f"update/untraced {best['update'] / best['untraced']:.1f}x")
    print(f"  replay/ppl.trace {best['replay'] / best['ppl.trace']:.2f}x, "
          f"condition/ppl.trace {best['condition'] / best['ppl.trace']:.2f}x")
    if before is not None:
        print(f"  before: ppl.trace/track {best['before: ppl.trace'] / best['track']:.2f}x, "
              f"replay/track {best['before: replay'] / best['track']:.2f}x, "
              f"condition/track {best['before: condition'] / best['track']:.2f}x, "
              f"replay/ppl.trace {best['before: replay'] / best['before: ppl.trace']:.2f}x, "
              f"condition/ppl.trace "
              f"{best['before: condition'] / best['before: ppl.trace']:.2f}x")
    print(f"  update of {site}: {first.update_path} {first.update_stats or ''}; the "
          f"first (builds the tape) {build * 1e3:.0f}ms")
    print(f"  memory: {with_ppl / n:.0f} B per choice with its trace "
          f"({(with_ppl - plain) / n:.0f} B more than the trace alone)")


def update_share(repeats, groups=100, per_group=100):
    """A single-site update that touches 1 % of the model: one group mean of the
    hierarchical regression (its per_group data draws are scored again), against an
    untraced run, interleaved."""
    r = random.Random(1)
    ct = ppl.trace(hier_regression, r, groups, per_group)
    line = hier_regression.__code__.co_firstlineno + 5      # a = r.gauss(mu_a, 1.0)
    site = [a for a in ct if f"/gauss@L{line}" in a][groups // 2]
    new, _, _ = ppl.update(ct, {site: ct[site] + 0.1})       # builds the tape
    cases = {"untraced": lambda: hier_regression(r, groups, per_group),
             "update": lambda: ppl.update(ct, {site: ct[site] + 0.1}),
             "update, full re-run": lambda: ppl.update(ct, {site: ct[site] + 0.1},
                                                       incremental=False)}
    best = {k: float("inf") for k in cases}
    for _ in range(max(repeats, 15)):
        for k, fn in cases.items():
            best[k] = min(best[k], timed(fn))
    st = new.update_stats
    print(f"single-site update, hierarchical regression {groups}x{per_group} "
          f"({len(ct)} draws), group mean {site}: {new.update_path}, "
          f"{st['rescored']} draws scored again "
          f"({st['rescored'] / st['draws']:.1%}), {st['reran']} of {st['ops']} ops re-run")
    print("  " + "  ".join(f"{k} {v * 1e3:.2f}ms" for k, v in best.items()))
    print(f"  update/untraced {best['update'] / best['untraced']:.3f}x, "
          f"full re-run/untraced {best['update, full re-run'] / best['untraced']:.1f}x")


def numpyro_rows(repeats, groups=5, per_group=200):
    """The regression's loop of draws as NumPyro would run it
    (`handlers.trace(handlers.seed(model, 0))`) beside tracer.track and ppl.trace of
    the plain-Python model, µs per sample site; Pyro's poutine.trace needs torch
    (> 1 GB with its CUDA wheels): not installed, no row."""
    try:
        import jax
        import numpyro
        import numpyro.distributions as dist
        from numpyro import handlers
    except ImportError:
        print("numpyro is not installed (pip install 'tracer[ppl-bench]'): no NumPyro row")
        return

    def model():
        mu_a = numpyro.sample("mu_a", dist.Normal(0.0, 5.0))
        slope = numpyro.sample("slope", dist.Normal(0.0, 5.0))
        ys = []
        for g in range(groups):
            a = numpyro.sample(f"a{g}", dist.Normal(mu_a, 1.0))
            for i in range(per_group):
                ys.append(numpyro.sample(f"y{g}_{i}", dist.Normal(a + slope * i / per_group,
                                                                  0.5)))
        return sum(ys) / len(ys)
    sites = 2 + groups * (1 + per_group)
    got = handlers.trace(handlers.seed(model, 0)).get_trace()
    assert len(got) == sites
    r = random.Random(0)
    ctx = Context(modules=["random"])
    cases = {"untraced": lambda: hier_regression(r, groups, per_group),
             "tracer.track": lambda: tracer.track(hier_regression, r, groups, per_group,
                                                  ctx=ctx),
             "ppl.trace": lambda: ppl.trace(hier_regression, r, groups, per_group),
             "NumPyro trace(seed)": lambda: handlers.trace(
                 handlers.seed(model, 0)).get_trace()}
    best = {k: float("inf") for k in cases}
    for _ in range(repeats):
        for k, fn in cases.items():
            best[k] = min(best[k], timed(fn))
    print(f"the regression's loop, {sites} sample sites (numpyro {numpyro.__version__}, "
          f"jax {jax.__version__}, CPU): us per sample site")
    print("  " + "  ".join(f"{k} {v / sites * 1e6:.2f}us" for k, v in best.items()))
    print(f"  NumPyro/ppl.trace {best['NumPyro trace(seed)'] / best['ppl.trace']:.0f}x, "
          f"ppl.trace/track {best['ppl.trace'] / best['tracer.track']:.2f}x")


def relations_rows():
    """`ChoiceTrace.relations()` (parents) and `relations(transitive=True)` on the
    three models at a tenth of their size and at full size (the transitive answer
    only at a tenth: it is quadratic on chains)."""
    for name, model, args in MODELS:
        for tenth in (True, False):
            if name == "hierarchical regression":
                a = (5, 200) if tenth else args
            else:
                a = (args[0] // 10,) + args[1:] if tenth else args
            ct = ppl.trace(model, random.Random(0), *a)
            ct.choices
            ct.root.trace.table()
            t0 = time.perf_counter()
            rel = ct.relations()
            t1 = time.perf_counter()
            links = sum(map(len, rel["choices"].values()))
            line = (f"{name}, {len(ct)} draws: relations() {(t1 - t0) * 1e3:.0f}ms "
                    f"({links} parent links)")
            if tenth:
                t1 = time.perf_counter()
                ct.relations(transitive=True)
                line += f"; transitive {(time.perf_counter() - t1) * 1e3:.0f}ms"
            print(line, flush=True)


def main(repeats: int = 3, before: str | None = None):
    print(f"Python {sys.version.split()[0]}, best of {repeats}, interleaved")
    old = _load_before(before) if before else None
    for name, model, args in MODELS:
        measure(name, model, args, repeats, old)
    update_share(repeats)
    numpyro_rows(repeats)


if __name__ == "__main__":
    argv = sys.argv[1:]
    where = None
    if "--before" in argv:
        i = argv.index("--before")
        where = argv[i + 1]
        del argv[i:i + 2]
    if "--relations" in argv:
        relations_rows()
    else:
        main(*(int(a) for a in argv), before=where)
