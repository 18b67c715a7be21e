"""The plan variant with events before calls only (PLAN_INTERVENE_CALLS): chosen for
contexts whose substitute=/override= filters name callables and no operator, it
must intervene exactly as PLAN_INTERVENE does on every call, and contexts that may
intervene on operators must still get PLAN_INTERVENE.  Contexts whose filters only
override (no substitute) get PLAN_EXACT plans (no event before a call) and must
intervene as PLAN_INTERVENE does too."""

import math
import operator
import random
import re

import pytest

import tracer
from tracer import _core
from tracer.analysis.plan import PLAN_INTERVENE, PLAN_INTERVENE_CALLS, R_CALL, R_CALL_EX
from tracer.context import KEEP, Context
from tracer.views.validate import validate

from plan_compare import compare_builders

CALLS, ALL = int(PLAN_INTERVENE_CALLS), int(PLAN_INTERVENE)


# -- which plan a context gets ------------------------------------------------------------
def _random_draw(*args):
    return 0.25


class SubstituteMethod(Context):
    def substitute(self, f, /, *args, **kwargs):
        return None


class OverrideMethod(Context):
    def override(self, node):
        return KEEP


@pytest.mark.parametrize("ctx, mode", [
    (Context(), _core.PlanMode.PLAN_PLAIN),
    (Context(on_call={random.gauss: print}), _core.PlanMode.PLAN_PLAIN),
    (Context(snapshot="copy"), _core.PlanMode.PLAN_EXACT),
    (Context(substitute={random.gauss: _random_draw}), CALLS),
    # an override replaces a value at the event after its call: exact plans do
    (Context(override={"random.Random.random": lambda node: KEEP}), _core.PlanMode.PLAN_EXACT),
    (Context(substitute={random.Random(0).random: _random_draw}), CALLS),  # builtin method
    (Context(substitute={abs: abs, "math.sqrt": math.sqrt}, snapshot="copy"), CALLS),
    (Context(substitute={operator.mul: operator.mul}), ALL),   # the function of `*`
    (Context(override={"operator.getitem": lambda node: KEEP}), ALL),   # of x[i]
    (Context(substitute={random.gauss: _random_draw, operator.add: operator.add}), ALL),
    (Context(on_call={operator.mul: print}, substitute={abs: abs}), CALLS),  # only on_call
    (SubstituteMethod(), ALL),
    (OverrideMethod(substitute={abs: abs}), ALL),
])
def test_plan_mode_by_context(ctx, mode):
    assert _core.plan_mode_for(ctx) == mode


def test_slices_and_not_in_are_operators():
    # `x not in y` and `x[a:b]` record tracer.callables functions: naming one may
    # replace an operator.
    from tracer import callables

    assert _core.plan_mode_for(Context(substitute={callables.not_contains: abs})) == ALL
    assert _core.plan_mode_for(Context(override={callables.getslice: abs})) == ALL
    assert Context(substitute={abs: abs}).call_filter.operators is False
    assert Context(substitute={operator.neg: abs}).call_filter.operators is True


# -- the plan itself ------------------------------------------------------------------------
def mixed(xs, k):
    total = 0
    for x in xs:
        total += abs(x) * k - len(str(x))
        if x % 3 == 0:
            total = max(total, 1) + (x if x > 1 else -x)
    ys = [x ** 2 for x in xs if x not in (4, 5)]
    return total, sorted(ys, key=lambda v: -v)[1:3], f(*xs[:2], **{})


def f(*a, **k):
    return len(a) + len(k)


def _record_offsets(plan, sems):
    out = set()
    for off, rec in plan.rec_at.items():
        if rec.sem in sems:
            out.add(off)
    return out


def test_events_before_calls_only():
    code = mixed.__code__
    calls_plan = compare_builders(code, CALLS)     # the fast and the reference builder agree
    all_plan = compare_builders(code, ALL)
    calls = _record_offsets(all_plan, (R_CALL, R_CALL_EX))
    assert calls and calls <= calls_plan.events
    # Every event of the calls-only plan is one of PLAN_INTERVENE's, and the operators
    # (BINARY_OP, COMPARE_OP, ...) lose the events before them.
    assert calls_plan.events < all_plan.events
    assert all_plan.events - calls_plan.events - calls
    assert _core.plan_of(code, CALLS).mode == CALLS


@pytest.mark.parametrize("fn", [mixed, f, validate, tracer.track, random.Random.gauss,
                                random.Random.shuffle, random.Random.choices])
def test_builders_agree(fn):
    code = getattr(fn, "__code__", None)
    if code is None:
        pytest.skip(f"{fn!r} has no Python code")
    compare_builders(code, CALLS)


def test_plan_of_rejects_unknown_modes():
    with pytest.raises(ValueError, match="PlanMode"):
        _core.plan_of(mixed.__code__, 4)


# -- the same interventions under both plans -----------------------------------------------
class Box:
    def __init__(self, v):
        self.v = v

    def scaled(self, k):
        return self.v * k


def helper(x):
    return x + 1


def gen(n):
    for i in range(n):
        yield helper(i) * 2


