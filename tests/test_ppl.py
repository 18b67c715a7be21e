"""tracer.ppl: draws found with their addresses, values and log-densities (against
scipy.stats), replay, condition, do, update, diff, unknown samplers."""

from __future__ import annotations

import math
import random
import shutil

import numpy as np
import pytest
import scipy.stats as st

import tracer
import tracer.ppl as ppl
from tracer.ppl.address import parse

# -- models (line numbers matter: the addresses below name them) ------------------------
LINE = {}


def _here(name):
    import inspect
    LINE[name] = inspect.currentframe().f_back.f_lineno


def geom(r, p):
    if r.random() < p:
        return 0
    return 1 + geom(r, p)


def step(r, x):
    return x + r.gauss(0.0, 1.0)


def walk(r, n):
    x = 0.0
    for _ in range(n):
        x = step(r, x)
    return x


def numpy_model(g, legacy):
    a = g.normal(1.0, 2.0)
    b = g.gamma(2.0, 3.0, size=3)
    c = g.integers(5, 10)
    d = legacy.poisson(4.0)
    e = np.random.normal(0.0, 0.5)
    f = g.choice(4, p=[0.1, 0.2, 0.3, 0.4])
    return a + b.sum() + c + d + e + f


def _beta_logpdf(x, a, b):
    return st.beta.logpdf(x, a, b)


@ppl.sampler(_beta_logpdf)
def my_beta(r, a, b):
    x = r.gammavariate(a, 1.0)
    y = r.gammavariate(b, 1.0)
    return x / (x + y)


def user_model(r):
    p = my_beta(r, 2.0, 5.0)
    return [r.random() < p for _ in range(3)]


def misc_model(r):
    k = r.randrange(2, 11, 3)
    c = r.choice("aab")
    xs = [1, 2, 3, 4]
    r.shuffle(xs)
    s = r.sample(range(10), 3)
    w = r.choices(["x", "y"], weights=[1, 3], k=2)
    v = ppl.sample("named", r.expovariate, 2.0)
    u = r.uniform(3.0, 1.0)
    t = r.triangular(0.0, 2.0, 0.5)
    return k, c, xs, s, w, v, u, t


def _check(ct):
    tracer.validate(ct.root)
    return ct


# -- finding draws --------------------------------------------------------------------

def test_loop_addresses_values_and_logp():
    ct = _check(ppl.trace(walk, random.Random(3), 4))
    sl = step.__code__.co_firstlineno + 1
    wl = walk.__code__.co_firstlineno + 3
    want = [f"walk/step@L{wl}/gauss@L{sl}"] + [f"walk/step@L{wl}[{k}]/gauss@L{sl}"
                                                for k in (1, 2, 3)]
    assert list(ct.choices) == want
    r = random.Random(3)
    for a in want:
        c = ct.choices[a]
        v = r.gauss(0.0, 1.0)
        assert c.value == v
        assert c.distribution == "norm" and c.params == {"mu": 0.0, "sigma": 1.0}
        assert c.logp == pytest.approx(st.norm.logpdf(v, 0.0, 1.0), abs=1e-12)
        assert c.node.value == v
    assert ct.log_joint == pytest.approx(sum(c.logp for c in ct.choices.values()))
    assert ct.value == pytest.approx(sum(c.value for c in ct.choices.values()))


def test_stochastic_recursion_addresses_nest():
    ct = _check(ppl.trace(geom, random.Random(5), 0.3))
    n = ct.value + 1
    assert len(ct.choices) == n
    l1 = geom.__code__.co_firstlineno + 1
    l3 = geom.__code__.co_firstlineno + 3
    for depth, a in enumerate(ct.choices):
        assert a == "geom/" + f"geom@L{l3}/" * depth + f"random@L{l1}"
        assert str(parse(a)) == a
    assert ct.log_joint == 0.0  # uniform(0, 1) draws


