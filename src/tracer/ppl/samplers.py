"""Which calls are random draws: the samplers tracer.ppl knows and their parameters.

A sampler is a callable whose call makes one random choice: every sampling method of
`random.Random` (and so the `random` module's functions, bound methods of a hidden
instance), of `numpy.random.Generator` and of the legacy `numpy.random.RandomState`
(and so the `numpy.random` functions), and user functions declared with
`@tracer.ppl.sampler(logpdf=...)`.  `resolve(f, args, kwargs)` says whether a call is a
draw, from which sampler, with which parameters; the same function serves the scan of
a finished trace and the hooks of a running one, so both name draws alike.

Densities are in densities.py (scipy.stats); this module only binds parameters.
"""

from __future__ import annotations

import random as _random
import types
from typing import Any, Callable

import numpy as np

__all__ = ["Sampler", "Draw", "sampler", "sample", "resolve", "is_unknown_sampler",
           "sampler_callables", "sampler_keys", "lookup", "method_names",
           "UnknownSamplerError", "GENERATOR_TYPES"]


class UnknownSamplerError(TypeError):
    """A random draw whose distribution tracer.ppl does not know."""


class Sampler:
    """A sampling callable: its site name, its parameters, its distribution.

    `bind(*args, **kwargs)` takes the call's arguments (after the generator itself)
    and returns the parameters by name, defaults filled in, exactly as the sampler
    binds them.  `family(params)` names the distribution ("norm", "randint", ...) and
    `score` (in densities.py) gives its log-density from scipy.stats.
    """

    __slots__ = ("name", "bind", "family", "user_logpdf", "shuffles")

    def __init__(self, name: str, bind: Callable[..., dict], family: str,
                 user_logpdf: Callable | None = None, shuffles: int = -1):
        self.name = name
        self.bind = bind
        self.family = family
        self.user_logpdf = user_logpdf
        self.shuffles = shuffles   # index in the bound arguments of a list shuffled in place

    def __repr__(self) -> str:
        return f"Sampler({self.name!r}, {self.family!r})"


class Draw:
    """One call recognised as a draw: its sampler, site name and parameters."""

    __slots__ = ("sampler", "site", "params", "target")

    def __init__(self, sampler: Sampler, site: str, params: dict, target=None):
        self.sampler = sampler
        self.site = site          # the name the address uses: method name or the user's
        self.params = params
        self.target = target      # the list a shuffle reorders (its value is the new order)


def _b(sig: str) -> Callable[..., dict]:
    """A function with signature `sig` that returns its arguments by name."""
    ns: dict[str, Any] = {"np": np}
    exec(f"def bind({sig}):\n    pass", ns)
    code = ns["bind"].__code__
    # the parameters in locals() order, as a dict display (locals() costs ~5x more)
    names = code.co_varnames[:code.co_argcount + code.co_kwonlyargcount +
                             bool(code.co_flags & 4) + bool(code.co_flags & 8)]
    body = ", ".join(f"{n!r}: {n}" for n in names)
    exec(f"def bind({sig}):\n    return {{{body}}}", ns)
    return ns["bind"]


# -- random.Random ---------------------------------------------------------------------
# (method, signature after self, scipy family).  Families that are not a scipy.stats
# distribution name ("choice", "sample", ...) are scored in densities.py with scipy.
_RANDOM = [
    ("random", "", "uniform"),
    ("uniform", "a, b", "uniform"),
    ("triangular", "low=0.0, high=1.0, mode=None", "triang"),
    ("randint", "a, b", "randint"),
    ("randrange", "start, stop=None, step=1", "randrange"),
    ("choice", "seq", "choice"),
    ("choices", "population, weights=None, *, cum_weights=None, k=1", "choices"),
    ("sample", "population, k, *, counts=None", "sample"),
    ("shuffle", "x", "permutation"),
    ("gauss", "mu=0.0, sigma=1.0", "norm"),
    ("normalvariate", "mu=0.0, sigma=1.0", "norm"),
    ("lognormvariate", "mu, sigma", "lognorm"),
    ("expovariate", "lambd=1.0", "expon"),
    ("vonmisesvariate", "mu, kappa", "vonmises"),
    ("gammavariate", "alpha, beta", "gamma"),
    ("betavariate", "alpha, beta", "beta"),
    ("paretovariate", "alpha", "pareto"),
    ("weibullvariate", "alpha, beta", "weibull_min"),
    ("binomialvariate", "n=1, p=0.5", "binom"),
    ("getrandbits", "k", "bits"),
    ("randbytes", "n", "bytes"),
]

