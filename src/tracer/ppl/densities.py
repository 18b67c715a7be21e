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

from .. import _core
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
    """Fill `draws.logp` (scan.Draws).  The regular sites of scalar families are
    scored together: one vectorised scipy call per scipy density over the sites'
    parameter columns (the regression's four `gauss` lines are one `norm.logpdf`
    call: a scipy call's set-up costs as much as scoring ~10^3 values); a site of
    one-item categorical draws by one call on its items' probabilities; the rest
    draw by draw."""
    st, _ = _scipy()
    table = _table(st)
    values = draws.values
    logp = draws.logp
    batches: dict = {}        # (scipy function, number of arguments) -> [(idx, x, args)]
    for s in draws.sites:
        if not len(s.members) or s.problem:
            continue
        idx = s.members
        vals = _take(values, idx)
        if s.draws is None:
            family = s.sampler.family
            got = _prepared(st, table.get(family), family, s, vals)
            if got is not None:
                fn, x, args = got
                batches.setdefault((fn, len(args)), []).append((idx, x, args))
                continue
            if family in ("choices", "choice"):
                res = _categorical_site(st, s, vals)
                if res is not None:
                    logp[idx] = res
                    continue
        logp[idx] = score([draws.draw(i) for i in idx], vals)
    for (fn, _), items in batches.items():
        res = _batch(fn, items) if len(items) > 1 else None
        if res is not None:
            logp[np.concatenate([it[0] for it in items])] = res
            continue
        for idx, x, args in items:
            res = _call(fn, x, args)
            if res is None:       # not one scalar density per value: draw by draw
                res = score([draws.draw(i) for i in idx.tolist()], _pick(values, idx.tolist()))
            logp[idx] = res


def _table(st) -> dict:
    global _SIMPLE
    if _SIMPLE is None:
        _SIMPLE = _simple_table(st)
    return _SIMPLE


def _prepared(st, make, family: str, s, vals: list):
    """(scipy log-density, values, arguments) of a regular site of a scalar family,
    its varying parameters as arrays, or None when they are not one scalar
    distribution per value (array draws, a parameter that is a sequence)."""
    if make is None and family != "randrange":
        return None
    x = _scalars(vals)
    if x is None:
        return None
    n = len(x)
    p = {}
    for k, v in s.column_params().items():
        if s.varies(k):
            arr = _scalars(v)
            if arr is None:
                return None
            p[k] = arr
        elif v is None or _is_scalar(v) or k in _NOT_NUMBERS:
            p[k] = v
        else:
            return None       # one sequence every draw had: not a column per draw
    try:
        if family == "randrange":
            return _randrange(st, p, x)
        fn, args = make(p)
    except (TypeError, ValueError, KeyError):
        return None
    if any(np.ndim(a) != 0 and np.shape(a) != (n,) for a in args):
        return None
    return fn, x.astype(float, copy=False), args


# parameters of the scalar families that are no number (a dtype, an output array)
_NOT_NUMBERS = frozenset(["dtype", "out", "method", "size"])