def test_numpy_draws_generator_and_legacy():
    np.random.seed(11)
    ct = _check(ppl.trace(numpy_model, np.random.default_rng(2), np.random.RandomState(4)))
    ch = list(ct.choices.values())
    assert [c.sampler.name for c in ch] == ["normal", "gamma", "integers", "poisson",
                                            "normal", "choice"]
    g, legacy = np.random.default_rng(2), np.random.RandomState(4)
    np.random.seed(11)
    a = g.normal(1.0, 2.0)
    b = g.gamma(2.0, 3.0, size=3)
    c = g.integers(5, 10)
    d = legacy.poisson(4.0)
    e = np.random.normal(0.0, 0.5)
    f = g.choice(4, p=[0.1, 0.2, 0.3, 0.4])
    assert ch[0].value == a and ch[0].logp == pytest.approx(st.norm.logpdf(a, 1.0, 2.0))
    assert np.array_equal(ch[1].value, b)
    assert ch[1].logp == pytest.approx(st.gamma.logpdf(b, 2.0, scale=3.0).sum())
    assert ch[2].value == c and ch[2].logp == pytest.approx(st.randint.logpmf(c, 5, 10))
    assert ch[3].value == d and ch[3].logp == pytest.approx(st.poisson.logpmf(d, 4.0))
    assert ch[4].value == e and ch[4].logp == pytest.approx(st.norm.logpdf(e, 0.0, 0.5))
    assert ch[5].value == f and ch[5].logp == pytest.approx(math.log([0.1, 0.2, 0.3, 0.4][f]))


def test_user_sampler_is_one_choice_with_its_density():
    ct = _check(ppl.trace(user_model, random.Random(8)))
    names = [c.sampler.name for c in ct.choices.values()]
    assert names == ["my_beta", "random", "random", "random"]   # not its gammavariates
    b = next(iter(ct.choices.values()))
    assert b.logp == pytest.approx(st.beta.logpdf(b.value, 2.0, 5.0))


def test_discrete_and_sequence_samplers():
    ct = _check(ppl.trace(misc_model, random.Random(1)))
    k, c, xs, s, w, v, u, t = ct.value
    by = {ch.sampler.name: ch for ch in ct.choices.values()}
    assert by["randrange"].logp == pytest.approx(-math.log(3))
    assert by["choice"].logp == pytest.approx(math.log("aab".count(c) / 3))
    assert by["shuffle"].value == tuple(xs) and by["shuffle"].logp == pytest.approx(-math.log(24))
    assert by["sample"].logp == pytest.approx(-math.log(10 * 9 * 8))
    assert by["choices"].logp == pytest.approx(sum(math.log({"x": .25, "y": .75}[x]) for x in w))
    assert by["uniform"].logp == pytest.approx(st.uniform.logpdf(u, 1.0, 2.0))
    assert by["triangular"].logp == pytest.approx(st.triang.logpdf(t, 0.25, 0.0, 2.0))
    named = [a for a in ct.choices if a.endswith("/named")]
    assert named == ["misc_model/named"]
    assert ct.choices["misc_model/named"].logp == pytest.approx(st.expon.logpdf(v, scale=0.5))


def test_unknown_sampler_raises_or_is_counted():
    def m(g):
        return g.random() + g.tomaxint()

    with pytest.raises(ppl.UnknownSamplerError, match="tomaxint"):
        ppl.trace(m, np.random.RandomState(0))
    ct = _check(ppl.trace(m, np.random.RandomState(0), unknown="record"))
    assert ct.unknown == 1 and len(ct.choices) == 2
    assert [c.logp is None for c in ct.choices.values()] == [False, True]
    with pytest.raises(ppl.UnknownSamplerError, match="no known density"):
        ct.log_joint
    again = _check(ppl.replay(ct, np.random.RandomState(1), unknown="record"))
    assert again.value == ct.value and not ppl.diff(ct, again)


def test_address_parse_and_errors():
    a = parse("model/step@L20[3]/gauss@L12")
    assert [tuple(c) for c in a] == [("model", None, 0), ("step", 20, 3), ("gauss", 12, 0)]
    assert str(a) == "model/step@L20[3]/gauss@L12" and str(a.calls) == "model/step@L20[3]"
    for bad in ("", "a//b", "a@Lx", "a[1"):
        with pytest.raises(ValueError):
            parse(bad)
    with pytest.raises(ValueError, match="site name"):
        ppl.sample("a/b", random.random)


# -- replay, condition, do ------------------------------------------------------------

