"""A probabilistic program traced with tracer: random choices, addresses, replay.

`model` is an ordinary Python function with stochastic control flow.  It draws
with Python's `random.Random` and with numpy's `numpy.random.Generator`: the number
of segments of a random walk is geometric (a recursion that stops on a coin flip),
and each segment picks a regime, a normal step and, rarely, an extra jump.

- `ChoiceRecorder` is a tracking context that makes the `random` and `numpy`
  modules primitive, so every draw is one PrimitiveCallNode.  For each draw it
  writes into the node's metadata an `address` that names the draw the same way
  in every run (the chain of enclosing calls, each numbered by how many calls of
  that function its caller had made before, then the draw site: method, line and
  how many draws that site had made in this call), the distribution, its
  parameters and the log-density of the value the program went on with.
- `ReplayContext` re-runs the model with the draws at given addresses forced to
  given values (`Context.override`); the rest of the program runs on natively.
- `dependents_of_choice(root, address)` lists the nodes whose values depend on a
  choice, following data flow into nested calls (through their parameters) and
  out of them (through their returns).

Run:  python examples/probabilistic_model.py
"""

from __future__ import annotations

import inspect
import math
import random

import numpy as np

import tracer
from tracer.context import KEEP

# -- the model --------------------------------------------------------------------------


def n_segments(r, p_stop):
    """1 + the number of failed coin flips before the first success (geometric)."""
    if r.random() < p_stop:
        return 1
    return 1 + n_segments(r, p_stop)


def segment(r, g, x, drift, noise):
    """One segment of the walk: a regime, a normal step and, rarely, a jump."""
    regime = r.choice(("calm", "storm"))
    scale = noise if regime == "calm" else 3.0 * noise
    step = g.normal(drift, scale)
    if g.binomial(1, 0.2) == 1:
        step = step + r.gauss(0.0, 5.0)
    return x + step


def model(r, g, p_stop=0.3):
    """A random walk with a random number of segments, a random drift and noise."""
    k = n_segments(r, p_stop)
    drift = g.normal(0.0, 1.0)
    noise = g.exponential(0.5)
    x = 0.0
    for _ in range(k):
        x = segment(r, g, x, drift, noise)
    return x


# -- log-densities ----------------------------------------------------------------------

_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)


def normal_logpdf(x, mu, sigma):
    if sigma <= 0:
        return math.nan
    z = (x - mu) / sigma
    return -0.5 * z * z - math.log(sigma) - _LOG_SQRT_2PI


def uniform_logpdf(x, a, b):
    lo, hi = min(a, b), max(a, b)
    if hi == lo:
        return math.inf if x == lo else -math.inf
    return 0.0 - math.log(hi - lo) if lo <= x <= hi else -math.inf  # 0.0 -: no -0.0


def exponential_logpdf(x, rate):
    if rate <= 0:
        return math.nan
    return math.log(rate) - rate * x if x >= 0 else -math.inf


def binomial_logpmf(k, n, p):
    if k != int(k) or not 0 <= k <= n:
        return -math.inf
    k, n = int(k), int(n)
    if p in (0.0, 1.0):
        return 0.0 if k == n * p else -math.inf
    return math.log(math.comb(n, k)) + k * math.log(p) + (n - k) * math.log1p(-p)


def uniform_choice_logpmf(x, seq):
    return -math.log(len(seq)) if x in seq else -math.inf


def uniform_integer_logpmf(x, a, b):
    return -math.log(b - a + 1) if a <= x <= b else -math.inf


_REQUIRED = object()   # a parameter without default


class Draw:
    """What a sampling method draws from: distribution name, parameters, density."""

    def __init__(self, distribution, params, logdensity):
        self.distribution = distribution
        self.params = params            # ((name, default), ...) after self; default _REQUIRED
        self.logdensity = logdensity    # logdensity(value, **params without size)

    def bind(self, args, kwargs) -> dict:
        """The method's parameters by name, defaults filled in."""
        if len(args) > len(self.params):
            raise TypeError(f"{self.distribution}: too many arguments")
        out = {name: value for (name, _), value in zip(self.params, args)}
        for name, default in self.params[len(args):]:
            if name in kwargs:
                out[name] = kwargs[name]
            elif default is _REQUIRED:
                raise TypeError(f"{self.distribution}: missing {name}")
            else:
                out[name] = default
        return out

    def logpdf(self, value, params: dict) -> float:
        p = {k: v for k, v in params.items() if k != "size"}
        if np.ndim(value) == 0:
            return float(self.logdensity(value, **p))
        # An array draw (size=...): independent draws, densities add up.  Array
        # parameters are not broadcast here.
        return float(sum(self.logdensity(v, **p) for v in np.asarray(value).ravel().tolist()))