# -- numpy.random.Generator and RandomState (shared names bind alike) -------------------
_NUMPY_COMMON = [
    ("beta", "a, b, size=None", "beta"),
    ("binomial", "n, p, size=None", "binom"),
    ("bytes", "length", "bytes"),
    ("chisquare", "df, size=None", "chi2"),
    ("dirichlet", "alpha, size=None", "dirichlet"),
    ("exponential", "scale=1.0, size=None", "expon"),
    ("f", "dfnum, dfden, size=None", "f"),
    ("gamma", "shape, scale=1.0, size=None", "gamma"),
    ("geometric", "p, size=None", "geom"),
    ("gumbel", "loc=0.0, scale=1.0, size=None", "gumbel_r"),
    ("hypergeometric", "ngood, nbad, nsample, size=None", "hypergeom"),
    ("laplace", "loc=0.0, scale=1.0, size=None", "laplace"),
    ("logistic", "loc=0.0, scale=1.0, size=None", "logistic"),
    ("lognormal", "mean=0.0, sigma=1.0, size=None", "lognorm"),
    ("logseries", "p, size=None", "logser"),
    ("multinomial", "n, pvals, size=None", "multinomial"),
    ("negative_binomial", "n, p, size=None", "nbinom"),
    ("noncentral_chisquare", "df, nonc, size=None", "ncx2"),
    ("noncentral_f", "dfnum, dfden, nonc, size=None", "ncf"),
    ("normal", "loc=0.0, scale=1.0, size=None", "norm"),
    ("pareto", "a, size=None", "lomax"),
    ("permutation", "x", "permutation"),
    ("poisson", "lam=1.0, size=None", "poisson"),
    ("power", "a, size=None", "powerlaw"),
    ("rayleigh", "scale=1.0, size=None", "rayleigh"),
    ("standard_cauchy", "size=None", "cauchy"),
    ("standard_t", "df, size=None", "t"),
    ("triangular", "left, mode, right, size=None", "triang"),
    ("uniform", "low=0.0, high=1.0, size=None", "uniform"),
    ("vonmises", "mu, kappa, size=None", "vonmises"),
    ("wald", "mean, scale, size=None", "invgauss"),
    ("weibull", "a, size=None", "weibull_min"),
    ("zipf", "a, size=None", "zipf"),
]
_GENERATOR = _NUMPY_COMMON + [
    ("random", "size=None, dtype=np.float64, out=None", "uniform"),
    ("integers", "low, high=None, size=None, dtype=np.int64, endpoint=False", "integers"),
    ("choice", "a, size=None, replace=True, p=None, axis=0, shuffle=True", "npchoice"),
    ("multivariate_hypergeometric", "colors, nsample, size=None, method='marginals'",
     "multivariate_hypergeom"),
    ("multivariate_normal", "mean, cov, size=None, check_valid='warn', tol=1e-8, *, "
     "method='svd'", "multivariate_normal"),
    ("permuted", "x, *, axis=None, out=None", "permuted"),
    ("shuffle", "x, axis=0", "permutation"),
    ("standard_exponential", "size=None, dtype=np.float64, method='zig', out=None", "expon"),
    ("standard_gamma", "shape, size=None, dtype=np.float64, out=None", "gamma"),
    ("standard_normal", "size=None, dtype=np.float64, out=None", "norm"),
]
_RANDOMSTATE = _NUMPY_COMMON + [
    ("random", "size=None", "uniform"),
    ("random_sample", "size=None", "uniform"),
    ("rand", "*dims", "uniform"),
    ("randn", "*dims", "norm"),
    ("randint", "low, high=None, size=None, dtype=int", "integers"),
    ("random_integers", "low, high=None, size=None", "random_integers"),
    ("choice", "a, size=None, replace=True, p=None", "npchoice"),
    ("multivariate_normal", "mean, cov, size=None, check_valid='warn', tol=1e-8",
     "multivariate_normal"),
    ("shuffle", "x", "permutation"),
    ("standard_exponential", "size=None", "expon"),
    ("standard_gamma", "shape, size=None", "gamma"),
    ("standard_normal", "size=None", "norm"),
]
# Methods of the generator classes that draw nothing (anything else is a draw).
_NOT_DRAWS = {"seed", "getstate", "setstate", "get_state", "set_state", "spawn",
              "bit_generator", "VERSION", "jumped"}

