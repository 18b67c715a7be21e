"""Log-densities of draws, from scipy.stats (and scipy.special for counting).

`score(draws, values)` gives the log-density (or log-mass) of each draw's value under
its sampler's distribution.  Draws of one scalar family are scored by one vectorised
scipy call, so scoring 10^4 draws costs a few scipy calls, not 10^4.
"""

from __future__ import annotations

import itertools
import math
import operator
from typing import Any, Callable

import numpy as np

from .samplers import Draw, UnknownSamplerError

__all__ = ["score", "score_columns", "score_draws", "distribution_name"]

_st = None
_sp = None


def _scipy():
    global _st, _sp
    if _st is None:
        try:
            import scipy.special
            import scipy.stats
        except ImportError as e:  # pragma: no cover - scipy is in the test extra
            raise ImportError("tracer.ppl scores draws with scipy.stats: "
                              "pip install 'tracer[ppl]' (or scipy)") from e
        _st, _sp = scipy.stats, scipy.special
    return _st, _sp


def _g(p: dict, *names, default=None):
    for n in names:
        if n in p:
            return p[n]
    return default


# family -> params -> (scipy log-density, positional arguments after the value).
# Each is the distribution the sampler draws from, in scipy's parametrisation.
def _simple_table(st) -> dict[str, Callable[[dict], tuple[Callable, tuple]]]:
    def uniform(p):
        if "a" in p:                                     # random.Random.uniform(a, b)
            a, b = p["a"], p["b"]
        else:
            a, b = _g(p, "low", default=0.0), _g(p, "high", default=1.0)
        lo, hi = np.minimum(a, b), np.maximum(a, b)
        return st.uniform.logpdf, (lo, hi - lo)

    def triang(p):
        if "left" in p:
            lo, mode, hi = p["left"], p["mode"], p["right"]
        else:
            lo, hi, mode = p["low"], p["high"], p["mode"]
            if mode is None:
                mode = (lo + hi) / 2
        lo, hi = min(lo, hi), max(lo, hi)
        return st.triang.logpdf, ((mode - lo) / (hi - lo), lo, hi - lo)

    def norm(p):
        return st.norm.logpdf, (_g(p, "mu", "loc", default=0.0),
                                _g(p, "sigma", "scale", default=1.0))

    def lognorm(p):
        return st.lognorm.logpdf, (p["sigma"], 0.0, np.exp(_g(p, "mu", "mean", default=0.0)))

    def expon(p):
        if "lambd" in p:
            return st.expon.logpdf, (0.0, 1.0 / p["lambd"])
        return st.expon.logpdf, (0.0, p.get("scale", 1.0))

    def gamma(p):
        if "alpha" in p:
            return st.gamma.logpdf, (p["alpha"], 0.0, p["beta"])
        return st.gamma.logpdf, (p["shape"], 0.0, p.get("scale", 1.0))

    def beta(p):
        return st.beta.logpdf, (_g(p, "alpha", "a"), _g(p, "beta", "b"))

    def weibull(p):
        if "beta" in p:                                  # weibullvariate(alpha=scale, beta=shape)
            return st.weibull_min.logpdf, (p["beta"], 0.0, p["alpha"])
        return st.weibull_min.logpdf, (p["a"],)

    def randint(p):                                      # random.Random.randint: [a, b]
        return st.randint.logpmf, (p["a"], p["b"] + 1)

    def integers(p):                                     # [low, high), or [0, low)
        low, high = p["low"], p["high"]
        if high is None:
            low, high = 0, low
        return st.randint.logpmf, (low, high + 1 if p.get("endpoint") else high)

    def random_integers(p):                              # [low, high], or [1, low]
        low, high = p["low"], p["high"]
        if high is None:
            low, high = 1, low
        return st.randint.logpmf, (low, high + 1)

    return {
        "uniform": uniform, "triang": triang, "norm": norm, "lognorm": lognorm,
        "expon": expon, "gamma": gamma, "beta": beta, "weibull_min": weibull,
        "randint": randint, "integers": integers, "random_integers": random_integers,
        "pareto": lambda p: (st.pareto.logpdf, (p["alpha"],)),
        "binom": lambda p: (st.binom.logpmf, (p["n"], p["p"])),
        "chi2": lambda p: (st.chi2.logpdf, (p["df"],)),
        "f": lambda p: (st.f.logpdf, (p["dfnum"], p["dfden"])),
        "geom": lambda p: (st.geom.logpmf, (p["p"],)),
        "gumbel_r": lambda p: (st.gumbel_r.logpdf, (p["loc"], p["scale"])),
        "hypergeom": lambda p: (st.hypergeom.logpmf,
                                (p["ngood"] + p["nbad"], p["ngood"], p["nsample"])),
        "laplace": lambda p: (st.laplace.logpdf, (p["loc"], p["scale"])),
        "logistic": lambda p: (st.logistic.logpdf, (p["loc"], p["scale"])),
        "logser": lambda p: (st.logser.logpmf, (p["p"],)),
        "nbinom": lambda p: (st.nbinom.logpmf, (p["n"], p["p"])),
        "ncx2": lambda p: (st.ncx2.logpdf, (p["df"], p["nonc"])),
        "ncf": lambda p: (st.ncf.logpdf, (p["dfnum"], p["dfden"], p["nonc"])),
        "lomax": lambda p: (st.lomax.logpdf, (p["a"],)),
        "poisson": lambda p: (st.poisson.logpmf, (p["lam"],)),
        "powerlaw": lambda p: (st.powerlaw.logpdf, (p["a"],)),
        "rayleigh": lambda p: (st.rayleigh.logpdf, (0.0, p["scale"])),
        "cauchy": lambda p: (st.cauchy.logpdf, ()),
        "t": lambda p: (st.t.logpdf, (p["df"],)),
        "invgauss": lambda p: (st.invgauss.logpdf, (p["mean"] / p["scale"], 0.0, p["scale"])),
        "zipf": lambda p: (st.zipf.logpmf, (p["a"],)),
        "bits": lambda p: (st.randint.logpmf, (0, 2 ** p["k"])),
    }


