"""tracer.ppl.update, incremental path: the same (new_trace, weight, discard) as the
full re-run, on models with and without control-flow change; weight = difference
of the full log joints; only what depends on the changed choice re-runs."""

from __future__ import annotations

import random

import numpy as np
import pytest
import scipy.stats as st

import tracer
import tracer.ppl as ppl


def hier(r, groups, per_group):
    mu_a = r.gauss(0.0, 5.0)
    slope = r.gauss(0.0, 5.0)
    ys = []
    for g in range(groups):
        a = r.gauss(mu_a, 1.0)
        for i in range(per_group):
            ys.append(r.gauss(a + slope * i / per_group, 0.5))
    return sum(ys) / len(ys)


def crp(r, n, alpha):
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


GROUP = f"gauss@L{hier.__code__.co_firstlineno + 5}"      # a = r.gauss(mu_a, 1.0)
DATA = f"gauss@L{hier.__code__.co_firstlineno + 7}"       # ys.append(r.gauss(...))
TRANS = [[0.8, 0.1, 0.1], [0.1, 0.8, 0.1], [0.1, 0.1, 0.8]]


def branchy(r):
    x = r.gauss(0.0, 1.0)
    if x > 0:
        y = r.gauss(x, 1.0)
    else:
        y = r.expovariate(1.0)
    return x + y


def weights_read_later(r, n):
    # the draw's parameter is a list changed after the draw: scored at its state then
    w = [1.0, 1.0]
    out = []
    for i in range(n):
        w[0] = abs(r.gauss(0.0, 1.0)) + 0.1
        out.append(r.choices([0, 1], weights=w)[0])
    return out


def numpy_model(g, n):
    mu = g.normal(0.0, 2.0)
    xs = g.normal(mu, 1.0, size=n)
    scale = g.gamma(2.0, 1.0)
    return float(np.sum(xs)) * scale + g.normal(mu, scale)


@ppl.sampler(lambda x, m: st.norm.logpdf(x, m, 2.0))
def my_normal(r, m):
    return r.gauss(m, 2.0)


def with_user_sampler(r):
    a = my_normal(r, 0.0)
    b = my_normal(r, a * 2)
    return a + b


def _same_as_full(ct, constraints, *, incremental=True):
    """Update both ways; check they agree; return the incremental result."""
    new, weight, discard = ppl.update(ct, constraints)
    full, fweight, fdiscard = ppl.update(ct, constraints, incremental=False)
    assert full.update_path == "rerun: incremental=False"
    if incremental:
        assert new.update_path == "incremental", new.update_path
    assert new.values() == full.values()
    assert list(new) == list(full)
    assert new.value == full.value
    assert discard == fdiscard
    assert weight == pytest.approx(fweight, abs=1e-9)
    assert weight == pytest.approx(new.log_joint - ct.log_joint, abs=1e-9)
    assert new.log_joint == pytest.approx(full.log_joint, abs=1e-9)
    # the Choice objects (from a replay) agree with the incremental values
    kinds = {a: c.kind for a, c in full.choices.items()}
    for a, c in new.choices.items():
        assert c.value == new[a] and c.kind == kinds[a]
        assert c.logp == pytest.approx(full.choices[a].logp, abs=1e-9)
    tracer.validate(new.root)
    return new, weight, discard


def _addr(ct, needle, k=0):
    return [a for a in ct if needle in a][k]


def test_group_mean_rescores_its_data_only():
    ct = ppl.trace(hier, random.Random(0), 6, 5)
    a = _addr(ct, GROUP, 3)
    new, weight, discard = _same_as_full(ct, {a: ct[a] + 0.3})
    assert discard == {a: ct[a]}
    # the group's 5 data draws and itself scored again; 15 ops re-run (mul, truediv,
    # add per data draw ... the adds only: the rest do not read `a`)
    assert new.update_stats["rescored"] == 6
    assert new.update_stats["reran"] <= 5 + 6
    # dependent draws kept their values
    assert all(new[x] == ct[x] for x in ct if x != a)


