"""Choice and ChoiceTrace: the random choices of one run of a model."""

from __future__ import annotations

import math
from typing import Any, Iterator

from .kinds import INTERVENED, OBSERVED, REPLAYED, SAMPLED
from .samplers import UnknownSamplerError

__all__ = ["Choice", "ChoiceTrace", "SAMPLED", "REPLAYED", "OBSERVED", "INTERVENED"]



class Choice:
    """One random choice: `value`, `distribution` (scipy's name), `params` (the
    sampler's parameters by name), `logp` (log-density of `value`; None if the
    sampler's density is unknown), `node` (the trace node of the draw), `address`
    and `kind` (sampled, replayed, observed or intervened).

    `params` and `node` are made from the trace's columns when first read (a dict
    and a node view per choice were most of a choice's memory)."""

    __slots__ = ("address", "value", "distribution", "logp", "kind", "sampler",
                 "_params", "_node", "_draws", "_i")

    def __init__(self, address, value, distribution, params, logp, node, kind, sampler,
                 draws=None, i: int = -1):
        self.address = address
        self.value = value
        self.distribution = distribution
        self._params = params
        self.logp = logp
        self._node = node
        self.kind = kind
        self.sampler = sampler
        self._draws = draws       # scan.Draws and the index of this draw in it, to make
        self._i = i               # params and node from when they are None

    @property
    def params(self) -> dict:
        """The sampler's parameters by name."""
        p = self._params
        if p is None:
            p = self._params = self._draws.params(self._i)
        return p

    @property
    def node(self):
        """The trace node of the draw."""
        n = self._node
        if n is None:
            from .. import _core
            d = self._draws
            n = self._node = _core.node_view(d.trace, int(d.rows[self._i]))
        return n

    @property
    def scored(self) -> bool:
        """Whether the choice counts in the log joint (all but do's)."""
        return self.kind != INTERVENED

    def __repr__(self) -> str:
        params = ", ".join(f"{k}={_short(v)}" for k, v in self.params.items()
                           if v is not None and k not in ("out", "dtype"))
        logp = "None" if self.logp is None else f"{self.logp:.4f}"
        tag = "" if self.kind == SAMPLED else f" [{self.kind}]"
        return f"{self.address}: {self.distribution}({params}) = {_short(self.value)}  " \
               f"logp={logp}{tag}"


def _short(v, limit: int = 40) -> str:
    s = repr(v)
    return s if len(s) <= limit else s[:limit - 3] + "..."