def program(n):
    rng = random.Random(1)
    out = []
    b = Box(3)
    for i in range(n):
        out.append(rng.random() + helper(i) * 2)       # builtin method, nested call
        out.append(b.scaled(i) - abs(-i))              # method, builtin
    out.extend(map(helper, range(3)))                  # calls from C: not substituted
    out.append(sum(gen(3)))                            # a generator's calls
    out.append(sorted([3, 1, 2], key=helper)[0])
    out.append(len([helper(j) for j in range(2)]))
    try:
        out.append(helper("x"))
    except TypeError as e:
        out.append(type(e).__name__)
    return out


def _substitutes():
    return {random.Random.random: lambda self: 0.5, helper: lambda x: 100,
            Box.scaled: lambda self, k: -k, abs: lambda v: 7}


def _overrides():
    return {helper: lambda node: node.value * 10 if isinstance(node.value, int) else KEEP,
            "random.Random.random": lambda node: 0.125}


def _forced_full(**filters):
    # The same filters plus one on an operator's function that never changes anything
    # (operator.matmul: no `@` runs), which needs PLAN_INTERVENE.
    subst = dict(filters.pop("substitute", {}))
    subst[operator.matmul] = operator.matmul
    return Context(substitute=subst, **filters)


def _text(v) -> str:
    # (objects made by each run differ only in their addresses)
    return re.sub(r" at 0x[0-9a-f]+", "", repr(v))


def _summary(root):
    t = root.trace
    md = {row: {k: (v if not callable(v) else getattr(v, "__name__", repr(v)))
                for k, v in m.items()} for row, m in t.metadata.items()}
    nodes = [(t.kind(r), t.parent(r), t.offset(r), _text(t.refs(r)), _text(t.value(r)))
             for r in range(len(t))]
    return root.value, nodes, md


@pytest.mark.parametrize("filters, mode", [
    (dict(substitute=_substitutes()), CALLS),
    (dict(override=_overrides()), int(_core.PlanMode.PLAN_EXACT)),
    (dict(substitute={abs: lambda v: 7}, override=_overrides()), CALLS),
], ids=["substitute", "override", "both"])
def test_same_interventions_as_the_full_plan(filters, mode):
    ctx = Context(**filters)
    assert _core.plan_mode_for(ctx) == mode
    full = _forced_full(**dict(filters))
    assert _core.plan_mode_for(full) == ALL
    a = tracer.track(program, 4, ctx=ctx)
    b = tracer.track(program, 4, ctx=full)
    validate(a)
    validate(b)
    assert _summary(a) == _summary(b)
    assert a.value != program(4)    # something was replaced


def test_substitutes_replace_every_matching_call():
    ctx = Context(substitute=_substitutes())
    root = tracer.track(program, 3, ctx=ctx)
    validate(root)
    out = root.value
    # per round: 0.5 + 100 * 2, then -i - 7
    assert out[:6] == [200.5, -7, 200.5, -8, 200.5, -9]
    assert out[6:9] == [1, 2, 3]              # map(helper, ...) calls helper from C
    assert out[9] == sum(100 * 2 for _ in range(3))   # the generator's helper calls
    assert out[10] == 1                       # sorted (its key is called from C)
    assert out[11] == 2
    assert out[12] == 100                     # helper("x") substituted: no TypeError
    substituted = [md["substituted"] for md in root.trace.metadata.values()
                   if "substituted" in md]
    assert substituted.count(helper) == 3 + 3 + 2 + 1
    assert substituted.count(abs) == 3


def test_an_exception_from_a_substitute_propagates_as_untraced():
    def boom(x):
        raise KeyError(x)

    def prog():
        try:
            return helper(2)
        except KeyError as e:
            return ("caught", e.args)

    for ctx in (Context(substitute={helper: boom}), _forced_full(substitute={helper: boom})):
        root = tracer.track(prog, ctx=ctx)
        validate(root)
        assert root.value == ("caught", (2,))


def test_operator_substitutes_still_apply():
    def prog(a, b):
        return a * b + abs(a)

    ctx = Context(substitute={operator.mul: lambda a, b: 1000})
    assert _core.plan_mode_for(ctx) == ALL
    root = tracer.track(prog, 3, 4, ctx=ctx)
    validate(root)
    assert root.value == 1003


def test_an_entered_operator_filter_needs_a_root_that_intervenes_on_operators():
    class Enter(Context):
        def enter(self, f, /, *args, **kwargs):
            return Context(substitute={operator.mul: operator.mul})

    def outer():
        return helper(2)

    root_ctx = Enter(substitute={abs: abs})
    assert _core.plan_mode_for(root_ctx) == CALLS
    with pytest.raises(tracer.TrackingError, match="operator"):
        tracer.track(outer, ctx=root_ctx)


def test_an_entered_callable_filter_runs_under_a_calls_root():
    class Enter(Context):
        def enter(self, f, /, *args, **kwargs):
            return Context(substitute={abs: lambda v: -1}) if f is inner else self

    def inner():
        return abs(-5)

    def outer():
        return inner() + abs(-2)

    root = tracer.track(outer, ctx=Enter(substitute={len: len}))
    validate(root)
    assert root.value == -1 + 2