def _randrange(st, p: dict, x: np.ndarray):
    """random.randrange's draws as scipy's randint over the range's positions: the
    value's index in `range(start, stop, step)` (-1, of mass 0, outside it)."""
    start, stop, step = p["start"], p["stop"], p["step"]
    if stop is None:
        start, stop = 0, start
    start, stop, step = (np.asarray(a) for a in (start, stop, step))
    if x.dtype.kind not in "iu" or any(a.dtype.kind not in "iu" for a in (start, stop, step)) \
            or (step == 0).any():
        return None
    length = np.maximum(0, (stop - start + step - np.sign(step)) // step)
    k, off = np.divmod(x - start, step)
    k = np.where((off == 0) & (k >= 0) & (k < length), k, -1)
    return st.randint.logpmf, k, (np.zeros_like(length), length)


def _scalars(vals: list):
    """`vals` as a 1-d numeric array, or None.  A list of plain floats is read in
    C (_core.float_column: the array numpy.asarray makes of it)."""
    if COLUMNS_IN_C and type(vals) is list:
        got = _core.float_column(vals)
        if got is not None:
            return got
    try:
        arr = np.asarray(vals)
    except (TypeError, ValueError):
        return None
    return arr if arr.ndim == 1 and arr.dtype.kind in "biuf" else None



def _call(fn, x: np.ndarray, args: tuple):
    try:
        res = np.asarray(fn(x, *args), dtype=float)
    except (TypeError, ValueError):
        return None
    return res if res.shape == (len(x),) else None


def _batch(fn, items: list):
    """The log-densities of several sites' values by one call of `fn`, their
    arguments broadcast to their lengths and joined; None when that fails."""
    try:
        x = np.concatenate([it[1] for it in items])
        args = tuple(np.concatenate([np.broadcast_to(np.asarray(it[2][j]), (len(it[1]),))
                                     for it in items])
                     for j in range(len(items[0][2])))
    except (TypeError, ValueError):
        return None
    return _call(fn, x, args)


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


def _indices(pops, drawn: np.ndarray, shared: bool):
    """(index of each drawn item in its population, each population's size), when
    every population is a `range(L)` or they are one list or tuple of distinct
    items (`shared`: `pops` is that one population); else None."""
    n = len(drawn)
    if shared:
        if type(pops) is range:
            pops = [pops]
        elif not isinstance(pops, (list, tuple)):
            return None
    if not shared or type(pops[0]) is range:  # C loops over the draws (map), no genexpr
        got = _core.range_columns(pops) if COLUMNS_IN_C and type(pops) is list else None
        if got is not None:
            starts, sizes, steps = got
            if (starts != 0).any() or (steps != 1).any():
                return None
        else:
            if set(map(type, pops)) != {range} or set(map(_START, pops)) != {0} or \
                    set(map(_STEP, pops)) != {1}:
                return None
            sizes = np.fromiter(map(len, pops), dtype=np.int64, count=len(pops))
        if len(pops) == 1:
            sizes = np.full(n, sizes[0], dtype=np.int64)
        if drawn.dtype.kind not in "iu" or (drawn < 0).any() or (drawn >= sizes).any():
            return None
        return drawn.astype(np.int64), sizes
    try:
        where = {v: i for i, v in enumerate(pops)}
        if len(where) != len(pops):
            return None       # equal items: pooled one by one
        picks = np.array([where[v] for v in drawn.tolist()], dtype=np.int64)
    except (TypeError, KeyError):
        return None
    return picks, np.full(n, len(pops), dtype=np.int64)


def _categorical_columns(st, s, vals: list):
    """_categorical_site on the site's parameter columns at once (no dict per draw):
    one draw per call (`choice`, or `choices` with k=1 and no cum_weights) from
    populations that are `range(L)` or one shared list.  A one-item draw's mass is
    the probability of its item, p = w / sum(w): scipy's multinomial with one trial
    is that, and so is the Bernoulli mass of the item's indicator, which scores
    every draw of the site by one vectorised call whatever its population's size
    (the multinomial needs a one-hot row per draw and a call per size).  None
    when not so."""
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
        got = _core.number_lists(vals) if COLUMNS_IN_C and type(vals) is list else None
        if got is not None and got[2] and got[3] and (got[0] == 1).all():
            # one int drawn per call: the ints as numpy.asarray makes them
            drawn = got[1].astype(np.int64)
        else:
            if set(map(type, vals)) != {list} or set(map(len, vals)) != {1}:
                return None
            drawn = list(map(_FIRST, vals))
    try:
        arr = np.asarray(drawn)
    except (TypeError, ValueError):
        return None
    if arr.ndim != 1:
        return None
    got = _indices(pop, arr, not s.varies(name))
    if got is None:
        return None
    picks, sizes = got
    if weights is None:
        p = 1.0 / sizes
    else:
        p = _picked_probabilities(weights, s.varies("weights"), picks, sizes)
        if p is None:
            return None
    return np.asarray(st.bernoulli.logpmf(1, p), dtype=float).reshape(n)


def _picked_probabilities(weights, varies: bool, picks: np.ndarray, sizes: np.ndarray):
    """w[pick] / fsum(w) per draw: `weights` one list per draw (`varies`) or one
    for all, each of its population's size, non-negative with a positive finite
    total (else None: scored one by one)."""
    n = len(picks)
    try:
        if not varies:
            w = np.asarray(weights, dtype=float)
            if w.ndim != 1 or (sizes != len(w)).any() or (w < 0).any():
                return None
            total = math.fsum(w.tolist())
            if not (0 < total < math.inf):
                return None
            return w[picks] / total
        # every weight in one array (one conversion per number: in C where the
        # lists hold plain floats and ints, _core.number_lists), then per draw
        # its total, its smallest and its pick's by segment
        got = _core.number_lists(weights) if COLUMNS_IN_C and type(weights) is list \
            else None
        if got is not None and COLUMNS_IN_C:
            shared = _shared_lists(weights, got, picks, sizes)
            if shared is not None:
                return shared
        if got is not None:
            lens, flat = got[0], got[1]
            if len(lens) != n or not np.array_equal(lens, sizes):
                return None
        else:
            lens = np.fromiter(map(len, weights), dtype=np.int64, count=n)
            if not np.array_equal(lens, sizes):
                return None
            flat = np.fromiter(itertools.chain.from_iterable(weights), dtype=float,
                               count=int(lens.sum()))
    except (TypeError, ValueError, IndexError):
        return None
    if (lens == 0).any():
        return None
    starts = np.zeros(n, dtype=np.int64)
    np.cumsum(lens[:-1], out=starts[1:])
    totals = np.add.reduceat(flat, starts)
    if (np.minimum.reduceat(flat, starts) < 0).any() or \
            not (np.isfinite(totals) & (totals > 0)).all():
        return None
    at = flat[starts + picks]
    return at / totals


def _shared_lists(weights: list, got: tuple, picks: np.ndarray, sizes: np.ndarray):
    """_picked_probabilities' w[pick] / total per draw when the draws' weight
    lists are a few objects drawn from again and again (an HMM's rows of its
    transition matrix; snapshots.py shares the copies of equal short lists): each
    distinct list totalled once, by the same reduceat over the same numbers (so
    the same bits), and its totals and entries taken per draw.  None when most
    lists are distinct, or not as _picked_probabilities needs them."""
    n = len(weights)
    which, firsts = _core.scalar_columns(weights)[5:]
    if len(firsts) * 4 > n:
        return None
    lens, flat = got[0], got[1]
    if not np.array_equal(lens, sizes):
        return None
    ulens = lens[firsts]
    if (ulens == 0).any():
        return None
    ends = np.cumsum(lens)
    ustarts = ends[firsts] - ulens             # where each distinct list's items are
    # the distinct lists' items laid out one after another, reduced by segment
    # (a segment's sum depends only on its own numbers)
    ustart = np.zeros(len(firsts), dtype=np.int64)
    np.cumsum(ulens[:-1], out=ustart[1:])
    uflat = flat[np.repeat(ustarts - ustart, ulens) + np.arange(int(ulens.sum()))]
    utotals = np.add.reduceat(uflat, ustart)
    if (np.minimum.reduceat(uflat, ustart) < 0).any() or \
            not (np.isfinite(utotals) & (utotals > 0)).all():
        return None
    return uflat[ustart[which] + picks] / utotals[which]


# Whether a categorical site's drawn items, `range` populations and weight lists
# are read into arrays in C (_core.number_lists, _core.range_columns) where they
# are plain numbers and ranges; False: numpy.fromiter and map over them as before
# (for tests comparing the two: the arrays, and so the log-masses, are the same).
COLUMNS_IN_C = True

_START, _STEP = operator.attrgetter("start"), operator.attrgetter("step")
_FIRST = operator.itemgetter(0)


def _take(src: list, idx: np.ndarray) -> list:
    """[src[i] for i in idx] (`idx` an int64 array), in one C pass (no int object
    per position)."""
    return _core.take_items(src, idx)


def _pick(src: list, idx: list) -> list:
    """[src[i] for i in idx], in a C loop."""
    if len(idx) > 1:
        return list(operator.itemgetter(*idx)(src))
    return [src[idx[0]]] if idx else []


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