GENERATOR_TYPES = (_random.Random, np.random.Generator, np.random.RandomState)

# callable -> (Sampler, takes the generator as first argument)
_TABLE: dict[Any, tuple[Sampler, bool]] = {}
# generator type -> method name -> Sampler, for bound methods
_BY_TYPE: dict[type, dict[str, Sampler]] = {}


def _register_class(cls, specs) -> None:
    by_name = {}
    for name, sig, family in specs:
        if not hasattr(cls, name):     # e.g. binomialvariate before 3.12
            continue
        s = Sampler(name, _b(sig), family, shuffles=0 if family == "permutation" and
                    name == "shuffle" else -1)
        by_name[name] = s
        _TABLE[getattr(cls, name)] = (s, True)
    _BY_TYPE[cls] = by_name


_register_class(_random.Random, _RANDOM)
# SystemRandom overrides random/getrandbits/randbytes in Python; the rest it inherits.
_register_class(_random.SystemRandom, _RANDOM)
_register_class(np.random.Generator, _GENERATOR)
_register_class(np.random.RandomState, _RANDOMSTATE)
# Legacy module functions that are not bound methods of the global RandomState.
for _alias in ("ranf", "sample"):
    _f = getattr(np.random, _alias, None)
    if _f is not None and not isinstance(_f, types.MethodType) and \
            getattr(_f, "__self__", None) is None:
        _TABLE[_f] = (Sampler(_alias, _b("size=None"), "uniform"), False)


# Public methods of the generator classes that are neither known samplers nor
# _NOT_DRAWS: called unbound (`g.tomaxint()` records RandomState.tomaxint with g as
# argument 1) they are draws of unknown density.
_OTHER_METHODS: dict[Any, str] = {}
for _cls in (_random.Random, _random.SystemRandom, np.random.Generator, np.random.RandomState):
    for _n in dir(_cls):
        _m = getattr(_cls, _n, None)
        if _n.startswith("_") or _n in _NOT_DRAWS or not callable(_m):
            continue
        try:
            if _m not in _TABLE:
                _OTHER_METHODS[_m] = _n
        except TypeError:
            pass


def _random_type_of(obj) -> type | None:
    for cls in (np.random.Generator, np.random.RandomState, _random.SystemRandom,
                _random.Random):
        if isinstance(obj, cls):
            return cls
    return None


def sampler(logpdf: Callable[..., float], *, name: str | None = None,
            family: str | None = None):
    """Declare a function a sampler: `logpdf(value, *args, **kwargs)` is the
    log-density of what `f(*args, **kwargs)` returned.

    ::

        @tracer.ppl.sampler(lambda x, a, b: scipy.stats.beta.logpdf(x, a, b))
        def my_beta(r, a, b): ...

    A declared sampler is one random choice: the draws it makes inside are not
    choices of their own (tracer.ppl records it as a primitive call).  A first
    argument that is a random generator (`random.Random`, numpy `Generator` or
    `RandomState`) is passed to the function but not to `logpdf`.
    """
    if not callable(logpdf):
        raise TypeError(f"sampler(logpdf=...) needs a callable log-density, got {logpdf!r}")

    def declare(f):
        if not callable(f):
            raise TypeError(f"@sampler decorates a function, got {type(f).__name__}")
        site = name or getattr(f, "__name__", None) or type(f).__name__
        _check_name(site)

        def bind(*args, **kwargs):
            return {"args": args, "kwargs": kwargs}
        s = Sampler(site, bind, family or site, user_logpdf=logpdf)
        _TABLE[f] = (s, False)
        return f
    return declare


def _check_name(name: str) -> None:
    if not isinstance(name, str) or not name or any(c in name for c in "/@[]"):
        raise ValueError(f"a site name must be a non-empty str without '/', '@', '[' or "
                         f"']', got {name!r}")


def sample(name: str, sampler, /, *args, **kwargs):
    """Draw `sampler(*args, **kwargs)` at a site named `name` (within its call).

    Outside tracer.ppl this is the plain call.  Under `tracer.ppl.trace` the draw's
    address ends in `name` (then `[k]` for its k-th draw in the same call) instead
    of the sampler's method name and line, so it survives edits of the source.
    """
    _check_name(name)
    return sampler(*args, **kwargs)


def sampler_callables() -> frozenset:
    """The user samplers and `sample`: callables tracer.ppl records as primitives."""
    return frozenset([sample] + [f for f, (s, _) in _TABLE.items() if s.user_logpdf])