_SIMPLE: dict | None = None


def _wrap_angle(x, mu):
    return np.mod(np.asarray(x, dtype=float) - mu + np.pi, 2 * np.pi) - np.pi + mu


def _log_count(sp, counts) -> float:
    """log of prod(counts!): the orders of equal elements that give the same value."""
    return float(np.sum(sp.gammaln(np.asarray(counts, dtype=float) + 1)))


def _value_counts(items) -> dict:
    out: dict = {}
    for v in items:
        key = _key(v)
        out[key] = out.get(key, 0) + 1
    return out


def _key(v):
    try:
        hash(v)
        return v
    except TypeError:
        return ("#unhashable", repr(v))


def _categorical(st, population, probs, drawn) -> float:
    """log P(drawn), each item drawn independently from `population` with `probs`
    (equal items pooled), by scipy's multinomial with one trial per item."""
    pooled: dict = {}
    for v, q in zip(population, probs):
        k = _key(v)
        pooled[k] = pooled.get(k, 0.0) + float(q)
    keys = list(pooled)
    p = np.array([pooled[k] for k in keys])
    p = p / p.sum()
    index = {k: i for i, k in enumerate(keys)}
    rows = np.zeros((len(drawn), len(keys)))
    for j, v in enumerate(drawn):
        i = index.get(_key(v))
        if i is None:
            return -math.inf
        rows[j, i] = 1.0
    if len(drawn) == 0:
        return 0.0
    return float(np.sum(st.multinomial.logpmf(rows, 1, p)))


def _without_replacement(sp, population, drawn) -> float:
    """log P(the ordered sample `drawn`) taken uniformly without replacement."""
    n, k = len(population), len(drawn)
    have = _value_counts(population)
    took = _value_counts(drawn)
    if any(have.get(v, 0) < m for v, m in took.items()):
        return -math.inf
    # equal items: orders of the chosen copies; over n!/(n-k)! ordered position samples
    ways = sum(float(sp.gammaln(have[v] + 1) - sp.gammaln(have[v] - m + 1))
               for v, m in took.items())
    return ways - float(sp.gammaln(n + 1) - sp.gammaln(n - k + 1))