def test_replay_reproduces_exactly_under_other_generators():
    ct = ppl.trace(numpy_model, np.random.default_rng(2), np.random.RandomState(4))
    again = _check(ppl.replay(ct, np.random.default_rng(99), np.random.RandomState(98)))
    assert list(again.choices) == list(ct.choices)
    assert not ppl.diff(ct, again)
    assert again.value == ct.value and again.log_joint == ct.log_joint
    assert all(c.kind == "replayed" for c in again.choices.values())
    rec = ppl.trace(geom, random.Random(5), 0.3)
    assert ppl.replay(rec, random.Random(6), 0.3).value == rec.value
    m = ppl.trace(misc_model, random.Random(1))
    assert ppl.replay(m, random.Random(2)).value == m.value


def test_condition_fixes_and_scores_exactly_the_named_sites():
    ct = ppl.trace(walk, random.Random(3), 4)
    a1, a3 = list(ct.choices)[1], list(ct.choices)[3]
    c = _check(ppl.condition(walk, {a1: 0.5, a3: -2.0}, random.Random(3), 4))
    assert c[a1] == 0.5 and c[a3] == -2.0
    assert c.observed == {a1: 0.5, a3: -2.0}
    assert [x.kind for x in c.choices.values()] == ["sampled", "observed", "sampled", "observed"]
    assert c.log_likelihood == pytest.approx(st.norm.logpdf([0.5, -2.0]).sum())
    assert c.log_joint == pytest.approx(sum(x.logp for x in c.choices.values()))
    with pytest.raises(ValueError, match="no draw was made"):
        ppl.condition(walk, {"walk/nowhere@L1": 1.0}, random.Random(3), 4)


def test_do_fixes_without_scoring():
    ct = ppl.trace(walk, random.Random(3), 4)
    a0 = list(ct.choices)[0]
    d = _check(ppl.do(walk, {a0: 10.0}, random.Random(3), 4))
    assert d[a0] == 10.0 and d.intervened == {a0: 10.0}
    others = [x for x in d.choices.values() if x.address != a0]
    assert d.log_joint == pytest.approx(sum(x.logp for x in others))
    assert d.value == pytest.approx(10.0 + sum(x.value for x in others))


def test_named_site_condition():
    c = _check(ppl.condition(misc_model, {"misc_model/named": 1.5}, random.Random(4)))
    assert c.value[5] == 1.5 and c.choices["misc_model/named"].kind == "observed"


# -- update -----------------------------------------------------------------------------

def test_update_weight_is_the_log_joint_difference():
    ct = ppl.trace(walk, random.Random(3), 5)
    a2 = list(ct.choices)[2]
    new, weight, discard = ppl.update(ct, {a2: 0.25})
    _check(new)
    assert new[a2] == 0.25 and discard == {a2: ct[a2]}
    assert all(new[a] == ct[a] for a in ct.choices if a != a2)
    assert weight == pytest.approx(new.log_joint - ct.log_joint)


def test_update_with_changed_control_flow_samples_new_addresses():
    ct = ppl.trace(geom, random.Random(5), 0.3)
    first = list(ct.choices)[0]
    # the first flip now succeeds: the recursion stops, every other address is gone
    new, weight, discard = ppl.update(ct, {first: 0.0})
    assert list(new.choices) == [first] and new.value == 0
    assert set(discard) == set(ct.choices)
    assert weight == pytest.approx(new.log_joint - ct.log_joint)
    # and fails: deeper addresses keep their values, new ones are sampled from the prior
    short = ppl.trace(geom, random.Random(1), 0.9)
    assert len(short.choices) == 1
    new, weight, discard = ppl.update(short, {list(short.choices)[0]: 0.95},
                                      args=(random.Random(7), 0.5))
    fresh = [c for a, c in new.choices.items() if a not in short.choices]
    assert fresh and len(new.choices) == 1 + len(fresh)
    assert weight == pytest.approx(new.log_joint - short.log_joint -
                                   sum(c.logp for c in fresh))


