"""Running a model: trace it, or run it with choices fixed (replay, condition, do,
update)."""

from __future__ import annotations

import math

from ..api import track
from ._hooks import OutOfDraws, SequenceContext, fixing_context, plain_context
from .address import canonical
from .choices import ChoiceTrace
from .kinds import INTERVENED, OBSERVED, REPLAYED, SAMPLED
from .densities import score_draws
from .incremental import incremental_update
from .scan import copy_scores, same_shape, scan
from .snapshots import Snapshots

FixingContext = fixing_context   # (a name tests count the fixing runs by)

__all__ = ["trace", "replay", "condition", "do", "update", "UNKNOWN_POLICIES"]

UNKNOWN_POLICIES = ("error", "record")


def _check_unknown(unknown: str) -> None:
    if unknown not in UNKNOWN_POLICIES:
        raise ValueError(f"unknown must be one of {UNKNOWN_POLICIES}, got {unknown!r}")


def _run(model, args: tuple, kwargs: dict, fixed: dict | None, unknown: str,
         exact: bool = False) -> ChoiceTrace:
    """Trace `model(*args, **kwargs)`; `fixed`: address -> (value, kind); `exact`:
    every fixed address must be reached (replay)."""
    _check_unknown(unknown)
    if not callable(model):
        raise TypeError(f"tracer.ppl runs a callable model, got {type(model).__name__}")
    snaps = Snapshots()
    fixing = FixingContext(fixed, snaps) if fixed else None
    root = track(model, *args, ctx=fixing or plain_context(snaps), **kwargs)
    draws = scan(root, unknown, snaps=snaps)
    kinds = None
    if fixing is not None:
        missing = [a for a in fixed if a not in fixing.hits]
        lost = [a for a in missing if exact or fixed[a][1] != REPLAYED]
        if lost:
            raise ValueError(f"no draw was made at {len(lost)} address(es) given to "
                             f"replay/condition/do/update: {', '.join(lost[:5])}; the "
                             f"addresses of "
                             f"this model's draws are tracer.ppl.trace(model, ...).choices")
        kinds = fixing.kinds(draws)
    score_draws(draws)
    return ChoiceTrace(model, args, kwargs, root, draws, kinds)


def trace(model, /, *args, unknown: str = "error", **kwargs) -> ChoiceTrace:
    """Run `model(*args, **kwargs)` once and record its random choices.

    Every call of a known sampler (random.Random's and numpy's sampling methods, the
    `random` and `numpy.random` functions, functions declared with
    `@tracer.ppl.sampler`) is a choice, named by its address (see
    tracer.ppl.address).  A draw from a random generator's method with no known
    density raises UnknownSamplerError; with `unknown="record"` it is kept with
    `logp=None` (counted in `ChoiceTrace.unknown`).
    """
    return _run(model, args, kwargs, None, unknown)


def _fix(values: dict, kind: str) -> dict:
    return {canonical(a): (v, kind) for a, v in values.items()}


def replay(choice_trace: ChoiceTrace, /, *args, unknown: str = "error", **kwargs) -> ChoiceTrace:
    """Run the model of `choice_trace` again with every choice fixed to its value
    (by address): the same run, whatever the generators' state (ValueError if the
    run does not reach every address, e.g. on other arguments).  Observations stay
    observations and do-interventions stay interventions.  With arguments, the
    model runs on them instead of the recorded ones.
    """
    run_args = args if args or kwargs else choice_trace.args
    run_kwargs = kwargs if args or kwargs else choice_trace.kwargs
    got = _in_sequence(choice_trace, run_args, run_kwargs, unknown)
    if got is not None:
        return got
    return _run(choice_trace.model, run_args, run_kwargs, _kept(choice_trace), unknown,
                exact=True)


def _replay_exactly(choice_trace: ChoiceTrace) -> ChoiceTrace:
    """A run of `choice_trace`'s model with every choice fixed: by position, else by
    address (for the nested trace and Choices of an incrementally updated trace)."""
    args, kwargs = choice_trace.args, choice_trace.kwargs
    got = _in_sequence(choice_trace, args, kwargs, "error")
    if got is not None:
        return got
    return _run(choice_trace.model, args, kwargs, _kept(choice_trace), "error", exact=True)


def _in_sequence(choice_trace, args, kwargs, unknown: str):
    """Replay by position (_hooks.SequenceContext): the k-th draw gets the k-th
    value; the finished run's addresses must be the replayed ones, in order.  None
    when they are not (or a draw shuffles in place, which needs its list): then
    the run is made again with the draws fixed by address (_kept)."""
    _check_unknown(unknown)
    if any(_shuffles(choice_trace)):
        return None
    addresses, values, kinds = _sequence(choice_trace)
    snaps = Snapshots()
    ctx = SequenceContext(values, snaps)
    try:
        root = track(choice_trace.model, *args, ctx=ctx, **kwargs)
    except OutOfDraws:
        return None
    if ctx.count != len(values):
        return None
    draws = scan(root, unknown, dispatched=True, snaps=snaps)
    shape = same_shape(choice_trace._draws_, draws)
    if not shape and draws.addresses != addresses:
        return None
    if not (shape and copy_scores(choice_trace._draws_, draws)):
        score_draws(draws)
    return ChoiceTrace(choice_trace.model, args, kwargs, root, draws, kinds)