def _permutation(sp, items) -> float:
    """log P(one order of `items`) under a uniformly random permutation."""
    return _log_count(sp, list(_value_counts(items).values())) - float(sp.gammaln(len(items) + 1))


def _custom(draw: Draw, value) -> float:
    """Families that are not one scipy distribution with scalar parameters."""
    st, sp = _scipy()
    f, p = draw.sampler.family, draw.params
    if f == "randrange":
        r = range(p["start"]) if p["stop"] is None else range(p["start"], p["stop"], p["step"])
        if value not in r:
            return -math.inf
        return float(st.randint.logpmf(r.index(value), 0, len(r)))
    if f == "choice":
        seq = list(p["seq"])
        return _categorical(st, seq, [1.0] * len(seq), [value])
    if f == "choices":
        pop = list(p["population"])
        if p["cum_weights"] is not None:
            probs = np.diff(np.concatenate([[0.0], np.asarray(p["cum_weights"], float)]))
        elif p["weights"] is not None:
            probs = np.asarray(p["weights"], float)
        else:
            probs = np.ones(len(pop))
        return _categorical(st, pop, probs, list(value))
    if f == "sample":
        pop = list(p["population"])
        if p["counts"] is not None:
            pop = [v for v, c in zip(pop, p["counts"]) for _ in range(c)]
        return _without_replacement(sp, pop, list(value))
    if f == "permutation":
        x = value
        if draw.sampler.name in ("shuffle",) and "axis" in p and p["axis"] != 0:
            x = np.moveaxis(np.asarray(value), p["axis"], 0)
        return _permutation(sp, [_row(v) for v in x])
    if f == "permuted":
        arr = np.asarray(value)
        if p["axis"] is None:
            return _permutation(sp, arr.ravel().tolist())
        lines = np.moveaxis(arr, p["axis"], -1).reshape(-1, arr.shape[p["axis"]])
        return float(sum(_permutation(sp, line.tolist()) for line in lines))
    if f == "npchoice":
        return _npchoice(st, sp, p, value)
    if f == "bytes":
        n = p.get("n", p.get("length"))
        return float(n * st.randint.logpmf(0, 0, 256))
    if f == "vonmises":
        mu, kappa = _g(p, "mu"), p["kappa"]
        return float(np.sum(st.vonmises.logpdf(_wrap_angle(value, mu), kappa, mu)))
    if f == "multinomial":
        return float(np.sum(st.multinomial.logpmf(value, p["n"], p["pvals"])))
    if f == "dirichlet":
        return float(np.sum(st.dirichlet.logpdf(np.moveaxis(np.asarray(value), -1, 0),
                                                p["alpha"])))
    if f == "multivariate_normal":
        return float(np.sum(st.multivariate_normal.logpdf(value, p["mean"], p["cov"],
                                                          allow_singular=True)))
    if f == "multivariate_hypergeom":
        return float(np.sum(st.multivariate_hypergeom.logpmf(value, p["colors"],
                                                             p["nsample"])))
    raise UnknownSamplerError(f"{draw.sampler.name}: no density for family {f!r}")


def _row(v):
    return tuple(np.ravel(v).tolist()) if np.ndim(v) else v


