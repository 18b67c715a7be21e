"""The context examples: examples/profiler.py and examples/probabilistic_model.py."""

import inspect
import math
import random

import numpy as np
import pytest

import tracer
from helpers import load_example
from tracer.views import ArgumentNode, NestedCallNode, PrimitiveCallNode, ReturnNode

profiler = load_example("profiler")
pm = load_example("probabilistic_model")
irx = load_example("irtracker_examples")


def walk(node, depth=0):
    """(depth, node) for `node` and everything below it, in recording order."""
    yield depth, node
    for child in node.children:
        yield from walk(child, depth + 1)


def nested_calls(root):
    return [(d, n) for d, n in walk(root) if d == 0 or isinstance(n, NestedCallNode)]


# -- profiler -----------------------------------------------------------------------------


def profiled(f, *args):
    root = profiler.profile(f, *args)
    tracer.validate(root)
    return root


def test_profiler_stamps_every_nested_call():
    root = profiled(profiler.workload, 4)
    assert root.value == profiler.workload(4) == 3 + 7 + 13
    calls = nested_calls(root)
    assert len(calls) == 1 + 9 + 3 + 3 + 3  # workload, fib(4)'s tree, safe_parse, parse, is_prime
    for _, call in calls:
        md = call.metadata
        assert isinstance(md["start"], int) and isinstance(md["end"], int)
        assert md["start"] <= md["end"]
        assert "approximate" not in md  # every call here is a Python call
    # Primitive calls are not timed.
    assert all("start" not in n.metadata for _, n in walk(root) if isinstance(n, PrimitiveCallNode))


def _check_nesting(root):
    for _, call in nested_calls(root):
        kids = [c for c in call.children if isinstance(c, NestedCallNode)]
        for kid in kids:
            assert call.metadata["start"] <= kid.metadata["start"] <= kid.metadata["end"] <= call.metadata["end"]
        for a, b in zip(kids, kids[1:]):  # siblings run one after the other
            assert a.metadata["end"] <= b.metadata["start"]


def test_profiler_intervals_nest():
    _check_nesting(profiled(profiler.workload, 5))


def test_profiler_times_a_call_that_raised():
    root = profiled(profiler.workload, 1)
    raised = [n for _, n in nested_calls(root) if n.raised]
    assert [(profiler._name(n), n.arguments[0].value) for n in raised] == [("parse", "eleven")]
    call = raised[0]
    assert isinstance(call.value, ValueError)
    assert not any(isinstance(c, ReturnNode) for c in call.children)
    assert call.metadata["start"] <= call.metadata["end"]
    assert call.parent.metadata["start"] <= call.metadata["start"]
    assert call.metadata["end"] <= call.parent.metadata["end"]


