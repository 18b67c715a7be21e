"""Block emitters for generators: yield, yield from, send / throw / close."""

from __future__ import annotations

from .blocks_basic import function, start_scope
from .expressions import bound, cond, int_expr, leaf
from .source import Gen, Scope, indent
from .statements import body


def _generator_def(g: Gen, stem: str = "produce") -> str:
    """Define a generator function of (n, k) that yields from a bounded loop; return its name."""
    fn = g.fresh(stem)
    # Sometimes the generator may raise, into whatever consumes it (for, list(), zip()).
    escape = g.on("raise_escape") and g.chance(0.2)
    if escape:
        g.use("raise_escape")
    s = Scope(ints=("n", "k", "i"), depth=1, in_loop=True, in_generator=True, in_try=escape)
    loop_body, _ = body(g, s, g.small(1, 3))
    if g.chance(0.4):
        # A counter loop: after a resume `turn` is read, then assigned again (the
        # increment comes first, so a `continue` in the body cannot skip it; the body
        # may rebind `i`, never `turn`: statements.assignable).
        step = g.pick(["turn += 1", "turn = turn + 1"])
        lines = ["turn = 0", "while turn < n % 5:", *indent([step, "i = turn", *loop_body])]
    else:
        lines = [f"for i in range(n % 5):", *indent(loop_body)]
    if g.chance(0.5):
        lines += [f"yield {int_expr(g, Scope(ints=('n', 'k')))}"]
    if g.chance(0.4):
        lines += [f"return {int_expr(g, Scope(ints=('n', 'k')))}"]
    g.define(function(f"def {fn}(n, k)", ["yield n", *lines], doc="A generator over a bounded loop."))
    return fn


def generator(g: Gen, name: str) -> list[str]:
    """Generator functions consumed by for, list(), sum(), next() and zip()."""
    g.use("generator")
    fn = _generator_def(g)
    s = start_scope()
    call = lambda: f"{fn}({bound(g, s, 7)}, {leaf(g, s)})"  # noqa: E731
    uses = [
        [f"for item in {call()}:", *indent(["total += item", f"if {cond(g, s.with_ints('item'))}:",
                                            *indent(["break"])])],
        [f"total += sum({call()})"],
        [f"LOG.append(list({call()}))"],
        [f"stream = {call()}", f"total += next(stream, {leaf(g, s)})", "LOG.append(next(stream, None))"],
        [f"LOG.append(list(zip({call()}, {call()})))"],
        [f"LOG.append(sorted({call()}, reverse=True))"],
    ]
    lines = ["total = 0"]
    for _ in range(g.small(1, 3)):
        lines += g.pick(uses)
    return function(f"def {name}(a, b)", lines + ["return total"])


def yield_from(g: Gen, name: str) -> list[str]:
    """A generator that delegates with yield from, uses the delegate's return value, and goes on."""
    g.use("yield_from")
    g.use("generator")
    inner = _generator_def(g, "inner")
    outer = g.fresh("delegate")
    s = Scope(ints=("n", "k", "r"), depth=1, in_generator=True)
    after, _ = body(g, s, g.small(1, 3))
    g.define(function(f"def {outer}(n, k)", [
        f"r = yield from {inner}(n, k)",
        "r = 0 if r is None else r",
        f"y = {int_expr(g, s)}",
        "yield y + 1",
        *after,
        f"yield from [{leaf(g, s)}, r]",
    ], doc=f"Delegates to {inner}, then computes with its return value."))
    sc = start_scope()
    lines = [f"items = list({outer}({bound(g, sc, 7)}, {leaf(g, sc)}))", "LOG.append(items)"]
    if g.chance(0.5):
        lines += [f"for value in {outer}({leaf(g, sc)} % 4, {leaf(g, sc)}):",
                  *indent(["LOG.append(value)"])]
    return function(f"def {name}(a, b)", lines + ["return sum(items)"])


def gen_send(g: Gen, name: str) -> list[str]:
    """A running-total generator driven by send, interrupted by throw, finished by close."""
    g.use("gen_send")
    fn = g.fresh("accumulate")
    s = Scope(ints=("total", "got"), depth=1, in_loop=True)
    update = int_expr(g, s)
    g.define(function(f"def {fn}(total)", [
        "try:",
        *indent([
            "while True:",
            *indent([
                "try:",
                *indent(["got = yield total", "got = 0 if got is None else got",
                         f"total = ({update}) % 9973"]),
                "except ValueError as err:",
                *indent(['LOG.append(("thrown", str(err)))', "total = -total"]),
            ]),
        ]),
        "finally:",
        *indent(['LOG.append(("closed", total))']),
    ], doc="Receives values by send; a thrown ValueError negates the total; close logs."))
    sc = start_scope()
    lines = [f"acc = {fn}({leaf(g, sc)})", "LOG.append(next(acc))"]
    for _ in range(g.small(1, 4)):
        action = g.rng.randrange(3)
        if action == 0:
            lines.append(f"LOG.append(acc.send({int_expr(g, sc)}))")
        elif action == 1:
            lines.append(f"LOG.append(acc.throw(ValueError({leaf(g, sc)})))")
        else:
            lines.append("LOG.append(next(acc))")
    if g.chance(0.3):
        lines += ["try:", *indent(["acc.throw(KeyError('stop'))"]),
                  "except KeyError as err:", *indent(['LOG.append(("escaped", str(err)))'])]
    else:
        lines.append("acc.close()")
    lines.append("LOG.append(acc.gi_frame is None)")
    return function(f"def {name}(a, b)", lines + ["return len(LOG)"])