def test_changing_a_data_draw_re_runs_what_reads_the_list():
    ct = ppl.trace(hier, random.Random(1), 3, 4)
    y = _addr(ct, DATA, 5)
    new, _, _ = _same_as_full(ct, {y: 7.0})
    assert new.value != ct.value and new[y] == 7.0
    # ys is made afresh: every append and the sum run again
    assert new.update_stats["reran"] >= 12


def test_top_level_and_chained_updates_match_the_full_path():
    r = random.Random(2)
    ct = ppl.trace(hier, r, 4, 3)
    addrs = list(ct)
    for step in range(12):
        a = addrs[r.randrange(len(addrs))]
        new, weight, _ = _same_as_full(ct, {a: ct[a] + r.gauss(0.0, 0.5)})
        if step % 3 != 2:
            ct = new                  # an MH chain: updates of updates share one tape


def test_crp_seating_change_rescores_later_seatings():
    ct = ppl.trace(crp, random.Random(3), 30, 1.5)
    seats = [a for a in ct if "choices" in a]
    # move a later customer to the first table (keeps the tables that exist)
    a = seats[20]
    if ct[a] == [0]:
        a = next(x for x in seats[5:] if ct[x] != [0])
    new, _, _ = _same_as_full(ct, {a: [0]})
    assert new.update_stats["rescored"] > 1


def test_crp_new_table_falls_back_to_the_full_run():
    ct = ppl.trace(crp, random.Random(3), 30, 1.5)
    seats = [a for a in ct if "choices" in a]
    j = next(j for j in range(3, len(seats)) if ct[seats[j]] == [0])
    a = seats[j]
    tables = 1 + max(ct[x][0] for x in seats[:j])     # the tables open at that point
    # seating it at a new table changes control flow (a new mean is drawn)
    new, weight, discard = ppl.update(ct, {a: [tables]})
    full, fweight, fdiscard = ppl.update(ct, {a: [tables]}, incremental=False)
    assert new.update_path.startswith("rerun: guard")
    assert discard == fdiscard and set(new) == set(full)
    fresh = [c for x, c in new.choices.items() if x not in ct.choices]
    assert weight == pytest.approx(new.log_joint - ct.log_joint - sum(c.logp for c in fresh))


def test_hmm_state_change():
    ct = ppl.trace(hmm, random.Random(4), 20, TRANS, [-2.0, 0.0, 2.0])
    zs = [a for a in ct if "choices" in a]
    a = zs[7]
    new, _, _ = _same_as_full(ct, {a: [(ct[a][0] + 1) % 3]})
    # its own emission and the next transition: 3 draws scored
    assert new.update_stats["rescored"] == 3
    z0 = _addr(ct, "randrange")
    _same_as_full(ct, {z0: (ct[z0] + 2) % 3})


def test_branch_flip_falls_back_and_matches_the_full_path():
    ct = ppl.trace(branchy, random.Random(5))
    x = next(iter(ct))
    kept, _, _ = _same_as_full(ct, {x: ct[x] * 0.5})         # same side of the branch
    new, weight, discard = ppl.update(ct, {x: -ct[x]})
    assert new.update_path.startswith("rerun: guard")
    fresh = [c for a, c in new.choices.items() if a not in ct.choices]
    assert len(fresh) == 1 and set(discard) == set(ct.choices)
    assert weight == pytest.approx(new.log_joint - ct.log_joint - fresh[0].logp)


def test_parameters_read_where_the_draw_was_made():
    # ppl.trace scores the draws with the list as it was at each draw (copied there:
    # tracer.ppl.snapshots), and so do the rescored draws of an incremental update
    ct = ppl.trace(weights_read_later, random.Random(6), 6)
    g = [a for a in ct if "gauss" in a]
    c = [a for a in ct if "choices" in a]
    for i in range(6):
        w0 = abs(ct[g[i]]) + 0.1
        want = np.log((w0 if ct[c[i]][0] == 0 else 1.0) / (w0 + 1.0))
        assert ct.choices[c[i]].logp == pytest.approx(want)
    full, _, _ = ppl.update(ct, {g[2]: 3.0}, incremental=False)
    new, _, _ = ppl.update(ct, {g[2]: 3.0})
    assert new.update_path == "incremental"
    # the list is made afresh: every draw that reads it is scored again
    assert new.update_stats["rescored"] == 1 + 6
    lin = new._state.lineage
    for i in range(6):
        w0 = abs(new[g[i]]) + 0.1
        k = new[c[i]][0]
        want = np.log((w0 if k == 0 else 1.0) / (w0 + 1.0))
        assert new._state.logp[lin.index[c[i]]] == pytest.approx(want)
    assert new.log_joint == pytest.approx(full.log_joint)