def _npchoice(st, sp, p, value) -> float:
    a = p["a"]
    if p.get("axis", 0) != 0 or (np.ndim(a) > 1):
        raise UnknownSamplerError("choice: densities only for 1-d populations along axis 0")
    pop = list(range(a)) if np.ndim(a) == 0 else np.asarray(a).tolist()
    drawn = np.ravel(value).tolist()
    probs = np.ones(len(pop)) if p["p"] is None else np.asarray(p["p"], float)
    if p["replace"]:
        return _categorical(st, pop, probs, drawn)
    if not p.get("shuffle", True):
        raise UnknownSamplerError("choice(replace=False, shuffle=False): the order of the "
                                  "sample is not random; no density known")
    if p["p"] is None:
        return _without_replacement(sp, pop, drawn)
    # weighted without replacement: each pick among the items left, renormalised
    left = dict(zip(pop, probs.tolist()))
    total, out = sum(left.values()), 0.0
    for v in drawn:
        q = left.pop(v, None)
        if q is None:
            return -math.inf
        out += math.log(q / total) if q > 0 else -math.inf
        total -= q
    return out


def _user(draw: Draw, value) -> float:
    p = draw.params
    return float(draw.sampler.user_logpdf(value, *p["args"], **p["kwargs"]))


def _is_scalar(v) -> bool:
    return isinstance(v, (float, int)) or (isinstance(v, np.generic) and v.ndim == 0)


def score(draws: list[Draw], values: list[Any]) -> list[float]:
    """The log-density of each value under its draw's distribution (a list of floats).

    The draws of one sampler with scalar values and parameters are scored by one
    vectorised scipy call over their parameter columns (no per-draw set-up: an
    incremental update scores its dependent draws so)."""
    global _SIMPLE
    st, _ = _scipy()
    if _SIMPLE is None:
        _SIMPLE = _simple_table(st)
    out: list[float] = [0.0] * len(draws)
    by_sampler: dict[int, list[int]] = {}
    rest: list[int] = []
    for i, d in enumerate(draws):
        s = d.sampler
        if s.user_logpdf is None and s.family in _SIMPLE:
            by_sampler.setdefault(id(s), []).append(i)
        else:
            rest.append(i)
    for idx in by_sampler.values():
        res = None
        if len(idx) > 1:
            vals = _pick(values, idx)
            if _all_scalars(vals):
                res = _vectorised(_SIMPLE[draws[idx[0]].sampler.family],
                                  _param_columns([draws[i].params for i in idx]), vals)
        if res is None:
            rest.extend(idx)
        else:
            for i, r in zip(idx, res.tolist()):
                out[i] = r
    groups: dict[Callable, list[tuple[int, Any, tuple]]] = {}
    for i in sorted(rest):
        d, v = draws[i], values[i]
        s = d.sampler
        if s.user_logpdf is not None:
            out[i] = _user(d, v)
            continue
        make = _SIMPLE.get(s.family)
        if make is None:
            out[i] = _custom(d, v)
            continue
        fn, args = make(d.params)
        if _is_scalar(v) and all(_is_scalar(a) for a in args):
            groups.setdefault(fn, []).append((i, v, args))
        else:                                   # an array draw: independent, densities add
            out[i] = float(np.sum(fn(v, *args)))
    for fn, items in groups.items():
        xs = np.array([v for _, v, _ in items], dtype=float)
        cols = [np.array(c, dtype=float) for c in zip(*(a for _, _, a in items))]
        res = fn(xs, *cols)
        for (i, _, _), r in zip(items, np.atleast_1d(res).tolist()):
            out[i] = r
    return out


def score_columns(sampler, params: dict, vals: list) -> list[float] | None:
    """The log-densities of draws of `sampler` with parameter columns `params`
    (a list per parameter with one entry per value, or one object for all), by one
    vectorised scipy call; None when they are not scalars of one distribution."""
    global _SIMPLE
    st, _ = _scipy()
    if _SIMPLE is None:
        _SIMPLE = _simple_table(st)
    make = _SIMPLE.get(sampler.family)
    if make is None or sampler.user_logpdf is not None or not _all_scalars(vals):
        return None
    res = _vectorised(make, params, vals)
    return None if res is None else res.tolist()


def _param_columns(params: list[dict]) -> dict:
    """The parameter dicts of one sampler's draws as columns: a list per parameter,
    or the one object every draw has (a constant of the code, None)."""
    out = {}
    for k in params[0]:
        col = list(map(operator.itemgetter(k), params))
        out[k] = col[0] if len(set(map(id, col))) == 1 else col
    return out


