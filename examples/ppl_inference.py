"""Inference with tracer.ppl on plain Python models: importance sampling and
single-site Metropolis-Hastings built from `condition` and `update`.

1. A conjugate model (mu ~ Normal(0, 2), y_i ~ Normal(mu, 1)) whose posterior mean is
   known in closed form: importance sampling with the prior as proposal, and
   single-site MH, both against the exact value.
2. MH on a hierarchical regression (group intercepts around a shared mean).

Run:  python examples/ppl_inference.py
"""

from __future__ import annotations

import math
import random

import tracer.ppl as ppl

# -- a conjugate model ------------------------------------------------------------------

PRIOR_SD = 2.0
DATA = [1.2, 0.4, 2.1, 1.7, 0.9]


def conjugate(r, n):
    mu = ppl.sample("mu", r.gauss, 0.0, PRIOR_SD)
    for _ in range(n):
        ppl.sample("y", r.gauss, mu, 1.0)
    return mu


def observations(data):
    return {("conjugate/y" if k == 0 else f"conjugate/y[{k}]"): y for k, y in enumerate(data)}


def exact_posterior_mean(data) -> float:
    precision = 1.0 / PRIOR_SD ** 2 + len(data)
    return sum(data) / precision


def importance_sampling(data, n: int, seed: int = 0) -> float:
    """Self-normalised importance sampling, the prior as proposal."""
    r = random.Random(seed)
    obs = observations(data)
    runs = [ppl.condition(conjugate, obs, r, len(data)) for _ in range(n)]
    logw = [t.log_likelihood for t in runs]
    top = max(logw)
    w = [math.exp(lw - top) for lw in logw]
    return sum(wi * t["conjugate/mu"] for wi, t in zip(w, runs)) / sum(w)


def metropolis_hastings(model, args, obs: dict, sites: list[str], steps: int,
                        scale: float = 0.5, seed: int = 0):
    """Single-site random-walk MH: propose one site's value, accept with the update
    weight (the proposal is symmetric).  Returns the kept traces and the rate."""
    r = random.Random(seed)
    t = ppl.condition(model, obs, *args)
    kept, accepted = [], 0
    for i in range(steps):
        site = sites[i % len(sites)]
        new, weight, _ = ppl.update(t, {site: t[site] + r.gauss(0.0, scale)})
        if math.log(r.random()) < weight:
            t, accepted = new, accepted + 1
        kept.append(t)
    return kept, accepted / steps


# -- a hierarchical regression ------------------------------------------------------------

GROUPS = {"a": [(0.0, 1.1), (1.0, 2.0), (2.0, 3.2)],
          "b": [(0.0, -0.4), (1.0, 0.7), (2.0, 1.5)],
          "c": [(0.0, 2.3), (1.0, 3.1), (2.0, 4.4)]}


def hierarchical(r, groups):
    mu_a = ppl.sample("mu_a", r.gauss, 0.0, 5.0)
    slope = ppl.sample("slope", r.gauss, 0.0, 5.0)
    fits = {}
    for name, points in groups.items():
        fits[name] = group(r, mu_a, slope, points)
    return fits


def group(r, mu_a, slope, points):
    a = ppl.sample("a", r.gauss, mu_a, 1.0)
    for x, _ in points:
        ppl.sample("y", r.gauss, a + slope * x, 0.5)
    return a


def main() -> None:
    exact = exact_posterior_mean(DATA)
    print(f"conjugate model, {len(DATA)} observations: exact posterior mean of mu {exact:.4f}")
    t = ppl.trace(conjugate, random.Random(1), len(DATA))
    print(f"  one run: {t}")
    for a, c in list(t.choices.items())[:3]:
        print(f"    {c!r}")
    est = importance_sampling(DATA, 2000)
    print(f"  importance sampling, 2000 runs: {est:.4f}")
    kept, rate = metropolis_hastings(conjugate, (random.Random(2), len(DATA)),
                                     observations(DATA), ["conjugate/mu"], 3000, scale=1.0)
    mh = sum(k["conjugate/mu"] for k in kept[500:]) / len(kept[500:])
    print(f"  single-site MH, 3000 steps (500 burn-in), acceptance {rate:.2f}: {mh:.4f}")

    t = ppl.trace(hierarchical, random.Random(3), GROUPS)
    print(f"\nhierarchical regression: {t}")
    obs = {}
    sites = ["hierarchical/mu_a", "hierarchical/slope"]
    for a, c in t.choices.items():
        if a.endswith("/a"):
            sites.append(a)
    group_calls = [a.rsplit("/", 1)[0] for a in t.choices if a.endswith("/a")]
    for call, (name, points) in zip(group_calls, GROUPS.items()):
        for k, (_, y) in enumerate(points):
            obs[f"{call}/y" + (f"[{k}]" if k else "")] = y
    print(f"  sites moved by MH: {sites}")
    kept, rate = metropolis_hastings(hierarchical, (random.Random(4), GROUPS), obs, sites,
                                     2500, scale=0.4)
    burned = kept[500:]
    for s in sites:
        print(f"  posterior mean of {s}: {sum(k[s] for k in burned) / len(burned):.3f}")
    print(f"  acceptance {rate:.2f}; log joint of the last state {kept[-1].log_joint:.3f}")


if __name__ == "__main__":
    main()