def method_names() -> frozenset:
    """Every name a draw's callee may end in (to pre-filter a trace's callee names)."""
    names = {"sample"}
    for cls in GENERATOR_TYPES:
        names.update(n for n in dir(cls) if not n.startswith("_"))
    names.update(s.name for s, _ in _TABLE.values())
    names.update(getattr(f, "__name__", "") for f in _TABLE)
    return frozenset(names)


def sampler_keys() -> list[tuple[Any, str, bool]]:
    """Every callable whose calls are draws, as (callable, site name, whether it
    takes the generator first): `sample`, the samplers' and the drawing methods'
    unbound functions, then the bound ones of the `random` and `numpy.random`
    modules (a call filter matches a bound method by its function too: the unbound
    come first so that their function is theirs)."""
    keys = [(sample, "sample", False)]
    keys += [(f, s.name, unbound) for f, (s, unbound) in _TABLE.items() if f is not sample]
    keys += [(f, name, True) for f, name in _OTHER_METHODS.items()]
    have = {id(k[0]) for k in keys}
    for module in (_random, np.random):
        for attr in dir(module):
            f = getattr(module, attr, None)
            if attr.startswith("_") or f is None or id(f) in have:
                continue
            s, owner, name = _lookup(f)
            if owner is None or owner is True or owner is False or not name or \
                    (s is None and name in _NOT_DRAWS):
                continue
            keys.append((f, s.name if s is not None else name, False))
            have.add(id(f))
    return keys


def _lookup(f) -> tuple[Sampler | None, Any, str | None]:
    """(sampler, bound generator or None, method name) of callable `f`."""
    try:
        hit = _TABLE.get(f)
    except TypeError:          # an unhashable callable: not a sampler
        return None, None, None
    if hit is not None:
        return hit[0], (None if hit[1] else False), hit[0].name
    other = _OTHER_METHODS.get(f)
    if other is not None:
        return None, True, other
    owner = getattr(f, "__self__", None)
    if owner is None or isinstance(owner, types.ModuleType):
        return None, None, None
    cls = _random_type_of(owner)
    if cls is None:
        return None, None, None
    name = getattr(f, "__name__", None)
    s = _BY_TYPE[cls].get(name) if name else None
    return s, owner, name


lookup = _lookup


def resolve(f, args: tuple, kwargs: dict) -> Draw | None:
    """The draw `f(*args, **kwargs)` makes, or None if it is no known sampler's call.

    Raises UnknownSamplerError for a method of a random generator that draws but
    has no known distribution, or a sampler called with arguments it does not bind.
    """
    site = None
    if f is sample:
        if len(args) < 2:
            return None
        site, f, args = args[0], args[1], args[2:]
        _check_name(site)
    s, owner, name = _lookup(f)
    if s is None:
        if owner is True and not (args and _random_type_of(args[0]) is not None):
            return None
        if owner is not None and name and name not in _NOT_DRAWS:
            where = type(args[0] if owner is True else owner).__name__
            raise UnknownSamplerError(f"{where}.{name} draws from no "
                                      f"distribution tracer.ppl knows")
        if owner is None and name is None and site is None:
            return None
        if site is not None:
            raise UnknownSamplerError(f"sample({site!r}, {f!r}, ...): {f!r} is not a sampler "
                                      f"tracer.ppl knows; declare it with @tracer.ppl.sampler")
        return None
    if owner is None:          # unbound method: the generator is argument 1
        if not args or _random_type_of(args[0]) is None:
            return None
        args = args[1:]
    try:
        params = s.bind(*args, **kwargs)
    except TypeError as e:
        raise UnknownSamplerError(f"{s.name}: arguments it does not bind ({e})") from None
    if s.user_logpdf is not None and owner is False and args and \
            _random_type_of(args[0]) is not None:
        params = {"args": args[1:], "kwargs": kwargs}
    target = params.get("x") if s.shuffles >= 0 else None
    return Draw(s, site or s.name, params, target)


def takes_generator(f) -> bool:
    """Whether sampler `f` is an unbound method: its first argument is the generator."""
    try:
        hit = _TABLE.get(f)
    except TypeError:
        return False
    return hit is not None and hit[1]


def is_unknown_sampler(f) -> bool:
    """Whether `f` is a drawing method of a random generator with no known density."""
    s, owner, name = _lookup(f)
    return s is None and owner is not None and bool(name) and name not in _NOT_DRAWS