def test_update_keeps_observations():
    ct = ppl.condition(walk, {"walk/step@L%d[1]/gauss@L%d" % (
        walk.__code__.co_firstlineno + 3, step.__code__.co_firstlineno + 1): 1.0},
        random.Random(2), 3)
    obs = next(iter(ct.observed))
    a0 = list(ct.choices)[0]
    new, weight, _ = ppl.update(ct, {a0: 0.0})
    assert new.observed == {obs: 1.0}
    assert weight == pytest.approx(new.log_joint - ct.log_joint)


# -- diff, relations, pictures ------------------------------------------------------------

def test_diff_by_address_when_control_flow_diverged():
    a = ppl.trace(geom, random.Random(5), 0.3)
    first = list(a.choices)[0]
    b, _, _ = ppl.update(a, {first: 0.0})
    d = ppl.diff(a, b)
    assert d.changed == {first: (a[first], 0.0)}
    assert set(d.only_a) == set(a.choices) - {first} and not d.only_b and not d.same
    assert str(d).startswith("0 same, 1 changed")


def regression(r, n):
    a = r.gauss(0.0, 1.0)
    b = r.gauss(0.0, 1.0)
    ys = []
    for i in range(n):
        ys.append(r.gauss(a + b * i, 0.5))
    return sum(ys) / len(ys)


def test_relations_follow_appends():
    ct = _check(ppl.trace(regression, random.Random(0), 5))
    rel = ct.relations()
    a, b, *ys = list(ct.choices)
    assert rel["value"] == ys                       # the data draws, through ys.append
    for y in ys:
        assert rel["choices"][y] == [a, b]
    assert rel["choices"][a] == []
    every = ct.relations(transitive=True)
    assert every["value"] == list(ct.choices)       # and a, b through them
    assert every["choices"] == rel["choices"]


def test_to_dot_and_render():
    ct = ppl.condition(regression, {"regression/gauss@L%d" % (
        regression.__code__.co_firstlineno + 1): 0.3}, random.Random(0), 2)
    text = ct.to_dot()
    assert text.startswith("digraph model") and "fillcolor" in text and "-> value" in text
    # a, b -> each of the 2 data draws; the value is computed from the data draws
    assert text.count("->") == 2 * 2 + 2


def test_render_with_dot(tmp_path):
    if shutil.which("dot") is None:
        pytest.skip("Graphviz's dot program is not installed (apt-get install graphviz)")
    ct = ppl.trace(regression, random.Random(0), 2)
    out = ct.render(tmp_path / "m.svg")
    assert open(out).read().lstrip().startswith("<")


def same_line(r, g):
    m = g.normal
    x = r.gauss(0, 1) + r.gauss(5, 1)
    params = (2.0, 0.5)
    y = r.gauss(*params)
    z = m(1.0, 2.0) + m(3.0, 4.0)
    return x + y + z


def test_sites_on_one_line_star_calls_and_bound_values():
    ct = _check(ppl.trace(same_line, random.Random(2), np.random.default_rng(2)))
    l0 = same_line.__code__.co_firstlineno
    assert list(ct.choices) == [f"same_line/gauss@L{l0 + 2}", f"same_line/gauss@L{l0 + 2}[1]",
                                f"same_line/gauss@L{l0 + 4}", f"same_line/normal@L{l0 + 5}",
                                f"same_line/normal@L{l0 + 5}[1]"]
    ch = list(ct.choices.values())
    assert [c.params for c in ch] == [{"mu": 0, "sigma": 1}, {"mu": 5, "sigma": 1},
                                      {"mu": 2.0, "sigma": 0.5},
                                      {"loc": 1.0, "scale": 2.0, "size": None},
                                      {"loc": 3.0, "scale": 4.0, "size": None}]
    for c in ch:
        p = list(c.params.values())
        assert c.logp == pytest.approx(st.norm.logpdf(c.value, p[0], p[1]))
    again = _check(ppl.replay(ct, random.Random(9), np.random.default_rng(9)))
    assert again.value == ct.value and not ppl.diff(ct, again)
    c = ppl.condition(same_line, {list(ct.choices)[1]: 0.0, list(ct.choices)[4]: 1.0},
                      random.Random(2), np.random.default_rng(2))
    assert [x.kind for x in c.choices.values()] == ["sampled", "observed", "sampled",
                                                    "sampled", "observed"]