# The sampling methods this example knows, keyed by the callable the recorder shows
# for `obj.method(...)`: the function (or method descriptor) of the class, with the
# random.Random / numpy Generator as argument 1.
DRAWS = {
    random.Random.random: Draw("uniform", (), lambda x: uniform_logpdf(x, 0.0, 1.0)),
    random.Random.uniform: Draw("uniform", (("a", _REQUIRED), ("b", _REQUIRED)), uniform_logpdf),
    random.Random.gauss: Draw("normal", (("mu", 0.0), ("sigma", 1.0)), normal_logpdf),
    random.Random.normalvariate: Draw("normal", (("mu", 0.0), ("sigma", 1.0)), normal_logpdf),
    random.Random.expovariate: Draw("exponential", (("lambd", 1.0),),
                                    lambda x, lambd: exponential_logpdf(x, lambd)),
    random.Random.choice: Draw("uniform_choice", (("seq", _REQUIRED),), uniform_choice_logpmf),
    random.Random.randint: Draw("uniform_integer", (("a", _REQUIRED), ("b", _REQUIRED)),
                                uniform_integer_logpmf),
    np.random.Generator.random: Draw("uniform", (("size", None), ("dtype", None), ("out", None)),
                                     lambda x, dtype=None, out=None: uniform_logpdf(x, 0.0, 1.0)),
    np.random.Generator.uniform: Draw("uniform", (("low", 0.0), ("high", 1.0), ("size", None)),
                                      lambda x, low, high: uniform_logpdf(x, low, high)),
    np.random.Generator.normal: Draw("normal", (("loc", 0.0), ("scale", 1.0), ("size", None)),
                                     lambda x, loc, scale: normal_logpdf(x, loc, scale)),
    np.random.Generator.standard_normal: Draw(
        "normal", (("size", None), ("dtype", None), ("out", None)),
        lambda x, dtype=None, out=None: normal_logpdf(x, 0.0, 1.0)),
    np.random.Generator.exponential: Draw(
        "exponential", (("scale", 1.0), ("size", None)),
        lambda x, scale: exponential_logpdf(x, 1.0 / scale) if scale > 0 else math.nan),
    np.random.Generator.binomial: Draw("binomial", (("n", _REQUIRED), ("p", _REQUIRED), ("size", None)),
                                       binomial_logpmf),
}


def _value(inp):
    """The value of a call input (a Node or a Const)."""
    return inp.value


def draw_of(node):
    """(method name, Draw, parameters) if `node` is a draw of a known sampler, else None.

    Handles `obj.method(...)` (recorded as the class's function with `obj` as
    argument 1) and calls of a bound method value (`random.gauss(...)`, or `m(...)`
    after `m = g.normal`).
    """
    fn = node.callee
    args = [_value(a) for a in node.arguments]
    try:
        draw = DRAWS.get(fn)
    except TypeError:  # an unhashable callable
        return None
    if draw is not None:
        if not args or not isinstance(args[0], (random.Random, np.random.Generator)):
            return None
        args = args[1:]
    else:
        owner = getattr(fn, "__self__", None)
        if not isinstance(owner, (random.Random, np.random.Generator)):
            return None
        draw = DRAWS.get(getattr(type(owner), getattr(fn, "__name__", ""), None))
        if draw is None:
            return None
    kwargs = {k: _value(v) for k, v in node.keywords.items()}
    try:
        params = draw.bind(args, kwargs)
    except TypeError:  # not a call this table describes
        return None
    return getattr(fn, "__name__", "draw"), draw, params


# -- recording choices ------------------------------------------------------------------