def test_timing_report_names_at_their_depth():
    root = profiled(profiler.workload, 2)
    report = profiler.timing_report(root)
    rows = []
    for line in report.splitlines():
        stripped = line.lstrip(" ")
        indent = len(line) - len(stripped)
        assert indent % 2 == 0
        rows.append((indent // 2, stripped.split(")", 1)[0] + ")"))
    assert rows == [
        (0, "workload(2)"),
        (1, "fib(2)"), (2, "fib(1)"), (2, "fib(0)"),
        (1, "safe_parse('7')"), (2, "parse('7')"),
        (1, "is_prime(7)"),
        (1, "safe_parse('eleven')"), (2, "parse('eleven')"),
        (1, "is_prime(0)"),
        (1, "safe_parse('13')"), (2, "parse('13')"),
        (1, "is_prime(13)"),
    ]
    lines = report.splitlines()
    assert lines[8].rstrip().endswith("↯ ValueError") and "parse('eleven')" in lines[8]
    assert sum("↯" in line for line in lines) == 1
    # Elapsed microseconds as recorded, and the share of the caller.
    calls = [n for _, n in nested_calls(root)]
    for line, call in zip(lines, calls):
        us = (call.metadata["end"] - call.metadata["start"]) / 1000
        assert f"{us:10.1f} µs" in line
        if call.parent is not None:
            assert "% of caller" in line
    assert "% of caller" not in lines[0]


def gen_squares(n):
    for i in range(n):
        yield i * i


def sum_squares(n):
    return sum(x for x in gen_squares(n)) + len(sorted([3, 1, 2], key=abs))


def test_profiler_generators_and_c_callers():
    # sum() drives Python generators: it is recorded as a nested call that no enter
    # announced, so its start comes from its first child and is marked approximate.
    root = profiled(sum_squares, 3)
    assert root.value == 5 + 3
    calls = nested_calls(root)
    by_name = {}
    for _, call in calls:
        by_name.setdefault(profiler._name(call), []).append(call)
        assert call.metadata["start"] <= call.metadata["end"]
    assert [c.metadata.get("approximate", False) for c in by_name["sum"]] == [True]
    assert not any(c.metadata.get("approximate") for c in by_name["sum_squares"])
    _check_nesting(root)
    assert "≈" in profiler.timing_report(root)


def test_profiler_main_prints_report(capsys):
    profiler.main()
    out = capsys.readouterr().out
    assert out.startswith("workload(4) = 23\n")
    assert "\n  fib(4)" in out and "\n        fib(1)" in out and "↯ ValueError" in out


# -- probabilistic model --------------------------------------------------------------------


def run(seed, constraints=None, p_stop=0.3):
    root, rec = pm.run(seed, constraints, p_stop)
    tracer.validate(root)
    return root, rec


def line_of(func, text):
    """The line number of the first line of `func` containing `text`."""
    lines, first = inspect.getsourcelines(func)
    return first + next(i for i, line in enumerate(lines) if text in line)


L_DRIFT = line_of(pm.model, "drift = g.normal")
L_NOISE = line_of(pm.model, "noise = g.exponential")
L_FLIP = line_of(pm.n_segments, "r.random()")
L_REGIME = line_of(pm.segment, "r.choice")
L_STEP = line_of(pm.segment, "step = g.normal")
L_JUMP = line_of(pm.segment, "g.binomial")
L_GAUSS = line_of(pm.segment, "r.gauss")
DRIFT = f"normal@L{L_DRIFT}#0"
NOISE = f"exponential@L{L_NOISE}#0"


def expected_addresses(rec_values):
    """The addresses the model's control flow implies, from the recorded values."""
    flips = [v for a, v in rec_values.items() if a.endswith(f"random@L{L_FLIP}#0")]
    k = len(flips)
    out = ["/".join(["n_segments#0"] * (i + 1) + [f"random@L{L_FLIP}#0"]) for i in range(k)]
    out += [DRIFT, NOISE]
    for i in range(k):
        out += [f"segment#{i}/choice@L{L_REGIME}#0", f"segment#{i}/normal@L{L_STEP}#0",
                f"segment#{i}/binomial@L{L_JUMP}#0"]
        if rec_values[f"segment#{i}/binomial@L{L_JUMP}#0"] == 1:
            out.append(f"segment#{i}/gauss@L{L_GAUSS}#0")
    return out


def same_value(a, b):
    """Equal values across two runs (objects compared by identity: same type)."""
    if a is b:
        return True
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    if isinstance(a, BaseException):
        return a.args == b.args
    if type(a).__eq__ is object.__eq__:  # Random, Generator, iterators: per-run objects
        return True
    return bool(a == b)


@pytest.mark.parametrize("seed", [1, 7, 12])
def test_addresses_are_stable(seed):
    root1, rec1 = run(seed)
    root2, rec2 = run(seed)
    m1, m2 = pm.choice_map(rec1), pm.choice_map(rec2)
    assert list(m1) == list(m2)
    assert list(m1.values()) == list(m2.values())
    assert root1.value == root2.value == pm.model(random.Random(seed), np.random.default_rng(seed))
    assert list(m1) == expected_addresses(m1)
    # Every choice is a primitive draw carrying its own address.
    for address, node in rec1.choices.items():
        assert isinstance(node, PrimitiveCallNode) and node.metadata["address"] == address
        assert pm.find_choice(root1, address) == node


def test_segment_count_varies_with_seed():
    counts = set()
    for seed in range(12):
        root, rec = run(seed)
        k = sum(1 for a in rec.choices if a.endswith(f"random@L{L_FLIP}#0"))
        assert sum(1 for a in rec.choices if a.endswith(f"choice@L{L_REGIME}#0")) == k
        counts.add(k)
    assert len(counts) >= 3


def test_log_densities():
    root, rec = run(7)
    c = rec.choices
    drift, noise = c[DRIFT].value, c[NOISE].value
    assert c[DRIFT].metadata["params"] == {"loc": 0.0, "scale": 1.0, "size": None}
    assert c[DRIFT].metadata["logpdf"] == pytest.approx(-0.5 * drift ** 2 - 0.5 * math.log(2 * math.pi))
    # numpy's exponential takes the scale (0.5): rate 2.
    assert c[NOISE].metadata["distribution"] == "exponential"
    assert c[NOISE].metadata["logpdf"] == pytest.approx(math.log(2.0) - 2.0 * noise)
    k = sum(1 for a in c if a.startswith("segment#") and a.endswith(f"choice@L{L_REGIME}#0"))
    assert k >= 2
    jumps = 0
    for i in range(k):
        regime = c[f"segment#{i}/choice@L{L_REGIME}#0"]
        assert regime.value in ("calm", "storm")
        assert regime.metadata["logpdf"] == pytest.approx(-math.log(2))
        step = c[f"segment#{i}/normal@L{L_STEP}#0"]
        scale = noise if regime.value == "calm" else 3.0 * noise
        assert step.metadata["params"]["loc"] == drift and step.metadata["params"]["scale"] == scale
        z = (step.value - drift) / scale
        assert step.metadata["logpdf"] == pytest.approx(-0.5 * z * z - math.log(scale * math.sqrt(2 * math.pi)))
        flip = c[f"segment#{i}/binomial@L{L_JUMP}#0"]
        assert flip.metadata["logpdf"] == pytest.approx(math.log(0.2 if flip.value == 1 else 0.8))
        if flip.value == 1:
            jumps += 1
            g = c[f"segment#{i}/gauss@L{L_GAUSS}#0"]
            assert g.metadata["params"] == {"mu": 0.0, "sigma": 5.0}
            assert g.metadata["logpdf"] == pytest.approx(
                -0.5 * (g.value / 5.0) ** 2 - math.log(5.0) - 0.5 * math.log(2 * math.pi))
    assert jumps >= 1  # seed 7 exercises the jump branch
    for a, node in c.items():
        if a.endswith(f"random@L{L_FLIP}#0"):
            assert node.metadata["distribution"] == "uniform" and node.metadata["logpdf"] == 0.0
    assert pm.log_joint(rec) == pytest.approx(math.fsum(n.metadata["logpdf"] for n in c.values()))


def test_log_density_formulas():
    assert pm.normal_logpdf(1.3, 0.5, 2.0) == pytest.approx(
        math.log(math.exp(-0.5 * ((1.3 - 0.5) / 2.0) ** 2) / (2.0 * math.sqrt(2 * math.pi))))
    assert pm.uniform_logpdf(0.3, 2.0, 0.0) == pytest.approx(-math.log(2.0))
    assert pm.uniform_logpdf(3.0, 0.0, 2.0) == -math.inf
    assert pm.exponential_logpdf(0.7, 1.5) == pytest.approx(math.log(1.5 * math.exp(-1.5 * 0.7)))
    assert pm.binomial_logpmf(2, 5, 0.3) == pytest.approx(math.log(10 * 0.3 ** 2 * 0.7 ** 3))
    assert pm.uniform_choice_logpmf("b", "abcd") == pytest.approx(math.log(0.25))
    assert pm.uniform_integer_logpmf(4, 1, 6) == pytest.approx(math.log(1 / 6))


def draws_model(r, g):
    a = r.uniform(1.0, 3.0)
    b = random.gauss(0.0, 2.0)          # the random module's hidden instance: a bound method
    sample = g.normal                   # a bound method value, called later
    c = sample(a, 0.5)
    d = g.standard_normal()
    e = r.expovariate(4.0) + g.uniform(low=-1.0, high=1.0) + r.randint(1, 6)
    return a + b + c + d + e


def test_draw_recognition_and_parameters():
    random.seed(3)
    ctx = pm.ChoiceRecorder()
    root = tracer.track(draws_model, random.Random(3), np.random.default_rng(3), ctx=ctx)
    tracer.validate(root)
    names = sorted(a.rsplit("@", 1)[0] for a in ctx.choices)
    assert names == sorted(["uniform", "gauss", "normal", "standard_normal", "expovariate",
                            "uniform", "randint"])
    line_e = line_of(draws_model, "r.expovariate")
    np_uniform = ctx.choices[f"uniform@L{line_e}#0"]
    assert np_uniform.metadata["params"] == {"low": -1.0, "high": 1.0, "size": None}
    assert np_uniform.metadata["logpdf"] == pytest.approx(-math.log(2.0))
    randint = ctx.choices[f"randint@L{line_e}#0"]
    assert randint.metadata["params"] == {"a": 1, "b": 6} and 1 <= randint.value <= 6
    expo = ctx.choices[f"expovariate@L{line_e}#0"]
    assert expo.metadata["logpdf"] == pytest.approx(math.log(4.0) - 4.0 * expo.value)
    hidden = ctx.choices[f"gauss@L{line_of(draws_model, 'random.gauss')}#0"]
    assert hidden.metadata["params"] == {"mu": 0.0, "sigma": 2.0}
    uni = ctx.choices[f"uniform@L{line_of(draws_model, 'r.uniform')}#0"]
    assert uni.metadata["distribution"] == "uniform"
    assert uni.metadata["params"] == {"a": 1.0, "b": 3.0}
    assert uni.metadata["logpdf"] == pytest.approx(-math.log(2.0))
    bound = ctx.choices[f"normal@L{line_of(draws_model, 'c = sample')}#0"]
    assert isinstance(bound.function, tracer.views.Node)  # the bound method value is a node
    assert bound.metadata["params"] == {"loc": uni.value, "scale": 0.5, "size": None}
    z = (bound.value - uni.value) / 0.5
    assert bound.metadata["logpdf"] == pytest.approx(-0.5 * z * z - math.log(0.5) - 0.5 * math.log(2 * math.pi))
    std = ctx.choices[f"standard_normal@L{line_of(draws_model, 'standard_normal')}#0"]
    assert std.metadata["logpdf"] == pytest.approx(-0.5 * std.value ** 2 - 0.5 * math.log(2 * math.pi))
    assert root.value == pytest.approx(math.fsum(n.value for n in ctx.choices.values()))


def test_replay_with_all_choices_reproduces_the_trace():
    root, rec = run(7)
    # Other seeds: every draw comes out different and is overridden by the replay.
    replay, rrec = run(1007, constraints=pm.choice_map(rec))
    assert replay.value == root.value
    a, b = list(walk(root)), list(walk(replay))
    assert len(a) == len(b)
    for (da, x), (db, y) in zip(a, b):
        assert da == db and x.kind == y.kind and type(x) is type(y)
        assert x.location == y.location
        assert same_value(x.value, y.value), (x, y)
    assert pm.choice_map(rrec) == pm.choice_map(rec)
    assert list(rrec.choices) == list(rec.choices)
    for address, node in rrec.choices.items():
        assert "original" in node.metadata
        assert node.metadata["logpdf"] == rec.choices[address].metadata["logpdf"]
    assert any(n.metadata["original"] != n.value for n in rrec.choices.values())
    assert pm.log_joint(rrec) == pm.log_joint(rec)


def changed_nodes(root, forced_root):
    a, b = list(walk(root)), list(walk(forced_root))
    assert len(a) == len(b)
    changed = []
    for (da, x), (db, y) in zip(a, b):
        assert da == db and x.kind == y.kind and x.location == y.location  # same control flow
        if not same_value(x.value, y.value):
            changed.append(y)
    return changed


@pytest.mark.parametrize("seed, address, value", [
    (7, DRIFT, 2.5), (7, NOISE, 0.05), (3, DRIFT, -4.0), (12, NOISE, 3.0),
])
def test_forcing_a_choice_changes_exactly_its_dependents(seed, address, value):
    # Nothing branches on drift or noise: forcing them keeps the control flow.
    root, rec = run(seed)
    forced, frec = run(seed, constraints={address: value})
    assert list(frec.choices) == list(rec.choices)
    node = frec.choices[address]
    assert node.value == value and node.metadata["original"] == rec.choices[address].value
    deps = pm.dependents_of_choice(forced, address)
    dep_rows = {n.row for n in deps}
    assert node.row not in dep_rows
    changed = changed_nodes(root, forced)
    changed_rows = {n.row for n in changed}
    assert node.row in changed_rows
    assert changed_rows <= dep_rows | {node.row}
    # Every value-carrying dependent did change here (a jump or a compare could not).
    assert {n.row for n in deps if n.kind != "jump"} <= changed_rows
    # The flow crosses calls: into every segment's parameter, out through its return.
    segs = [n for n in forced.children if isinstance(n, NestedCallNode) and n.function.value is pm.segment]
    param = {"normal": "drift", "exponential": "noise"}[address.split("@")[0]]
    for seg in segs:
        assert seg.row in dep_rows
        arg = next(a for a in seg.children if isinstance(a, ArgumentNode) and a.position >= 1
                   and a.code.co_varnames[a.position - 1] == param)
        assert arg.row in dep_rows
        ret = seg.children[-1]
        assert isinstance(ret, ReturnNode) and ret.row in dep_rows
    assert forced.row in dep_rows and forced.value != root.value
    # The geometric recursion does not read the choice.
    nseg = next(n for n in forced.children if isinstance(n, NestedCallNode))
    assert nseg.function.value is pm.n_segments
    assert not any(n.row in dep_rows for _, n in walk(nseg))
    # Choices that do not depend on it keep their values.
    for a, n in frec.choices.items():
        if n.row not in dep_rows and a != address:
            assert n.value == rec.choices[a].value


def test_forcing_a_branching_choice():
    # Forcing the first coin flip to succeed stops the recursion: control flow
    # changes.  The traces agree up to the forced draw; the first difference
    # after it is a dependent (the comparison with p_stop).
    root, rec = run(7)
    first_flip = f"n_segments#0/random@L{L_FLIP}#0"
    assert rec.choices[first_flip].value >= 0.3
    assert sum(1 for a in rec.choices if a.endswith(f"random@L{L_FLIP}#0")) > 1
    forced, frec = run(7, constraints={first_flip: 0.0})
    a, b = list(walk(root)), list(walk(forced))
    forced_node = frec.choices[first_flip]
    k = next(i for i, (_, n) in enumerate(b) if n == forced_node)
    deps = pm.dependents_of_choice(forced, first_flip)
    # Data dependents only: `r.random() < p_stop` and the branch on it.  What the
    # branch selects (`return 1`) does not read the draw: control dependence is
    # not followed, so the enclosing calls are not among the dependents although
    # their values change.
    assert [n.kind for n in deps] == ["primitive", "jump"]
    assert all(n.parent == forced_node.parent for n in deps)
    deps = {n.row for n in deps}
    ancestors = {forced.row, forced_node.parent.row}
    assert not ancestors & deps
    for (_, x), (_, y) in zip(a[:k], b[:k]):
        assert x.kind == y.kind and x.location == y.location
        assert same_value(x.value, y.value) or y.row in ancestors
    first_diff = next(y for (_, x), (_, y) in zip(a[k + 1:], b[k + 1:])
                      if x.kind != y.kind or x.location != y.location or not same_value(x.value, y.value))
    assert first_diff.row in deps and first_diff.kind == "primitive" and first_diff.value is True
    assert [addr for addr in frec.choices if addr.endswith(f"random@L{L_FLIP}#0")] == [first_flip]
    assert sum(1 for addr in frec.choices if addr.startswith("segment#")) >= 3
    # numpy draws come from their own generator: drift and noise are unchanged.
    assert frec.choices[DRIFT].value == rec.choices[DRIFT].value
    assert frec.choices[NOISE].value == rec.choices[NOISE].value


def scaled(v, *, factor=2.0):
    return v * factor


def pair(a, b, *rest):
    return a - b + len(rest)


def keyword_model(g):
    u = g.normal(0.0, 1.0)
    c = g.normal(0.0, 1.0)
    s = scaled(1.0, factor=u)
    t = pair(b=c, a=3.0)
    w = pair(1.0, 2.0, u)
    return s + t + w


def test_dependents_follow_keywords_and_star_parameters():
    ctx = pm.ChoiceRecorder()
    root = tracer.track(keyword_model, np.random.default_rng(0), ctx=ctx)
    tracer.validate(root)
    u_addr, c_addr = list(ctx.choices)
    calls = [n for n in root.children if isinstance(n, NestedCallNode)]
    s_call, t_call, w_call = calls

    def params(call):
        return {a.code.co_varnames[a.position - 1]: a for a in call.children
                if isinstance(a, ArgumentNode) and a.position >= 1}

    u_deps = {n.row for n in pm.dependents_of_choice(root, u_addr)}
    assert params(s_call)["factor"].row in u_deps and params(s_call)["v"].row not in u_deps
    assert s_call.row in u_deps and t_call.row not in u_deps
    assert params(w_call)["rest"].row in u_deps
    assert params(w_call)["a"].row not in u_deps and params(w_call)["b"].row not in u_deps
    assert w_call.row in u_deps and root.row in u_deps  # len(rest) flows out
    c_deps = {n.row for n in pm.dependents_of_choice(root, c_addr)}
    assert params(t_call)["b"].row in c_deps and params(t_call)["a"].row not in c_deps
    assert t_call.row in c_deps and s_call.row not in c_deps and w_call.row not in c_deps
    with pytest.raises(KeyError):
        pm.find_choice(root, "no/such@L1#0")


def test_probabilistic_main_runs(capsys):
    pm.main()
    out = capsys.readouterr().out
    assert "choices, log joint density" in out
    assert f"forcing {DRIFT} = 2.5" in out
    assert "replayed with all" in out
    assert f"segment#0/normal@L{L_STEP}#0" in out


# -- DepthLimitContext on geom ----------------------------------------------------------------


def _nested_depth(node):
    return 1 + max((_nested_depth(c) for c in node.children if isinstance(c, NestedCallNode)), default=0)


@pytest.mark.parametrize("seed", [2, 5, 8, 11])
@pytest.mark.parametrize("maxlevel", [2, 3, 4])
def test_depth_limit_on_geom(seed, maxlevel):
    expected = irx.geom(1, 0.5, random.Random(seed))
    root = tracer.track(irx.geom, 1, 0.5, random.Random(seed), ctx=tracer.context.DepthLimitContext(maxlevel))
    tracer.validate(root)
    assert root.value == expected
    # The traced body is level 2: nested calls are recorded down to maxlevel.
    assert _nested_depth(root) == min(expected, maxlevel - 1)
    if maxlevel == 2:
        assert not any(isinstance(n, NestedCallNode) for d, n in walk(root) if d >= 1)
        calls = [n for n in root.children if isinstance(n, PrimitiveCallNode)]
        assert all(len(n) == 0 for n in calls)
        if expected > 1:
            rec = [n for n in calls if n.function.value is irx.geom]
            assert len(rec) == 1 and rec[0].value == expected