def test_nothing_below_imports_ppl():
    from test_imports import _imports, _modules
    modules = _modules()
    for m, p in modules.items():
        if not m.startswith("tracer.ppl"):
            assert not {d for d in _imports(m, p, modules) if d.startswith("tracer.ppl")}, m


def _gen(r, n):
    for i in range(n):
        yield r.gauss(i, 1.0)


def _helper(r, x):
    return r.random() + x


def entered_from_c(r):
    xs = list(_gen(r, 3))                                  # frames list() resumes
    ys = [_helper(r, x) for x in xs]
    zs = sorted(xs, key=lambda v: v + r.random())          # a key function
    ws = map(lambda v: _helper(r, v), xs)
    return sum(ys) + sum(zs) + sum(ws)


def test_frames_entered_from_c_have_the_addresses_replay_uses():
    ct = _check(ppl.trace(entered_from_c, random.Random(0)))
    line = entered_from_c.__code__.co_firstlineno
    assert list(ct.choices)[:2] == [f"entered_from_c/_gen@L{line + 1}/gauss@L"
                                    f"{_gen.__code__.co_firstlineno + 2}",
                                    f"entered_from_c/_gen@L{line + 1}[1]/gauss@L"
                                    f"{_gen.__code__.co_firstlineno + 2}"]
    assert len(ct.choices) == 12
    again = _check(ppl.replay(ct, random.Random(5)))
    assert again.value == ct.value and not ppl.diff(ct, again)


def test_replay_refuses_a_run_that_misses_addresses():
    ct = ppl.trace(walk, random.Random(3), 4)
    with pytest.raises(ValueError, match="no draw was made"):
        ppl.replay(ct, random.Random(3), 2)


def every_numpy_sampler(g):
    g.random(2), g.integers(0, 10, 3), g.choice(5, 2, replace=False), g.bytes(4)
    g.permutation(5), g.permuted(np.arange(6).reshape(2, 3), axis=1)
    g.beta(2, 3), g.binomial(10, 0.5), g.chisquare(3), g.dirichlet([1, 2, 3])
    g.exponential(2.0), g.f(3, 4), g.gamma(2.0), g.geometric(0.3), g.gumbel()
    g.hypergeometric(5, 6, 4), g.laplace(), g.logistic(), g.lognormal(), g.logseries(0.5)
    g.multinomial(10, [0.2, 0.3, 0.5]), g.multivariate_normal([0, 0], [[1, 0], [0, 2]])
    g.negative_binomial(3, 0.5), g.noncentral_chisquare(3, 1.0), g.noncentral_f(3, 4, 1.0)
    g.normal(), g.pareto(3.0), g.poisson(3.0), g.power(2.0), g.rayleigh(), g.standard_cauchy()
    g.standard_exponential(), g.standard_gamma(2.0), g.standard_normal(3), g.standard_t(5)
    g.triangular(0, 0.3, 1), g.uniform(), g.vonmises(0.5, 2.0), g.wald(1.0, 2.0)
    g.weibull(2.0), g.zipf(2.0), g.multivariate_hypergeometric([3, 4, 5], 4)
    a = np.arange(5)
    g.shuffle(a)