class ChoiceRecorder(tracer.Context):
    """Records every random draw as a choice with a stable address.

    One context object per activation: `enter` gives each nested call a child
    that knows the call's address prefix and counts the draws and calls made in
    it.  All of them share `choices`, a dict address -> PrimitiveCallNode.
    """

    def __init__(self):
        super().__init__(modules=["random", "numpy"])
        self.choices = {}                     # shared by all the activations' contexts
        self.prefix = None                    # None: not yet inside the traced call
        self._site_counts: dict = {}          # draw site -> draws made at it so far
        self._call_counts: dict = {}          # callee name -> calls made so far
        self._addresses: dict = {}            # row -> address, computed once per node

    # The child context of a nested call: same class, same shared state.
    def _child(self, prefix):
        child = type(self).__new__(type(self))
        child.__dict__.update(self.__dict__)
        child.prefix = prefix
        child._site_counts, child._call_counts, child._addresses = {}, {}, {}
        return child

    def enter(self, f, /, *args, **kwargs):
        if self.prefix is None:               # the traced call itself: addresses start here
            return self._child(())
        name = getattr(f, "__qualname__", None) or getattr(f, "__name__", None) or type(f).__name__
        k = self._call_counts.get(name, 0)
        self._call_counts[name] = k + 1
        return self._child(self.prefix + (f"{name}#{k}",))

    def address_of(self, node, method: str) -> str:
        """The address of the draw `node` of this activation (computed once per node)."""
        address = self._addresses.get(node.row)
        if address is None:
            loc = node.location
            site = (method, loc.line)
            k = self._site_counts.get(site, 0)
            self._site_counts[site] = k + 1
            address = "/".join((self.prefix or ()) + (f"{method}@L{loc.line}#{k}",))
            self._addresses[node.row] = address
        return address

    def trackedprimitive(self, node):
        found = None if node.raised else draw_of(node)
        if found is None:
            self._addresses.pop(node.row, None)
            return
        method, draw, params = found
        address = self.address_of(node, method)
        del self._addresses[node.row]
        md = node.metadata
        md["address"] = address
        md["distribution"] = draw.distribution
        md["params"] = params
        md["logpdf"] = draw.logpdf(node.value, params)
        self.choices[address] = node


class ReplayContext(ChoiceRecorder):
    """A ChoiceRecorder that forces the draws at the addresses of `constraints`.

    The forced draw still runs (so the random generators advance exactly as
    without replay); the value it returned is then replaced by the constraint's
    value and kept in `node.metadata["original"]`.
    """

    def __init__(self, constraints: dict):
        super().__init__()
        self.constraints = dict(constraints)

    def override(self, node):
        if node.kind != "primitive" or node.raised:
            return KEEP
        found = draw_of(node)
        if found is None:
            return KEEP
        address = self.address_of(node, found[0])   # reused by trackedprimitive
        if address in self.constraints:
            return self.constraints[address]
        return KEEP


def log_joint(recorder: ChoiceRecorder) -> float:
    """The sum of the log-densities of all recorded choices."""
    return math.fsum(n.metadata["logpdf"] for n in recorder.choices.values())


def run(seed: int, constraints: dict | None = None, p_stop: float = 0.3):
    """Trace `model` with generators seeded by `seed`; return (root, recorder)."""
    ctx = ChoiceRecorder() if constraints is None else ReplayContext(constraints)
    r = random.Random(seed)
    g = np.random.default_rng(seed)
    root = tracer.track(model, r, g, p_stop, ctx=ctx)
    return root, ctx


def choice_map(recorder: ChoiceRecorder) -> dict:
    """address -> value of every recorded choice, in the order they were drawn."""
    return {a: n.value for a, n in sorted(recorder.choices.items(), key=lambda kv: kv[1].row)}


# -- dependents of a choice -------------------------------------------------------------


def find_choice(root, address: str):
    """The draw node with metadata address `address` in the trace under `root`."""
    stack = [root]
    while stack:
        node = stack.pop()
        for child in node.children:
            if child.kind == "primitive" and child.metadata.get("address") == address:
                return child
            if child.kind == "nested":
                stack.append(child)
    raise KeyError(address)


def _parameter_nodes(call):
    """The ArgumentNodes (position >= 1) of a nested call's body, by parameter name."""
    params = {}
    for a in call.children:
        if a.kind == "argument" and a.position >= 1:
            params[a.code.co_varnames[a.position - 1]] = a
    return params


def _receiving_parameters(call, positions: set[int]) -> list:
    """The ArgumentNodes of `call`'s body bound from the inputs at `positions`
    (0 is the callee, 1, 2, ... the arguments in call order).

    Conservative where the binding cannot be read off the call: for `f(*a, **k)`,
    a dependent callee, or a callee whose signature is unavailable, every
    parameter counts as receiving.
    """
    params = _parameter_nodes(call)
    every = list(params.values())
    if 0 in positions or call.is_star_call:
        return every
    args, kwargs = call.arguments, call.keywords
    try:
        sig = inspect.signature(call.callee)
        bound = sig.bind(*range(1, len(args) + 1),
                         **{k: len(args) + 1 + i for i, k in enumerate(kwargs)})
    except (TypeError, ValueError):
        return every
    out = []
    for name, placeholder in bound.arguments.items():
        if isinstance(placeholder, tuple):      # *args
            hit = any(p in positions for p in placeholder)
        elif isinstance(placeholder, dict):     # **kwargs
            hit = any(p in positions for p in placeholder.values())
        else:
            hit = placeholder in positions
        if hit:
            if name not in params:
                return every
            out.append(params[name])
    return out


