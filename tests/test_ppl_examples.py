"""examples/ppl_inference.py: inference on a conjugate model against its known
posterior mean, and MH on the hierarchical regression."""

from __future__ import annotations

import importlib.util
import pathlib
import random

import pytest

EXAMPLE = pathlib.Path(__file__).resolve().parent.parent / "examples" / "ppl_inference.py"


@pytest.fixture(scope="module")
def ex():
    spec = importlib.util.spec_from_file_location("ppl_inference", EXAMPLE)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_importance_sampling_posterior_mean(ex):
    exact = ex.exact_posterior_mean(ex.DATA)       # posterior sd 0.44
    assert ex.importance_sampling(ex.DATA, 500, seed=3) == pytest.approx(exact, abs=0.15)


def test_single_site_mh_posterior_mean(ex):
    exact = ex.exact_posterior_mean(ex.DATA)
    kept, rate = ex.metropolis_hastings(ex.conjugate, (random.Random(2), len(ex.DATA)),
                                        ex.observations(ex.DATA), ["conjugate/mu"], 800,
                                        scale=1.0, seed=5)
    assert 0.2 < rate < 0.8
    tail = kept[200:]
    assert sum(k["conjugate/mu"] for k in tail) / len(tail) == pytest.approx(exact, abs=0.15)
    assert all(k.observed == ex.observations(ex.DATA) for k in kept[-5:])


def test_mh_on_the_hierarchical_regression_moves_every_site(ex):
    import tracer.ppl as ppl
    t = ppl.trace(ex.hierarchical, random.Random(3), ex.GROUPS)
    sites = ["hierarchical/mu_a", "hierarchical/slope"] + [a for a in t.choices
                                                           if a.endswith("/a")]
    assert len(sites) == 5
    kept, rate = ex.metropolis_hastings(ex.hierarchical, (random.Random(4), ex.GROUPS), {},
                                        sites, 100, scale=0.4)
    assert rate > 0.1
    assert all(kept[-1][s] != t[s] for s in sites)


def test_regression_example_prints_what_the_readme_shows(capsys):
    import runpy
    runpy.run_path(str(EXAMPLE.parent / "ppl_regression.py"), run_name="__main__")
    out = capsys.readouterr().out
    assert out.startswith("<ChoiceTrace of regression: 5 choices, log_joint -4.7500>")
    readme = (EXAMPLE.parent.parent / "README.md").read_text()
    assert out in readme
