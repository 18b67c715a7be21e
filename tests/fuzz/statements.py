"""Statement grammar: bodies of straight-line code, branches, loops and try statements.

`body` returns the lines of a statement list (unindented) and the int names it binds
unconditionally, so the caller can keep reading them.  Loops run at most a handful of
times: a `while` counts up to a bound below 6 and increments its counter first, so
`continue` cannot skip the increment.
"""

from __future__ import annotations

from .expressions import bound, cond, int_expr, leaf
from .source import Gen, Scope, indent

MAX_NESTING = 3
# Exceptions a try body raises on purpose; ZeroDivisionError comes from `// 0`.
RAISED = ("ValueError", "KeyError", "ZeroDivisionError")


def body(g: Gen, s: Scope, count: int) -> tuple[list[str], Scope]:
    """`count` statements (at least one line); returns them and the scope after them."""
    lines: list[str] = []
    for _ in range(count):
        more, s = statement(g, s)
        lines += more
    return lines or ["pass"], s


def statement(g: Gen, s: Scope) -> tuple[list[str], Scope]:
    """One statement, chosen among what is enabled and legal at this point."""
    simple = [_assign, _assign, _augassign, _log]
    compound = []
    if s.depth < MAX_NESTING:
        for name, maker in (("if", _if), ("while", _while), ("for", _for), ("try", _try),
                            ("with", _with), ("walrus", _walrus_if)):
            # A generator left suspended inside a `with` is closed when it is freed, and a
            # trace keeps values (so generators) alive longer: no side effects at close.
            if g.on(name) and not (name == "with" and s.in_generator):
                compound.append(maker)
    if s.in_loop:
        simple.append(_loop_exit)
    if s.in_generator:
        simple += [_yield, _yield]
    if s.in_async and g.on("await"):
        simple.append(_await_sleep)
    if s.in_try:
        simple.append(_raise)
    if s.depth > 0 and s.can_return and g.chance(0.1):
        simple.append(_early_return)
    maker = g.pick(compound + simple if g.chance(0.45) and compound else simple)
    return maker(g, s)


def _assign(g: Gen, s: Scope) -> tuple[list[str], Scope]:
    value = int_expr(g, s)
    if s.in_loop:
        value = f"({value}) % 9973"  # repeated products stay small
    if assignable(s) and g.chance(0.3):
        target = g.pick(assignable(s))
        return [f"{target} = {value}"], s
    target = g.fresh(g.pick(("x", "y", "total", "count", "step")))
    return [f"{target} = {value}"], s.with_ints(target)


def _augassign(g: Gen, s: Scope) -> tuple[list[str], Scope]:
    targets = assignable(s)
    if not targets:
        return _assign(g, s)
    return [f"{g.pick(targets)} {g.pick(('+=', '-='))} {int_expr(g, s)}"], s


def _log(g: Gen, s: Scope) -> tuple[list[str], Scope]:
    if g.on("fstring") and g.chance(0.4):
        g.use("fstring")
        return [f'LOG.append(f"{g.fresh("at")}: {{{int_expr(g, s)}}}")'], s
    return [f"LOG.append(({g.fresh('at')!r}, {int_expr(g, s)}))"], s


def _if(g: Gen, s: Scope) -> tuple[list[str], Scope]:
    g.use("if")
    inner = s.deeper()
    lines = [f"if {cond(g, s)}:", *indent(body(g, inner, g.small(1, 3))[0])]
    for _ in range(g.small(0, 2)):
        lines += [f"elif {cond(g, s)}:", *indent(body(g, inner, g.small(1, 2))[0])]
    if g.chance(0.5):
        lines += ["else:", *indent(body(g, inner, g.small(1, 2))[0])]
    return lines, s


def _while(g: Gen, s: Scope) -> tuple[list[str], Scope]:
    g.use("while")
    counter = g.fresh("turn")
    inner = s.deeper(in_loop=True).with_ints(counter)
    loop_body, _ = body(g, inner, g.small(1, 3))
    lines = [f"{counter} = 0", f"while {counter} < {bound(g, s)}:",
             *indent([f"{counter} += 1", *loop_body])]
    if g.chance(0.3):
        lines += ["else:", *indent(_log(g, s)[0])]
    return lines, s.with_ints(counter)


def _for(g: Gen, s: Scope) -> tuple[list[str], Scope]:
    g.use("for")
    var = g.fresh("i")
    inner = s.deeper(in_loop=True).with_ints(var)
    if g.chance(0.5):
        source = f"range({bound(g, s)})"
    else:
        source = "[" + ", ".join(int_expr(g, s, 1) for _ in range(g.small(0, 4))) + "]"
    lines = [f"for {var} in {source}:", *indent(body(g, inner, g.small(1, 3))[0])]
    if g.chance(0.3):
        lines += ["else:", *indent(_log(g, s)[0])]
    return lines, s