def distribution_name(draw: Draw) -> str:
    """The name of the draw's distribution as scipy calls it (or the sampler's family)."""
    f = draw.sampler.family
    return {"bits": "randint", "randrange": "randint", "integers": "randint",
            "random_integers": "randint", "choice": "categorical",
            "choices": "categorical", "npchoice": "categorical"}.get(f, f)


def score_draws(draws) -> None:
    """Fill `draws.logp` (scan.Draws): a regular site of a scalar family in one
    vectorised scipy call over its parameter columns, the rest draw by draw."""
    global _SIMPLE
    st, _ = _scipy()
    if _SIMPLE is None:
        _SIMPLE = _simple_table(st)
    values = draws.values
    for s in draws.sites:
        if not len(s.members) or s.problem:
            continue
        idx = s.members
        vals = _pick(values, idx.tolist())
        make = _SIMPLE.get(s.sampler.family)
        if s.draws is None and make is not None and _all_scalars(vals):
            res = _vectorised(make, s.column_params(), vals)
            if res is not None:
                draws.logp[idx] = res
                continue
        if s.draws is None and s.sampler.family in ("choices", "choice"):
            res = _categorical_site(st, s, vals)
            if res is not None:
                draws.logp[idx] = res
                continue
        draws.logp[idx] = score([draws.draw(i) for i in idx], vals)


def _categorical_site(st, s, vals: list):
    """The log-masses of a site of `choices`/`choice` draws: each drawn item is one
    trial of scipy's multinomial over the (pooled) population; draws with
    populations of one size share one vectorised call."""
    fast = _categorical_columns(st, s, vals)
    if fast is not None:
        return fast
    n = len(vals)
    choice = s.sampler.family == "choice"
    items_of = []               # per draw: (probabilities, index of each drawn item)
    for j in range(n):
        p = s.params(j)
        if choice:
            pop, weights, drawn = p["seq"], None, (vals[j],)
        else:
            pop, drawn = p["population"], vals[j]
            weights = p["weights"]
            if p["cum_weights"] is not None:
                cw = [float(x) for x in p["cum_weights"]]
                weights = [b - a for a, b in zip([0.0] + cw[:-1], cw)]
        pop = pop if isinstance(pop, list) else list(pop)
        try:
            distinct = len(set(pop)) == len(pop)
        except TypeError:
            distinct = False
        if not distinct:
            return None          # equal items to pool: scored one by one
        ws = [1.0] * len(pop) if weights is None else [float(x) for x in weights]
        total = sum(ws)
        try:
            picks = [pop.index(v) for v in drawn]
        except ValueError:
            return None          # a value outside the population: scored one by one
        items_of.append(([w / total for w in ws], picks))
    out = np.zeros(n)
    by_size: dict[int, list[int]] = {}
    for j, (probs, _) in enumerate(items_of):
        by_size.setdefault(len(probs), []).append(j)
    for size, js in by_size.items():
        ps, picks, owners = [], [], []
        for j in js:
            probs, chosen = items_of[j]
            for i in chosen:
                ps.append(probs)
                picks.append(i)
                owners.append(j)
        if picks:
            onehot = np.zeros((len(picks), size))
            onehot[np.arange(len(picks)), picks] = 1.0
            lp = st.multinomial.logpmf(onehot, 1, np.array(ps))
            np.add.at(out, np.array(owners), np.atleast_1d(lp))
    return out


def _indices(pops: list, drawn: np.ndarray):
    """(index of each drawn item in its population, each population's size), when
    every population is a `range(L)` or one shared list of distinct items; else None."""
    first = pops[0]
    if set(map(type, pops)) == {range}:      # C loops over the draws (map), no genexpr
        if set(map(_START, pops)) != {0} or set(map(_STEP, pops)) != {1}:
            return None
        sizes = np.fromiter(map(len, pops), dtype=np.int64, count=len(pops))
        if drawn.dtype.kind not in "iu" or (drawn < 0).any() or (drawn >= sizes).any():
            return None
        return drawn.astype(np.int64), sizes
    if not all(p is first for p in pops) or not isinstance(first, (list, tuple)):
        return None
    try:
        where = {v: i for i, v in enumerate(first)}
        if len(where) != len(first):
            return None       # equal items: pooled one by one
        picks = np.array([where[v] for v in drawn.tolist()], dtype=np.int64)
    except (TypeError, KeyError):
        return None
    return picks, np.full(len(pops), len(first), dtype=np.int64)


