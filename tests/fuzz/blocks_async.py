"""Block emitters for coroutines: await with tasks and gather, async generators, async with.

Each block runs its own event loop with asyncio.run, so blocks stay independent.
"""

from __future__ import annotations

from .blocks_basic import function, start_scope
from .expressions import bound, int_expr, leaf
from .source import Gen, Scope, indent
from .statements import body


def _coroutine_def(g: Gen) -> str:
    """Define `async def NAME(n, k)` whose body may await; return its name."""
    g.imports.add("asyncio")
    fn = g.fresh("work")
    # Sometimes the coroutine may raise: the exception then crosses the event loop,
    # gather and asyncio.run, and escapes main.
    escape = g.on("raise_escape") and g.chance(0.2)
    if escape:
        g.use("raise_escape")
    s = Scope(ints=("n", "k"), depth=1, in_async=True, in_try=escape)
    lines, s = body(g, s, g.small(1, 3))
    g.define(function(f"async def {fn}(n, k)", [
        "await asyncio.sleep(0)", *lines, f"return {int_expr(g, s)}"]))
    return fn


def await_block(g: Gen, name: str) -> list[str]:
    """Coroutines awaited directly, through tasks and through gather, run by asyncio.run."""
    g.use("await")
    work = _coroutine_def(g)
    drive = g.fresh("drive")
    s = Scope(ints=("a", "b"), in_async=True)
    uses = [
        [f"first = await {work}({leaf(g, s)}, {leaf(g, s)})", "results.append(first)"],
        [f"task = asyncio.create_task({work}({int_expr(g, s)}, {leaf(g, s)}))",
         "await asyncio.sleep(0)", "results.append(await task)"],
        [f"pair = await asyncio.gather({work}({leaf(g, s)}, 1), {work}({leaf(g, s)}, 2))",
         "results.extend(pair)"],
        [f"for i in range({bound(g, s, 4)}):", *indent([f"results.append(await {work}(i, {leaf(g, s)}))"])],
    ]
    lines = ["results = []"]
    for _ in range(g.small(1, 3)):
        lines += g.pick(uses)
    g.define(function(f"async def {drive}(a, b)", lines + ["return results"]))
    sc = start_scope()
    return function(f"def {name}(a, b)", [
        f"results = asyncio.run({drive}({leaf(g, sc)}, {leaf(g, sc)}))",
        "LOG.append(results)", "return sum(results)"])


def async_gen(g: Gen, name: str) -> list[str]:
    """An async generator consumed by async for and by an async comprehension."""
    g.use("async_gen")
    g.imports.add("asyncio")
    agen = g.fresh("ticks")
    s = Scope(ints=("n", "k", "i"), depth=1, in_loop=True, in_generator=True, in_async=True)
    loop_body, _ = body(g, s, g.small(1, 3))
    g.define(function(f"async def {agen}(n, k)", [
        "for i in range(n % 5):", *indent(loop_body), "yield k"],
        doc="An async generator over a bounded loop."))
    consume = g.fresh("consume")
    cs = Scope(ints=("a", "b"), in_async=True)
    lines = ["total = 0", f"async for value in {agen}({leaf(g, cs)}, {leaf(g, cs)}):",
             *indent(["total += value"])]
    if g.chance(0.5):
        lines += [f"values = [v * 2 async for v in {agen}({leaf(g, cs)}, {leaf(g, cs)}) if v % 3]",
                  "LOG.append(values)"]
    if g.on("await") and g.chance(0.3):
        g.use("await")
        lines += [f"stream = {agen}({leaf(g, cs)}, 1)", "LOG.append(await anext(stream, -1))",
                  "await stream.aclose()"]
    g.define(function(f"async def {consume}(a, b)", lines + ["return total"]))
    sc = start_scope()
    return function(f"def {name}(a, b)", [f"return asyncio.run({consume}({leaf(g, sc)}, {leaf(g, sc)}))"])


def async_with(g: Gen, name: str) -> list[str]:
    """async with on a class with __aenter__ / __aexit__, possibly swallowing the exception."""
    g.use("async_with")
    g.imports.add("asyncio")
    # With `await` disabled the class awaits nothing itself (async with still suspends
    # into __aenter__ / __aexit__: that is the construct).
    g.define_once("Session", SESSION if g.on("await") else [ln for ln in SESSION if "await" not in ln])
    run = g.fresh("session")
    s = Scope(ints=("a", "b"), depth=1, in_async=True, in_try=True)
    inner, _ = body(g, s, g.small(1, 3))
    swallow = g.chance(0.6)
    lines = [f"async with Session({leaf(g, s)}, swallow={swallow}) as opened:",
             *indent(["opened.uses += 1", *inner]), "return opened.uses"]
    if not swallow:
        lines = ["try:", *indent(lines), "except Exception as err:",
                 *indent(['LOG.append(("session failed", type(err).__name__))', "return -1"])]
    g.define(function(f"async def {run}(a, b)", lines))
    sc = start_scope()
    return function(f"def {name}(a, b)", [f"return asyncio.run({run}({leaf(g, sc)}, {leaf(g, sc)}))"])


SESSION = [
    "class Session:",
    '    """An async context manager that logs and may swallow the exception."""',
    "",
    "    def __init__(self, key, swallow):",
    "        self.key, self.swallow, self.uses = key, swallow, 0",
    "",
    "    async def __aenter__(self):",
    "        await asyncio.sleep(0)",
    '        LOG.append(("open", self.key))',
    "        return self",
    "",
    "    async def __aexit__(self, kind, error, tb):",
    '        LOG.append(("close", self.key, kind.__name__ if kind else None))',
    "        return self.swallow",
]