def test_numpy_draws_and_user_samplers():
    ct = ppl.trace(numpy_model, np.random.default_rng(7), 4)
    addrs = list(ct)
    mu, xs, scale = addrs[0], addrs[1], addrs[2]
    new, _, _ = ppl.update(ct, {mu: 0.5})
    assert new.update_path == "incremental"
    full, fw, _ = ppl.update(ct, {mu: 0.5}, incremental=False)
    assert new.value == full.value
    assert new.log_joint == pytest.approx(full.log_joint)
    np.testing.assert_array_equal(new[xs], ct[xs])
    new, _, _ = ppl.update(ct, {scale: 3.0})
    full, _, _ = ppl.update(ct, {scale: 3.0}, incremental=False)
    assert new.value == pytest.approx(full.value) and \
        new.log_joint == pytest.approx(full.log_joint)
    u = ppl.trace(with_user_sampler, random.Random(8))
    a = next(iter(u))
    new, _, _ = _same_as_full(u, {a: 1.25})
    assert new.update_stats["rescored"] == 2


def test_observations_and_interventions_stay():
    ct = ppl.trace(hier, random.Random(9), 3, 3)
    ys = [a for a in ct if DATA in a]
    cond = ppl.condition(hier, {ys[0]: 1.0, ys[4]: -1.0}, random.Random(9), 3, 3)
    mu = next(iter(cond))
    new, _, _ = _same_as_full(cond, {mu: 0.7})
    assert new.observed == {ys[0]: 1.0, ys[4]: -1.0}
    done = ppl.do(hier, {mu: 0.0}, random.Random(9), 3, 3)
    a = _addr(done, GROUP, 1)
    new, _, _ = _same_as_full(done, {a: 0.1})
    assert new.intervened == {mu: 0.0}


def test_new_arguments_or_addresses_take_the_full_path():
    ct = ppl.trace(hier, random.Random(10), 2, 2)
    a = next(iter(ct))
    new, _, _ = ppl.update(ct, {a: 0.0}, args=(random.Random(10), 2, 3))
    assert new.update_path == "rerun: other arguments"
    with pytest.raises(ValueError, match="no draw"):
        ppl.update(ct, {"hier/nowhere@L1": 0.0})


# -- replay by position, relations in one pass ---------------------------------------------

def test_replay_by_position_and_its_fallback(monkeypatch):
    from tracer.ppl import _hooks, run
    made = []
    real = _hooks.FixingContext

    def counting(fixed, *rest):
        made.append(len(fixed))
        return real(fixed, *rest)
    monkeypatch.setattr(run, "FixingContext", counting)
    ct = ppl.trace(hier, random.Random(11), 3, 4)
    again = ppl.replay(ct)
    assert not made                                    # replayed by position
    assert again.values() == ct.values() and again.value == ct.value
    assert again.log_joint == pytest.approx(ct.log_joint)
    assert set(again.choices[a].kind for a in again) == {"replayed"}
    tracer.validate(again.root)
    # on arguments that make fewer draws, by position fails: by address says what is lost
    with pytest.raises(ValueError, match="no draw was made"):
        ppl.replay(ct, random.Random(0), 2, 4)
    assert made
    # a run whose draws differ from the replayed ones in order: by address
    b = ppl.trace(branchy, random.Random(5))
    x = next(iter(b))
    flipped, _, _ = ppl.update(b, {x: -b[x]})
    made.clear()
    back = ppl.replay(flipped)
    assert back.values() == flipped.values() and not made
    # observations stay observations when replayed by position
    cond = ppl.condition(hier, {next(iter(ct)): 0.5}, random.Random(1), 3, 4)
    made.clear()
    rc = ppl.replay(cond)
    assert not made and rc.observed == cond.observed
    assert rc.log_likelihood == pytest.approx(cond.log_likelihood)