EXPECTED = {   # sampler -> log-density of its value, written against scipy.stats directly
    "random": lambda x: st.uniform.logpdf(x).sum(),
    "integers": lambda x: st.randint.logpmf(x, 0, 10).sum(),
    "choice": lambda x: -math.log(5 * 4),
    "bytes": lambda x: 4 * math.log(1 / 256),
    "permutation": lambda x: -math.log(math.factorial(5)),
    "permuted": lambda x: -2 * math.log(6),
    "beta": lambda x: st.beta.logpdf(x, 2, 3), "binomial": lambda x: st.binom.logpmf(x, 10, .5),
    "chisquare": lambda x: st.chi2.logpdf(x, 3),
    "dirichlet": lambda x: st.dirichlet.logpdf(x, [1, 2, 3]),
    "exponential": lambda x: st.expon.logpdf(x, scale=2.0), "f": lambda x: st.f.logpdf(x, 3, 4),
    "gamma": lambda x: st.gamma.logpdf(x, 2.0), "geometric": lambda x: st.geom.logpmf(x, 0.3),
    "gumbel": lambda x: st.gumbel_r.logpdf(x),
    "hypergeometric": lambda x: st.hypergeom.logpmf(x, 11, 5, 4),
    "laplace": lambda x: st.laplace.logpdf(x), "logistic": lambda x: st.logistic.logpdf(x),
    "lognormal": lambda x: st.lognorm.logpdf(x, 1.0), "logseries": lambda x: st.logser.logpmf(x, .5),
    "multinomial": lambda x: st.multinomial.logpmf(x, 10, [0.2, 0.3, 0.5]),
    "multivariate_normal": lambda x: st.multivariate_normal.logpdf(x, [0, 0], [[1, 0], [0, 2]]),
    "negative_binomial": lambda x: st.nbinom.logpmf(x, 3, 0.5),
    "noncentral_chisquare": lambda x: st.ncx2.logpdf(x, 3, 1.0),
    "noncentral_f": lambda x: st.ncf.logpdf(x, 3, 4, 1.0), "normal": lambda x: st.norm.logpdf(x),
    "pareto": lambda x: st.lomax.logpdf(x, 3.0), "poisson": lambda x: st.poisson.logpmf(x, 3.0),
    "power": lambda x: st.powerlaw.logpdf(x, 2.0), "rayleigh": lambda x: st.rayleigh.logpdf(x),
    "standard_cauchy": lambda x: st.cauchy.logpdf(x),
    "standard_exponential": lambda x: st.expon.logpdf(x),
    "standard_gamma": lambda x: st.gamma.logpdf(x, 2.0),
    "standard_normal": lambda x: st.norm.logpdf(x).sum(), "standard_t": lambda x: st.t.logpdf(x, 5),
    "triangular": lambda x: st.triang.logpdf(x, 0.3), "uniform": lambda x: st.uniform.logpdf(x),
    "vonmises": lambda x: st.vonmises.logpdf(x, 2.0, loc=0.5),
    "wald": lambda x: st.invgauss.logpdf(x, 0.5, scale=2.0),
    "weibull": lambda x: st.weibull_min.logpdf(x, 2.0), "zipf": lambda x: st.zipf.logpmf(x, 2.0),
    "multivariate_hypergeometric": lambda x: st.multivariate_hypergeom.logpmf(x, [3, 4, 5], 4),
    "shuffle": lambda x: -math.log(math.factorial(5)),
}


def test_every_generator_sampler_against_scipy():
    ct = _check(ppl.trace(every_numpy_sampler, np.random.default_rng(0)))
    names = [c.sampler.name for c in ct.choices.values()]
    assert sorted(names) == sorted(EXPECTED)
    for c in ct.choices.values():
        assert c.logp == pytest.approx(float(EXPECTED[c.sampler.name](c.value)), rel=1e-9), c
    again = _check(ppl.replay(ct, np.random.default_rng(1)))
    assert not ppl.diff(ct, again)


def more_random_samplers(r):
    r.normalvariate(1, 2), r.lognormvariate(0.5, 0.8), r.expovariate(2.0)
    r.vonmisesvariate(1.0, 2.0), r.gammavariate(2.0, 1.5), r.betavariate(2, 3)
    r.paretovariate(3.0), r.weibullvariate(1.5, 2.0), r.binomialvariate(10, 0.3)
    r.getrandbits(8), r.randbytes(3), r.randint(1, 6)


RANDOM_EXPECTED = {
    "normalvariate": lambda x: st.norm.logpdf(x, 1, 2),
    "lognormvariate": lambda x: st.lognorm.logpdf(x, 0.8, scale=math.exp(0.5)),
    "expovariate": lambda x: st.expon.logpdf(x, scale=0.5),
    # random's von Mises draws lie in [0, 2pi); scipy's density is periodic about loc
    "vonmisesvariate": lambda x: st.vonmises.logpdf((x - 1.0 + math.pi) % (2 * math.pi)
                                                    - math.pi + 1.0, 2.0, loc=1.0),
    "gammavariate": lambda x: st.gamma.logpdf(x, 2.0, scale=1.5),
    "betavariate": lambda x: st.beta.logpdf(x, 2, 3),
    "paretovariate": lambda x: st.pareto.logpdf(x, 3.0),
    "weibullvariate": lambda x: st.weibull_min.logpdf(x, 2.0, scale=1.5),
    "binomialvariate": lambda x: st.binom.logpmf(x, 10, 0.3),
    "getrandbits": lambda x: st.randint.logpmf(x, 0, 256),
    "randbytes": lambda x: 3 * math.log(1 / 256),
    "randint": lambda x: st.randint.logpmf(x, 1, 7),
}


