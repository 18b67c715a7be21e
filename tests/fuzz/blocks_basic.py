"""Block emitters for plain code: statements, closures, classes, recursion, calls, eval, match.

Each emitter writes one function `NAME(a, b)` (its lines) and adds the module-level
helpers it needs with `g.define`; `main` calls every block in turn and collects what
they return.  Blocks read only their own names and `a`, `b`, so any subset of a
program's blocks is still a valid program (that is how failures are reduced).
"""

from __future__ import annotations

from .expressions import bound, cond, int_expr, leaf
from .source import Gen, Scope, indent
from .statements import body


def function(header: str, lines: list[str], doc: str | None = None) -> list[str]:
    """`header:` followed by `lines` indented, with an optional docstring."""
    head = [f'"""{doc}"""'] if doc else []
    return [f"{header}:", *indent(head + lines)]


def start_scope() -> Scope:
    return Scope(ints=("a", "b"), can_return=True)


def finish(g: Gen, s: Scope, extra: list[str] | None = None) -> list[str]:
    """The block's return statement: a tuple of a few of the ints it computed."""
    names = [n for n in s.ints if n not in ("a", "b")][-3:] + (extra or [])
    return [f"return ({', '.join(names)},)" if names else f"return {int_expr(g, s)}"]


def plain(g: Gen, name: str) -> list[str]:
    """Statements only: whatever statement-level constructs are enabled."""
    lines, s = body(g, start_scope(), g.small(3, 7))
    return function(f"def {name}(a, b)", lines + finish(g, s))


def closure(g: Gen, name: str) -> list[str]:
    """A counter factory whose inner function rebinds the outer total with nonlocal."""
    g.use("closure")
    maker = g.fresh("make_counter")
    inner_s = Scope(ints=("total", "step", "calls"))
    update = int_expr(g, inner_s)
    g.define(function(f"def {maker}(start)", [
        "total = start",
        "calls = 0",
        "",
        *function("def add(step)", [
            "nonlocal total, calls",
            "calls += 1",
            f"total = (total + {update}) % 9973",
            "return total",
        ]),
        "",
        *function("def reset()", ["nonlocal total", "old, total = total, 0", "return old"]),
        "",
        "return add, reset",
    ], doc="Two closures sharing the cells of `total` and `calls`."))
    s = start_scope()
    lines = [f"add, reset = {maker}({int_expr(g, s)})"]
    for _ in range(g.small(1, 3)):
        lines.append(f"LOG.append(add({int_expr(g, s)}))")
    if g.chance(0.5):
        lines += [f"for i in range({bound(g, s)}):", *indent([f"LOG.append(add(i + {leaf(g, s)}))"])]
    lines += ["cleared = reset()", "after = add(1)"]
    return function(f"def {name}(a, b)", lines + ["return (cleared, after)"])


def class_ops(g: Gen, name: str) -> list[str]:
    """A small vector class whose operators, truth, length, indexing and iteration run Python code."""
    g.use("class_ops")
    g.define_once("Vec", VEC)
    s = start_scope()
    items = lambda: "[" + ", ".join(int_expr(g, s, 1) for _ in range(g.small(0, 3))) + "]"  # noqa: E731
    lines = [f"u = Vec({items()})", f"v = Vec({items()})", "w = u + v",
             'LOG.append(("sum", repr(w), len(w)))']
    uses = [
        ["if w:", *indent(['LOG.append("w is true")']), "else:", *indent(['LOG.append("w is false")'])],
        ["LOG.append(u == v)", "LOG.append(w != u)"],
        ["total = 0", "for item in w:", *indent(["total += item"]), "LOG.append(total)"],
        [f"if len(w) > {g.small(0, 3)}:", *indent([f"LOG.append(w[{g.small(0, 5)} % len(w)])"])],
        ["LOG.append(list(w))", "LOG.append(sum(u) + sum(v))"],
        ["LOG.append(bool(u) and bool(v))", "LOG.append(not w)"],
        ["LOG.append([x * 2 for x in w if x])"],
        [f"LOG.append(w[-1] if w else {leaf(g, s)})"],
    ]
    for _ in range(g.small(2, 4)):
        lines += g.pick(uses)
    return function(f"def {name}(a, b)", lines + ["return (repr(w), len(w))"])