def _loop_exit(g: Gen, s: Scope) -> tuple[list[str], Scope]:
    return [f"if {cond(g, s)}:", *indent([g.pick(("break", "continue"))])], s


def _try(g: Gen, s: Scope) -> tuple[list[str], Scope]:
    g.use("try")
    inner = s.deeper(in_try=True)
    lines = ["try:", *indent(body(g, inner, g.small(1, 3))[0])]
    caught = list(RAISED)
    if g.on("raise_escape") and g.chance(0.15):
        caught.remove(g.pick(RAISED))  # that one escapes this try
        g.use("raise_escape")
    if len(caught) == len(RAISED) and g.chance(0.3):
        lines += ["except Exception as err:", *indent(['LOG.append(("caught", type(err).__name__, str(err)))'])]
    else:
        for name in caught:
            lines += [f"except {name} as err:",
                      *indent([f'LOG.append(("{name}", str(err)))', *body(g, s.deeper(), g.small(0, 1))[0]])]
    if g.chance(0.3):
        lines += ["else:", *indent(_log(g, s)[0])]
    if g.chance(0.5) and not s.in_generator:  # see `statement`: no side effects at close
        lines += ["finally:", *indent(['LOG.append("finally")'])]
    return lines, s


def _raise(g: Gen, s: Scope) -> tuple[list[str], Scope]:
    """A statement that raises when a condition holds, here or in a nested frame."""
    kind = g.pick(RAISED)
    if g.chance(0.35):
        # Raised two frames down and unwound through them (and through a
        # comprehension's frame on 3.12).
        g.define_once("check", CHECK)
        call = f"check({int_expr(g, s)}, {leaf(g, s)})"
        if g.on("comprehension") and g.chance(0.4):
            g.use("comprehension")
            return [f"LOG.append([check(v, {leaf(g, s)}) for v in range({bound(g, s)})])"], s
        return [f"LOG.append({call})"], s
    if kind == "ZeroDivisionError":
        action = f"LOG.append({leaf(g, s)} // 0)"
    else:
        action = f"raise {kind}({int_expr(g, s)})"
    return [f"if {cond(g, s)}:", *indent([action])], s


CHECK = [
    "def check(value, limit):",
    '    """Raise ValueError, from a nested frame, when value exceeds limit."""',
    "    if value > limit:",
    '        raise ValueError(f"{value} > {limit}")',
    "    return value",
]


def _with(g: Gen, s: Scope) -> tuple[list[str], Scope]:
    g.use("with")
    g.define_once("Tracker", TRACKER)
    swallow = g.chance(0.3)
    tag = g.fresh("block")
    inner = s.deeper(in_try=swallow or s.in_try)
    lines = [f"with Tracker({tag!r}, swallow={swallow}) as t:",
             *indent([f"t.count += {leaf(g, s)}", *body(g, inner, g.small(1, 3))[0]]),
             "LOG.append(t.count)"]
    return lines, s


TRACKER = [
    "class Tracker:",
    '    """A context manager that logs entry and exit and may swallow the exception."""',
    "",
    "    def __init__(self, tag, swallow=False):",
    "        self.tag, self.swallow, self.count = tag, swallow, 0",
    "",
    "    def __enter__(self):",
    '        LOG.append(("enter", self.tag))',
    "        return self",
    "",
    "    def __exit__(self, kind, error, tb):",
    '        LOG.append(("exit", self.tag, kind.__name__ if kind else None))',
    "        return self.swallow",
]


def _walrus_if(g: Gen, s: Scope) -> tuple[list[str], Scope]:
    g.use("walrus")
    name = g.fresh("seen")
    lines = [f"if ({name} := {int_expr(g, s)}) > {leaf(g, s)}:",
             *indent(body(g, s.deeper().with_ints(name), g.small(1, 2))[0])]
    return lines, s.with_ints(name)


def _yield(g: Gen, s: Scope) -> tuple[list[str], Scope]:
    return [f"yield {int_expr(g, s)}"], s


def _await_sleep(g: Gen, s: Scope) -> tuple[list[str], Scope]:
    g.use("await")
    return ["await asyncio.sleep(0)"], s


def _early_return(g: Gen, s: Scope) -> tuple[list[str], Scope]:
    return [f"if {cond(g, s)}:", *indent([f'return ("early", {int_expr(g, s)})'])], s


def assignable(s: Scope) -> list[str]:
    """Names a statement may rebind: not the parameters, not a while loop's counter
    (rebinding it could make the loop run for ever)."""
    return [n for n in s.ints if n not in ("a", "b") and not n.startswith("turn")]