def test_replay_of_an_incremental_trace():
    ct = ppl.trace(hier, random.Random(12), 3, 3)
    a = _addr(ct, GROUP, 1)
    new, _, _ = ppl.update(ct, {a: 2.0})
    again = ppl.replay(new)
    assert again.values() == new.values() and again.value == new.value
    assert again.log_joint == pytest.approx(new.log_joint)


def test_relations_give_parents_in_one_pass():
    ct = ppl.trace(hmm, random.Random(13), 40, TRANS, [-2.0, 0.0, 2.0])
    rel = ct.relations()
    addrs = list(ct)
    zs = [a for a in addrs if "choices" in a]
    ys = [a for a in addrs if "gauss" in a]
    z0 = addrs[0]
    assert rel["choices"][zs[0]] == [z0]
    for t in range(1, len(zs)):
        assert rel["choices"][zs[t]] == [zs[t - 1]]       # a chain: its parent only
        assert rel["choices"][ys[t]] == [zs[t]]
    assert rel["value"] == ys
    every = ct.relations(transitive=True)
    assert every["choices"][ys[10]] == [z0] + zs[:11]
    # a CRP seating depends on every earlier seating, through the counts list
    c = ppl.trace(crp, random.Random(14), 12, 1.0)
    seats = [a for a in c if "choices" in a]
    assert c.relations()["choices"][seats[-1]] == seats[:-1]


def test_second_update_of_a_site_scores_its_dependents_as_columns():
    # the first update finds each dependent draw's sampler (lineage.fast); a later
    # one reads only their arguments and scores them per sampler in one call
    ct = ppl.trace(hier, random.Random(3), 5, 8)
    a = _addr(ct, GROUP, 2)
    first, _, _ = _same_as_full(ct, {a: ct[a] + 0.2})
    lin = ct._state.lineage
    data = [lin.index[x] for x in ct if DATA in x][16:24]     # group 2's data draws
    assert all(i in lin.fast for i in data)
    second, weight, _ = _same_as_full(ct, {a: ct[a] - 0.4})
    assert second.update_stats["rescored"] == 9
    # each rescored data draw's logp is scipy's at its new mean
    slope = ct[_addr(ct, "gauss@L", 1)]
    for k, x in enumerate([x for x in ct if DATA in x][16:24]):
        want = st.norm.logpdf(ct[x], ct[a] - 0.4 + slope * k / 8, 0.5)
        assert second.choices[x].logp == pytest.approx(want, abs=1e-12)


def test_score_vectorised_per_sampler_matches_scipy_draw_by_draw():
    from tracer.ppl.densities import score
    from tracer.ppl.samplers import resolve
    r = random.Random(4)
    g = np.random.default_rng(4)
    calls = [(r.gauss, (1.0, 2.0)), (r.gauss, (0.5, 0.25)), (r.uniform, (1.0, 3.0)),
             (r.expovariate, (2.0,)), (r.gauss, (-1.0, 1.5)), (g.normal, (0.0, 1.0)),
             (g.normal, (1.0, 2.0, 3)), (r.uniform, (0.0, 0.5)), (r.randint, (1, 6))]
    draws = [resolve(f, args, {}) for f, args in calls]
    values = [1.3, 0.4, 2.0, 0.7, -0.5, 0.1, np.array([0.5, 1.0, 2.0]), 0.25, 4]
    want = [st.norm.logpdf(1.3, 1.0, 2.0), st.norm.logpdf(0.4, 0.5, 0.25),
            st.uniform.logpdf(2.0, 1.0, 2.0), st.expon.logpdf(0.7, 0.0, 0.5),
            st.norm.logpdf(-0.5, -1.0, 1.5), st.norm.logpdf(0.1, 0.0, 1.0),
            np.sum(st.norm.logpdf([0.5, 1.0, 2.0], 1.0, 2.0)),
            st.uniform.logpdf(0.25, 0.0, 0.5), st.randint.logpmf(4, 1, 7)]
    assert score(draws, values) == pytest.approx(want, abs=1e-12)