def _shuffles(choice_trace):
    st = choice_trace._fast
    if st is not None:
        sites = st.lineage.sites
    else:
        sites = choice_trace._draws.sites
    return (s.sampler.shuffles >= 0 for s in sites if len(s.members))


def _sequence(choice_trace: ChoiceTrace) -> tuple[list, list, list]:
    """(addresses, values, kinds) of `choice_trace`'s choices in draw order, the
    kinds as _kept gives them, read off its columns (no Choice and no dict made)."""
    kept = (OBSERVED, INTERVENED)
    st = choice_trace._fast
    if st is not None:
        addresses, values, kinds = list(st.lineage.addresses), list(st.values), st.kinds
    else:
        draws = choice_trace._draws
        addresses, values, kinds = list(draws.addresses), list(draws.values), \
            choice_trace._kinds
    if kinds is None:
        return addresses, values, [REPLAYED] * len(values)
    return addresses, values, [k if k in kept else REPLAYED for k in kinds]


def _kept(choice_trace: ChoiceTrace) -> dict:
    """Every choice of `choice_trace` fixed: observations and interventions stay so,
    the rest are replayed."""
    kept = (OBSERVED, INTERVENED)
    st = choice_trace._fast
    if st is not None:                    # made by an incremental update
        return {addr: (value, kind if kind in kept else REPLAYED)
                for addr, value, kind in zip(st.lineage.addresses, st.values, st.kinds)}
    if choice_trace._choices is None:     # from the columns: no Choice made for this
        draws = choice_trace._draws
        kinds = choice_trace._kinds or [SAMPLED] * len(draws)
        return {addr: (value, kind if kind in kept else REPLAYED)
                for addr, value, kind in zip(draws.addresses, draws.values, kinds)}
    return {addr: (c.value, c.kind if c.kind in kept else REPLAYED)
            for addr, c in choice_trace.choices.items()}


def condition(model, observations: dict, /, *args, unknown: str = "error",
              **kwargs) -> ChoiceTrace:
    """Run `model(*args, **kwargs)` with the draws at the addresses of
    `observations` fixed to their values and scored as observations: their logp
    is in `log_joint` (and `log_likelihood`).  Other draws are sampled."""
    return _run(model, args, kwargs, _fix(observations, OBSERVED), unknown)


def do(model, interventions: dict, /, *args, unknown: str = "error", **kwargs) -> ChoiceTrace:
    """Run `model(*args, **kwargs)` with the draws at the addresses of
    `interventions` fixed to their values and not scored (Pearl's do: they are no
    longer random choices; their logp is recorded but left out of `log_joint`)."""
    return _run(model, args, kwargs, _fix(interventions, INTERVENED), unknown)


def update(choice_trace: ChoiceTrace, constraints: dict, args: tuple | None = None,
           kwargs: dict | None = None, *, unknown: str = "error",
           incremental: bool = True):
    """Gen's update: `(new_trace, weight, discard)`.

    The model runs again (on `args`/`kwargs`, or the recorded ones) with the choices
    at the addresses of `constraints` set to their values and every other choice
    of `choice_trace` kept by address.  Addresses the new run visits for the
    first time are sampled from their distribution.  `weight` is
    log p(new) - log p(old) - log q(new draws), q the density the new draws were
    sampled from: with no new addresses, the difference of the full log joints.
    `discard` maps the addresses whose old values were replaced or are no longer
    visited to those values.  Observations and do-interventions of the old trace
    stay so (a constraint at such an address changes its value).

    When control flow does not change, only what depends on the changed choices is
    re-executed, on the tape of the run (tracer.ppl.incremental; the first such update
    of a run builds its tape): dependent draws keep their values and are scored
    again.  Otherwise (a branch or loop goes another way, new arguments, a changed
    value reaching a call that may have effects; `incremental=False`) the model
    re-runs with every other choice replayed.  `new_trace.update_path` says which
    ("incremental", or "rerun: <why>").  The nested trace (`root`) and the Choice
    objects of an incrementally updated trace come from a replay, made when first
    asked; its values, `log_joint` and `value` are there at once.
    """
    wanted = {canonical(addr): v for addr, v in constraints.items()}
    why = "incremental=False"
    if incremental:
        def derive(state):
            return ChoiceTrace._derived(choice_trace.model, choice_trace.args,
                                        choice_trace.kwargs, state, _replay_exactly)
        got = incremental_update(choice_trace, wanted, args, kwargs, derive)
        if not isinstance(got, str):
            return got
        why = got
    fixed = _kept(choice_trace)
    for addr, v in wanted.items():
        before = fixed.get(addr)
        fixed[addr] = (v, before[1] if before is not None else REPLAYED)
    run_args = choice_trace.args if args is None else tuple(args)
    run_kwargs = choice_trace.kwargs if kwargs is None else dict(kwargs)
    new = _run(choice_trace.model, run_args, run_kwargs, fixed, unknown)
    missing = [addr for addr in wanted if addr not in new.choices]
    if missing:
        raise ValueError(f"update: the new run made no draw at {', '.join(missing[:5])}")
    old = choice_trace.values()
    fresh = [c for addr, c in new.choices.items() if addr not in old and addr not in wanted]
    discard = {addr: v for addr, v in old.items() if addr not in new.choices or addr in wanted}
    weight = new.log_joint - choice_trace.log_joint - math.fsum(
        c.logp for c in fresh if c.scored)
    new.update_path = f"rerun: {why}"
    return new, weight, discard