VEC = [
    "class Vec:",
    '    """A sequence of ints whose operators are Python methods."""',
    "",
    "    def __init__(self, items):",
    "        self.items = list(items)",
    "",
    "    def __add__(self, other):",
    "        longest = max(len(self), len(other))",
    "        pad = lambda v: v.items + [0] * (longest - len(v))",
    "        return Vec([x + y for x, y in zip(pad(self), pad(other))])",
    "",
    "    def __eq__(self, other):",
    "        return isinstance(other, Vec) and self.items == other.items",
    "",
    "    def __bool__(self):",
    "        return any(self.items)",
    "",
    "    def __len__(self):",
    "        return len(self.items)",
    "",
    "    def __getitem__(self, index):",
    "        return self.items[index]",
    "",
    "    def __iter__(self):",
    "        for item in self.items:",
    "            yield item",
    "",
    "    def __repr__(self):",
    '        return f"Vec({self.items})"',
]


def recursion(g: Gen, name: str) -> list[str]:
    """Bounded direct recursion (linear and tree-shaped) or mutual recursion."""
    g.use("recursion")
    s = start_scope()
    kind = g.rng.randrange(3)
    fn = g.fresh("walk")
    rs = Scope(ints=("n", "k"))
    if kind == 0:
        g.define(function(f"def {fn}(n, k)", [
            "if n <= 0:", *indent([f"return {int_expr(g, rs)}"]),
            f"return ({fn}(n - 1, k) + {int_expr(g, rs)}) % 9973",
        ], doc="Linear recursion, n levels deep."))
        call = f"{fn}({bound(g, s, 9)}, {leaf(g, s)})"
    elif kind == 1:
        g.define(function(f"def {fn}(n, k)", [
            "if n < 2:", *indent(["return n + k"]),
            f"return {fn}(n - 1, k) + {fn}(n - 2, k)",
        ], doc="Tree recursion (Fibonacci-shaped)."))
        call = f"{fn}({bound(g, s, 8)}, {leaf(g, s)})"
    else:
        other = g.fresh("odd_walk")
        g.define(function(f"def {fn}(n, k)", [
            "if n == 0:", *indent(['LOG.append(("even", k))', "return k"]),
            f"return {other}(n - 1, k + 1)",
        ], doc=f"Mutual recursion with {other}."))
        g.define(function(f"def {other}(n, k)", [
            "if n == 0:", *indent(['LOG.append(("odd", k))', "return -k"]),
            f"return {fn}(n - 1, k * 2)",
        ]))
        call = f"{fn}({bound(g, s, 9)}, {leaf(g, s)})"
    return function(f"def {name}(a, b)", [f"result = {call}", "LOG.append(result)", "return result"])


def defaults(g: Gen, name: str) -> list[str]:
    """Default and keyword-only arguments, and a mutable default that keeps state between calls."""
    g.use("defaults")
    fn = g.fresh("scaled")
    keep = g.fresh("remember")
    g.define(function(f"def {fn}(x, factor={g.small(1, 4)}, *, offset={g.small(-2, 3)})", [
        "return x * factor + offset"]))
    g.define(function(f"def {keep}(item, seen=[])", [
        "seen.append(item)", "return len(seen)"], doc="The default list is shared by every call."))
    s = start_scope()
    calls = [f"{fn}({int_expr(g, s)})", f"{fn}({leaf(g, s)}, {leaf(g, s)})",
             f"{fn}({leaf(g, s)}, offset={leaf(g, s)})", f"{fn}(x={leaf(g, s)}, factor={leaf(g, s)}, offset=1)"]
    lines = [f"LOG.append({g.pick(calls)})" for _ in range(g.small(1, 3))]
    lines += [f"first = {keep}({leaf(g, s)})", f"second = {keep}({leaf(g, s)})"]
    return function(f"def {name}(a, b)", lines + ["return (first, second)"])