def test_more_random_samplers_against_scipy():
    ct = _check(ppl.trace(more_random_samplers, random.Random(4)))
    assert sorted(c.sampler.name for c in ct.choices.values()) == sorted(RANDOM_EXPECTED)
    for c in ct.choices.values():
        assert c.logp == pytest.approx(float(RANDOM_EXPECTED[c.sampler.name](c.value)),
                                       rel=1e-9), c


# -- draws through bound methods (the dispatcher is not given their generator) ----------

class _Holder:
    def __init__(self, rng):
        self.rng = rng


_GLOBAL_GAUSS = random.Random(99).gauss


def bound_calls(r, g, h, params, kw):
    m = g.normal
    a = m(1.0, 2.0)                     # a bound builtin in a local
    b = r.gauss(*params)                # star call: the bound method is loaded
    c = h.rng.gauss(*params)            # through an attribute of an instance
    d = r.gauss(**kw)
    e = _GLOBAL_GAUSS(0.0, 1.0)         # a bound method in a global
    n = m(size=2, loc=-1.0)             # keywords only
    return a + b + c + d + e + n.sum()


def _bound_args(seed):
    return (random.Random(seed), np.random.default_rng(seed), _Holder(random.Random(seed + 1)),
            (2.0, 0.5), {"mu": 5.0, "sigma": 0.1})


def test_fixing_draws_made_through_bound_methods():
    global _GLOBAL_GAUSS
    _GLOBAL_GAUSS = random.Random(99).gauss
    ct = _check(ppl.trace(bound_calls, *_bound_args(4)))
    assert [c.sampler.name for c in ct.choices.values()] == ["normal", "gauss", "gauss",
                                                             "gauss", "gauss", "normal"]
    _GLOBAL_GAUSS = random.Random(7).gauss
    again = _check(ppl.replay(ct, *_bound_args(8)))
    assert again.value == ct.value and not ppl.diff(ct, again)
    assert all(c.kind == "replayed" for c in again.choices.values())
    # observe the draw from h: every other draw comes from its own generator as untraced
    addrs = list(ct.choices)
    _GLOBAL_GAUSS = random.Random(99).gauss
    cond = _check(ppl.condition(bound_calls, {addrs[2]: 0.25}, *_bound_args(4)))
    assert [c.kind for c in cond.choices.values()] == ["sampled", "sampled", "observed",
                                                       "sampled", "sampled", "sampled"]
    for a in addrs:
        want = 0.25 if a == addrs[2] else ct.choices[a].value
        assert np.array_equal(cond.choices[a].value, want)
    assert cond.choices[addrs[2]].logp == pytest.approx(st.norm.logpdf(0.25, 2.0, 0.5))


def from_a_container(r):
    x = r.gauss(0.0, 1.0)
    return x + [r.gauss][0](3.0, 1.0)


def test_a_bound_method_from_a_container_is_fixed_like_any_draw():
    ct = ppl.trace(from_a_container, random.Random(1))
    first, second = list(ct.choices)
    assert ppl.replay(ct).value == ct.value
    # a fixing run lets the program make its own calls (the fixed values replace
    # the results): the draw through a bound method from a container is sampled
    # from its own generator, as untraced, and can be fixed too
    c = ppl.condition(from_a_container, {first: 0.0}, random.Random(1))
    r = random.Random(1)
    r.gauss(0.0, 1.0)
    assert c[first] == 0.0 and c[second] == r.gauss(3.0, 1.0)
    c = ppl.condition(from_a_container, {second: 2.5}, random.Random(1))
    assert c[first] == ct[first] and c[second] == 2.5 and c.value == ct[first] + 2.5