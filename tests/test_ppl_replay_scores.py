"""A replay by position copies the log-densities of the run it replays only when
every draw has the same value, sampler and parameters (scan.copy_scores); otherwise
its draws are scored again."""

import math
import random

import numpy as np
import pytest

pytest.importorskip("scipy")
from scipy import stats  # noqa: E402

import tracer.ppl as ppl  # noqa: E402
from tracer.ppl import scan  # noqa: E402

SCALE = [1.0]


def hmm(r, steps):
    trans = [[0.8, 0.2], [0.3, 0.7]]
    z = r.randrange(2)
    ys = []
    for _ in range(steps):
        z = r.choices(range(2), weights=trans[z])[0]
        ys.append(r.gauss([-1.0, 1.0][z], SCALE[0]))
    return sum(ys)


def test_replay_copies_equal_scores(monkeypatch):
    ct = ppl.trace(hmm, random.Random(3), 40)
    copied = []
    real = scan.copy_scores

    def spy(old, new):
        copied.append(real(old, new))
        return copied[-1]

    monkeypatch.setattr("tracer.ppl.run.copy_scores", spy)
    again = ppl.replay(ct)
    assert copied == [True]
    assert again.values() == ct.values()
    assert again.log_joint == ct.log_joint
    np.testing.assert_array_equal(again._draws.logp, ct._draws.logp)


def test_replay_scores_again_when_parameters_changed():
    SCALE[0] = 1.0
    ct = ppl.trace(hmm, random.Random(3), 40)
    try:
        SCALE[0] = 2.0        # the model reads state of its own: same draws, other sigma
        again = ppl.replay(ct)
    finally:
        SCALE[0] = 1.0
    assert again.values() == ct.values()
    gauss = [c for c in again.choices.values() if c.distribution == "norm"]
    assert gauss and all(c.params["sigma"] == 2.0 for c in gauss)
    for c in gauss:
        assert math.isclose(c.logp, stats.norm.logpdf(c.value, c.params["mu"], 2.0))
    assert again.log_joint != ct.log_joint


def test_copy_scores_refuses_what_it_cannot_compare():
    ct = ppl.trace(hmm, random.Random(5), 10)
    other = ppl.trace(hmm, random.Random(6), 10)
    d = other._draws
    before = d.logp.copy()
    assert not scan.copy_scores(ct._draws, d)          # other values
    np.testing.assert_array_equal(d.logp, before)
    assert not scan.copy_scores(None, d)