def star_args(g: Gen, name: str) -> list[str]:
    """Calls that spread *args and **kwargs into a function taking *rest and **options."""
    g.use("star_args")
    fn = g.fresh("combine")
    g.define(function(f"def {fn}(first, *rest, scale=1, **options)", [
        "total = first + sum(rest) * scale",
        "for key in sorted(options):",
        *indent(["total += len(key) * options[key]"]),
        "return total"]))
    s = start_scope()
    nums = lambda: "".join(f"{int_expr(g, s, 1)}, " for _ in range(g.small(0, 3)))  # noqa: E731
    calls = [
        f"{fn}(*[{leaf(g, s)}, {nums()}])",
        f"{fn}({leaf(g, s)}, *({nums()}), scale={leaf(g, s)})",
        f"{fn}({leaf(g, s)}, **{{'alpha': {leaf(g, s)}, 'be': {leaf(g, s)}}})",
        f"{fn}(*args, **options)",
    ]
    lines = [f"args = [{leaf(g, s)}, {nums()}]", f"options = {{'scale': {leaf(g, s)}, 'extra': {leaf(g, s)}}}"]
    lines += [f"LOG.append({g.pick(calls)})" for _ in range(g.small(1, 3))]
    return function(f"def {name}(a, b)", lines + [f"return {fn}(a, b, *args)"])


def unpack(g: Gen, name: str) -> list[str]:
    """Tuple, starred and nested unpacking, swaps and dict merging."""
    g.use("unpack")
    s = start_scope()
    e = lambda: int_expr(g, s, 1)  # noqa: E731
    lines = [
        f"first, *middle, last = [{e()}, {e()}, {e()}, {e()}]",
        f"(p, q), r = ({e()}, {e()}), {e()}",
        "p, q = q, p",
        f"merged = {{**{{'p': p, 'q': q}}, **{{'q': r, 'n': len(middle)}}}}",
        "head, *tail = merged.values()",
        "LOG.append((first, middle, last, merged, head, tail))",
    ]
    if g.chance(0.5):
        lines += ["for key, value in sorted(merged.items()):", *indent(["LOG.append(f'{key}={value}')"])]
    return function(f"def {name}(a, b)", lines + ["return (p, q, r, sum(tail))"])


def global_state(g: Gen, name: str) -> list[str]:
    """A helper that rebinds a module-level counter with `global`."""
    g.use("global_state")
    g.define_once("bump", BUMP)
    s = start_scope()
    lines = [f"bump({int_expr(g, s)})" for _ in range(g.small(1, 3))]
    lines += [f"for i in range({bound(g, s)}):", *indent([f"bump(i * {leaf(g, s)})"])]
    return function(f"def {name}(a, b)", lines + ["return COUNTER"])


BUMP = [
    "COUNTER = 0",
    "",
    "",
    *function("def bump(k)", ["global COUNTER", "COUNTER = (COUNTER + k) % 9973",
                              'LOG.append(("counter", COUNTER))', "return COUNTER"]),
]