def _categorical_columns(st, s, vals: list):
    """_categorical_site on the site's parameter columns at once (no dict per draw):
    one draw per call (`choice`, or `choices` with k=1 and no cum_weights) from
    populations that are `range(L)` or one shared list; one vectorised scipy call
    per population size; else None."""
    n = len(vals)
    if s.draws is not None or n == 0:
        return None
    cols = s.column_params()
    if s.sampler.family == "choice":
        name, pop, weights = "seq", cols["seq"], None
        drawn = vals
    else:
        if cols.get("k") != 1 or cols.get("cum_weights") is not None:
            return None
        name, pop, weights = "population", cols["population"], cols["weights"]
        if set(map(type, vals)) != {list} or set(map(len, vals)) != {1}:
            return None
        drawn = list(map(_FIRST, vals))
    pops = pop if s.varies(name) else [pop] * n
    try:
        arr = np.asarray(drawn)
    except (TypeError, ValueError):
        return None
    if arr.ndim != 1:
        return None
    got = _indices(pops, arr)
    if got is None:
        return None
    picks, sizes = got
    ws = None
    if weights is not None:
        ws = weights if s.varies("weights") else [weights] * n
    out = np.empty(n)
    for size in np.unique(sizes).tolist():
        js = np.flatnonzero(sizes == size)
        m = len(js)
        if ws is None:
            w = np.ones((m, size))
        else:
            try:
                w = _rows(ws if m == n else _pick(ws, js.tolist()), size)
            except (TypeError, ValueError):
                return None
            if w.shape != (m, size):
                return None
        onehot = np.zeros((m, size))
        onehot[np.arange(m), picks[js]] = 1.0
        out[js] = np.asarray(st.multinomial.logpmf(onehot, 1, w / w.sum(axis=1, keepdims=True)),
                             dtype=float).reshape(m)
    return out


_START, _STEP = operator.attrgetter("start"), operator.attrgetter("step")
_FIRST = operator.itemgetter(0)


def _pick(src: list, idx: list) -> list:
    """[src[i] for i in idx], in a C loop."""
    if len(idx) > 1:
        return list(operator.itemgetter(*idx)(src))
    return [src[idx[0]]] if idx else []


def _rows(ws: list, size: int) -> np.ndarray:
    """The weight lists `ws` as an (len(ws), size) float array: read in one pass
    when each has `size` numbers (half the time of np.asarray on lists of lists)."""
    if set(map(len, ws)) == {size}:
        try:
            return np.fromiter(itertools.chain.from_iterable(ws), dtype=float,
                               count=len(ws) * size).reshape(len(ws), size)
        except (TypeError, ValueError):
            pass
    return np.asarray(ws, dtype=float)


def _all_scalars(vals: list) -> bool:
    try:
        arr = np.asarray(vals)
    except (TypeError, ValueError):
        return False
    return arr.ndim == 1 and arr.dtype.kind in "biuf"


def _vectorised(make, params: dict, vals: list):
    """The log-densities of `vals` with parameter columns, or None if the columns do
    not make one scalar distribution per value."""
    p = {}
    for k, v in params.items():
        if isinstance(v, list):
            arr = np.asarray(v)
            if arr.ndim != 1 or arr.dtype == object:
                return None
            p[k] = arr
        else:
            p[k] = v
    try:
        fn, args = make(p)
        res = np.asarray(fn(np.asarray(vals, dtype=float), *args), dtype=float)
    except (TypeError, ValueError):
        return None
    if res.shape != (len(vals),):
        return None
    return res