def dependents_of_choice(root, address: str) -> list:
    """Every node whose value depends on the choice at `address` (not the choice itself).

    Covers data flow: within a call (`Node.forward`), into nested calls (a
    dependent argument makes the parameter it binds, and what depends on that,
    dependent), and out of them (a dependent return makes the call node, and what
    depends on it in the caller, dependent), transitively, up to the root.

    Not covered: flow through mutation (storing a dependent value into an object
    that is later read through another reference: `xs.append(v)` makes the
    `append` node dependent but not later reads of `xs`), through exceptions,
    generator resumption, globals and closures; and control dependence (nodes
    that exist or not because a branch on a dependent value went one way).
    """
    choice = find_choice(root, address)
    dependent: dict[int, object] = {}          # row -> node

    def add(node):
        """Mark `node` and its forward closure in its own call; return the new ones."""
        new = []
        for n in [node] + node.forward():
            if n.row not in dependent:
                dependent[n.row] = n
                new.append(n)
        return new

    frontier = add(choice)
    # row of a nested call -> input positions already propagated into its body
    propagated: dict[int, set[int]] = {}
    while frontier:
        grown = []
        for n in frontier:
            if n.kind == "return":
                call = n.parent
                if call is not None and call.row not in dependent:
                    grown += add(call)
            # n is an input of the nested calls that read it
            for reader in n.dependents():
                if reader.kind != "nested":
                    continue
                positions = {p for p, inp in reader.referenced(numbered=True) if inp.row in dependent}
                done = propagated.setdefault(reader.row, set())
                fresh = positions - done
                if not fresh:
                    continue
                done |= fresh
                for param in _receiving_parameters(reader, fresh):
                    if param.row not in dependent:
                        grown += add(param)
        frontier = grown
    del dependent[choice.row]
    return [dependent[r] for r in sorted(dependent)]


# -- the demonstration ------------------------------------------------------------------


def _fmt_params(params: dict) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in params.items() if v is not None)


def print_choices(recorder: ChoiceRecorder) -> None:
    for address, node in sorted(recorder.choices.items(), key=lambda kv: kv[1].row):
        md = node.metadata
        forced = "  (forced)" if "original" in md else ""
        print(f"  {address:<42} {md['distribution']}({_fmt_params(md['params'])})"
              f" = {node.value!r}  logp={md['logpdf']:.4f}{forced}")


def main(seed: int = 7) -> None:
    root, rec = run(seed)
    tracer.validate(root)
    print(f"model(Random({seed}), default_rng({seed})) = {root.value!r}")
    print(f"{len(rec.choices)} choices, log joint density {log_joint(rec):.4f}:")
    print_choices(rec)

    # Replay with every recorded choice, under other seeds: the same run.
    same, _ = run(seed + 1000, constraints=choice_map(rec))
    tracer.validate(same)
    print(f"\nreplayed with all {len(rec.choices)} choices under another seed: {same.value!r}")

    # Force the drift; the control flow does not depend on it.
    address = next(a for a in rec.choices if a.startswith("normal@"))
    forced, frec = run(seed, constraints={address: 2.5})
    tracer.validate(forced)
    print(f"\nforcing {address} = 2.5 (was {rec.choices[address].value!r}):")
    print(f"  model value {root.value!r} -> {forced.value!r}")
    for a, node in sorted(frec.choices.items(), key=lambda kv: kv[1].row):
        old = rec.choices.get(a)
        if old is None:
            print(f"  {a}: new choice")
        elif old.value != node.value or old.metadata["logpdf"] != node.metadata["logpdf"]:
            print(f"  {a:<42} value {old.value!r} -> {node.value!r}, "
                  f"logp {old.metadata['logpdf']:.4f} -> {node.metadata['logpdf']:.4f}")
    deps = dependents_of_choice(forced, address)
    print(f"  {len(deps)} nodes depend on {address}:")
    for n in deps:
        if n.parent is None:
            print(f"    the traced call: {n.callee.__name__}(...) -> {n.value!r}")
        else:
            print(f"    in {n.parent.callee.__name__}: {tracer.format_node(n)}")


if __name__ == "__main__":
    main()