def run_time_code(g: Gen, name: str) -> list[str]:
    """eval and exec of snippets made at run time; the same string is evaluated twice."""
    g.use("eval")
    s = start_scope()
    names = Scope(ints=("p", "q"))
    snippet = int_expr(g, names)
    exec_body = ["acc = 0", "for j in range(p % 4):", "    acc += j * q + " + leaf(g, names)]
    lines = [
        f"formula = {snippet!r}",
        "values = []",
        f"for p in range({bound(g, s)} + 1):",
        *indent([f"values.append(eval(formula, {{'p': p, 'q': {leaf(g, s)}}}))"]),
        "LOG.append(values)",
        f"namespace = {{'p': {leaf(g, s)}, 'q': {leaf(g, s)}}}",
        f"exec({chr(10).join(exec_body)!r}, namespace)",
        "LOG.append(namespace['acc'])",
    ]
    if g.chance(0.5):
        lines += [
            f"exec('def helper(z):\\n    return z * {g.small(1, 5)} + {leaf(g, names)}', namespace)",
            f"LOG.append(namespace['helper']({leaf(g, s)}))",
        ]
    if g.chance(0.4):
        lines += ["again = eval(formula, {'p': 1, 'q': 2}) + eval(formula, {'p': 1, 'q': 2})",
                  "LOG.append(again)"]
    return function(f"def {name}(a, b)", lines + ["return (sum(values), namespace['acc'])"])


def match_statement(g: Gen, name: str) -> list[str]:
    """match with literal, sequence, mapping and class patterns and guards."""
    g.use("match")
    g.define_once("Point", POINT)
    s = start_scope()
    e = lambda: int_expr(g, s, 1)  # noqa: E731
    subjects = [e(), f"[{e()}, {e()}]", f"[{e()}, {e()}, {e()}, {e()}]", f"{{'kind': 'move', 'dx': {e()}}}",
                f"{{'kind': 'stop'}}", f"Point({e()}, {e()})", f"({e()}, {e()}, {e()}, {e()}, {e()})", "'text'"]
    cases = [
        ("0 | 1", s), (f"int(n) if n > {leaf(g, s)}", s.with_ints("n")),
        ("[x, y]", s.with_ints("x", "y")), (f"[x, y, *rest] if x > y", s.with_ints("x", "y")),
        ("{'kind': 'move', 'dx': dx}", s.with_ints("dx")), ("{'kind': 'stop', **extra}", s),
        ("Point(x=0, y=y)", s.with_ints("y")), ("Point(x=x, y=y) if x == y", s.with_ints("x", "y")),
        ("Point(x, y)", s.with_ints("x", "y")), ("(n, _, _, *_)", s.with_ints("n")), ("str() as text", s),
    ]
    chosen = g.rng.sample(cases, g.small(2, 5))
    lines = [f"shapes = [{', '.join(g.rng.sample(subjects, g.small(1, 4)))}]", "found = []",
             "for shape in shapes:"]
    arms = []
    for number, (pattern, cs) in enumerate(chosen, 1):
        arm, _ = body(g, cs.deeper(), g.small(1, 2))
        arms += [f"case {pattern}:", *indent([f"found.append({number})", *arm])]
    arms += ["case _:", *indent(['found.append("other")'])]
    lines += indent(["match shape:", *indent(arms)])
    return function(f"def {name}(a, b)", lines + ["LOG.append(found)", "return len(found)"])


POINT = [
    "class Point:",
    '    """A class with __match_args__, for positional class patterns."""',
    "",
    '    __match_args__ = ("x", "y")',
    "",
    "    def __init__(self, x, y):",
    "        self.x, self.y = x, y",
]


def raise_escape(g: Gen, name: str) -> list[str]:
    """An exception that leaves the block, and main, when its condition holds."""
    g.use("raise_escape")
    g.define_once("FuzzError", FUZZ_ERROR)
    s = start_scope()
    lines, s = body(g, s, g.small(0, 2))
    kind = g.pick(("FuzzError", "ValueError", "LookupError"))
    lines += [f"if {cond(g, s)}:", *indent([f'raise {kind}(f"escaped with {{a}} and {{b}}")'])]
    return function(f"def {name}(a, b)", lines + finish(g, s))


FUZZ_ERROR = [
    "class FuzzError(Exception):",
    '    """Raised on purpose by generated code."""',
]