class ChoiceTrace:
    """The record of one run of a probabilistic program.

    - `value`: what the model returned; `root`: its nested trace (tracer's nodes);
    - `choices`: address -> Choice, in the order the draws were made;
    - `log_joint`: the sum of the log-densities of the scored choices (sampled,
      replayed and observed; not do-interventions);
    - `model`, `args`, `kwargs`: the call, for replay and update;
    - `unknown`: how many choices have no known density (traced with
      unknown="record"); `log_joint` refuses then.
    """

    def __init__(self, model, args: tuple, kwargs: dict, root, draws, kinds=None):
        self.model = model
        self.args = args
        self.kwargs = kwargs
        self._root = root
        self.value = root.value
        self._draws_ = draws         # scan.Draws: the choices as columns
        self._kinds = kinds          # kind per draw, None: all sampled
        self._choices: dict[str, Choice] | None = None
        self.unknown = sum(len(s.members) for s in draws.sites if s.problem)
        # incremental.State once an update asked for it (a str: why there is none)
        self._state = None
        # how update made this trace: "run", "incremental", or "rerun: <why not
        # incremental>"; update_stats: what the incremental path re-ran
        self.update_path = "run"
        self.update_stats: dict | None = None

    @classmethod
    def _derived(cls, model, args: tuple, kwargs: dict, state, replay) -> "ChoiceTrace":
        """A trace made by an incremental update: values, log-densities and the
        model's value from `state` (incremental.State); the nested trace and the
        Choice objects from `replay(self)` (a run of the model with every choice
        fixed, by run.py), when first asked."""
        self = cls.__new__(cls)
        self._replay = replay
        self.model, self.args, self.kwargs = model, args, kwargs
        self._root = None
        self._draws_ = None
        self.value = state.value
        self._kinds = state.kinds
        self._choices = None
        self.unknown = 0
        self._state = state
        self.update_path = "incremental"
        self.update_stats = None
        return self

    @property
    def root(self):
        """The nested trace of the run (of a replay of it, for a trace made by an
        incremental update: made when first asked)."""
        if self._root is None:
            self._materialize()
        return self._root

    @property
    def _draws(self):
        if self._draws_ is None:
            self._materialize()
        return self._draws_

    def _materialize(self) -> None:
        """Replay this incrementally updated trace: its nested trace and columns."""
        again = self._replay(self)
        if again._draws.addresses != self._state.lineage.addresses:
            raise RuntimeError("the replay of an incrementally updated trace made other "
                               "choices: the model does not depend on its choices alone")
        self._root, self._draws_ = again._root, again._draws_
        self._kinds = again._kinds

    @property
    def _fast(self):
        """The incremental State when this trace was made by one (its values are
        read there without a replay), else None."""
        st = self._state
        return st if self._root is None and st is not None and not isinstance(st, str) \
            else None

    @property
    def choices(self) -> dict[str, "Choice"]:
        """address -> Choice, in draw order (made when first read)."""
        if self._choices is None:
            self._choices = self._make_choices()
        return self._choices

    def _make_choices(self) -> dict[str, "Choice"]:
        d = self._draws
        n = len(d)
        dists: list = [None] * n
        for s in d.sites:                  # a site at a time
            members = s.members.tolist()
            if members:
                name = d.distribution(members[0])
                for i in members:
                    dists[i] = name
        kinds = self._kinds or [SAMPLED] * n
        logp = d.logp.tolist()
        unknown = {id(s) for s in d.sites if s.problem}
        sites = d.sites
        out: dict[str, Choice] = {}
        for i, (a, kind, sid) in enumerate(zip(d.addresses, kinds, d.site_of.tolist())):
            if a in out:   # counted addresses cannot repeat; say so if they do
                raise RuntimeError(f"two draws at address {a}")
            s = sites[sid]
            out[a] = Choice(a, d.values[i], dists[i], None,
                            None if id(s) in unknown else logp[i], None, kind, s.sampler, d, i)
        return out

    # -- the choice map ------------------------------------------------------------------
    def __getitem__(self, address: str) -> Any:
        """The value of the choice at `address`."""
        st = self._state
        if st is not None and not isinstance(st, str) and self._choices is None:
            i = st.lineage.index.get(address)
            if i is None:
                raise KeyError(address)
            return st.values[i]
        return self.choices[address].value

    def __contains__(self, address: str) -> bool:
        st = self._fast
        if st is not None:
            return address in st.lineage.index
        return address in self.choices

    def __iter__(self) -> Iterator[str]:
        st = self._fast
        if st is not None:
            return iter(st.lineage.addresses)
        return iter(self.choices)

    def __len__(self) -> int:
        st = self._fast
        if st is not None:
            return len(st.values)
        return len(self._draws)

    def values(self) -> dict[str, Any]:
        """address -> value of every choice (a choice map)."""
        st = self._state
        if st is not None and not isinstance(st, str):
            return dict(zip(st.lineage.addresses, st.values))
        return {a: c.value for a, c in self.choices.items()}

    def addresses(self, kind: str | None = None) -> list[str]:
        """The addresses of the choices (of one kind, if given), in draw order."""
        return [a for a, c in self.choices.items() if kind is None or c.kind == kind]

    @property
    def observed(self) -> dict[str, Any]:
        """address -> value of the observations (condition)."""
        return {a: c.value for a, c in self.choices.items() if c.kind == OBSERVED}

    @property
    def intervened(self) -> dict[str, Any]:
        """address -> value of the do-interventions."""
        return {a: c.value for a, c in self.choices.items() if c.kind == INTERVENED}

    @property
    def log_joint(self) -> float:
        """log p(choices, observations) of this run: the scored choices' logp summed."""
        if self.unknown:
            bad = [a for a, c in self.choices.items() if c.logp is None]
            raise UnknownSamplerError(f"{self.unknown} choice(s) have no known density "
                                      f"(logp is None): {', '.join(bad)[:200]}")
        st = self._state
        logp = st.logp if st is not None and not isinstance(st, str) else self._draws.logp
        if self._kinds is None:
            return math.fsum(logp.tolist())
        return math.fsum(lp for lp, k in zip(logp.tolist(), self._kinds) if k != INTERVENED)

    @property
    def log_likelihood(self) -> float:
        """The observations' logp summed."""
        if self._kinds is None:
            return 0.0
        st = self._state
        logp = st.logp if st is not None and not isinstance(st, str) else self._draws.logp
        return math.fsum(lp for lp, k in zip(logp.tolist(), self._kinds) if k == OBSERVED)

    # -- looking at it --------------------------------------------------------------------
    def relations(self, transitive: bool = False) -> dict:
        """Upstream choices: {"choices": {address: [parent addresses]}, "value":
        [addresses the model's value is computed from]}, following data flow across
        calls and through in-place changes (lists, dicts, attributes); a choice's
        parents are the choices whose values reach its parameters without passing
        through another choice (Pyro's model relations).  `transitive=True`: every
        upstream choice.  One pass over the trace (tracer.ppl.relations)."""
        from .relations import relations
        return relations(self, transitive)

    def render(self, path, *, format: str | None = None) -> str:
        """Draw the choices, grouped by call, with their relations, to `path` with
        Graphviz (observed choices shaded); see tracer.ppl.render."""
        from .render import render
        return render(self, path, format=format)

    def to_dot(self) -> str:
        """DOT text of `render()`'s graph."""
        from .render import to_dot
        return to_dot(self)

    def diff(self, other: "ChoiceTrace"):
        """Choice-level comparison with `other` (see tracer.ppl.diff)."""
        from .compare import diff
        return diff(self, other)

    def __repr__(self) -> str:
        try:
            lj = f"{self.log_joint:.4f}"
        except UnknownSamplerError:
            lj = "unknown"
        name = getattr(self.model, "__qualname__", repr(self.model))
        return f"<ChoiceTrace of {name}: {len(self.choices)} choices, log_joint {lj}>"

    def show(self, limit: int | None = None) -> str:
        """One line per choice (the first `limit`)."""
        items = list(self.choices.values())[:limit]
        return "\n".join(repr(c) for c in items)
