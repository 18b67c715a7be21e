"""Expression grammar: int-valued expressions and conditions over the names in scope.

Every expression is total on ints (division only by non-zero literals, `range` bounds
reduced modulo a small literal) so a program fails only where it means to.
"""

from __future__ import annotations

from .source import Gen, Scope

MAX_DEPTH = 2
COMPARISONS = ("<", "<=", ">", ">=", "==", "!=")


def paren(text: str) -> str:
    """`text` as an operand: names and literals stay bare, anything else gets parentheses."""
    if text.isidentifier() or text.lstrip("-").isdigit() and not text.startswith("-"):
        return text
    if text.endswith(")") and text[: text.index("(")].isidentifier() and text.count("(") == 1:
        return text  # a plain call like abs(x)
    return f"({text})"


def leaf(g: Gen, s: Scope) -> str:
    """A name in scope or a small literal."""
    if s.ints and g.chance(0.7):
        return g.pick(s.ints)
    return str(g.small(-3, 12))


def bound(g: Gen, s: Scope, limit: int = 6) -> str:
    """A non-negative int below `limit`, for loop counts and range bounds."""
    return f"{paren(leaf(g, s))} % {g.small(2, limit)}"


def int_expr(g: Gen, s: Scope, depth: int = 0) -> str:
    """An int-valued expression."""
    if depth >= MAX_DEPTH or g.chance(0.3):
        return leaf(g, s)
    makers = [_binop, _floordiv, _builtin_call]
    if g.on("arith"):
        makers += [_binop, _ternary]
    if g.on("walrus"):
        makers.append(_walrus)
    if g.on("fstring"):
        makers.append(_fstring_len)
    if g.on("lambda"):
        makers.append(_lambda_call)
    if g.on("comprehension"):
        makers += [_comprehension, _comprehension]
    return g.pick(makers)(g, s, depth + 1)


def cond(g: Gen, s: Scope, depth: int = 0) -> str:
    """A condition: a comparison, possibly chained, combined with and / or / not."""
    if not g.on("arith"):
        return f"{leaf(g, s)} {g.pick(COMPARISONS)} {leaf(g, s)}"
    r = g.rng.random()
    if depth < MAX_DEPTH and r < 0.25:
        return f"{paren(cond(g, s, depth + 1))} {g.pick(('and', 'or'))} {paren(cond(g, s, depth + 1))}"
    if depth < MAX_DEPTH and r < 0.32:
        return f"not {paren(cond(g, s, depth + 1))}"
    if r < 0.42:
        return f"{paren(leaf(g, s))} < {paren(int_expr(g, s, depth + 1))} <= {paren(leaf(g, s))}"
    if r < 0.5:
        return f"{paren(int_expr(g, s, depth + 1))} % 2"  # an int used for its truth value
    if g.on("walrus") and r < 0.58:
        g.use("walrus")
        return f"(w := {int_expr(g, s, depth + 1)}) {g.pick(COMPARISONS)} w // 2"
    return f"{paren(int_expr(g, s, depth + 1))} {g.pick(COMPARISONS)} {paren(int_expr(g, s, depth + 1))}"


def _binop(g: Gen, s: Scope, depth: int) -> str:
    if g.on("arith"):
        g.use("arith")
        op = g.pick(("+", "-", "*", "+", "-"))
    else:
        op = "+"
    return f"{paren(int_expr(g, s, depth))} {op} {paren(int_expr(g, s, depth))}"


def _floordiv(g: Gen, s: Scope, depth: int) -> str:
    if not g.on("arith"):
        return leaf(g, s)
    g.use("arith")
    return f"{paren(int_expr(g, s, depth))} {g.pick(('//', '%'))} {g.small(2, 7)}"


def _builtin_call(g: Gen, s: Scope, depth: int) -> str:
    name = g.pick(("abs", "min", "max"))
    if name == "abs":
        return f"abs({int_expr(g, s, depth)})"
    return f"{name}({int_expr(g, s, depth)}, {int_expr(g, s, depth)})"


def _ternary(g: Gen, s: Scope, depth: int) -> str:
    return f"{paren(int_expr(g, s, depth))} if {cond(g, s, depth)} else {paren(int_expr(g, s, depth))}"


def _walrus(g: Gen, s: Scope, depth: int) -> str:
    # The name is read only to the right of its binding in the same expression, so
    # it is bound whichever branches run elsewhere.
    g.use("walrus")
    return f"(w := {int_expr(g, s, depth)}) * 2 - w"


def _fstring_len(g: Gen, s: Scope, depth: int) -> str:
    g.use("fstring")
    a, b = int_expr(g, s, depth), leaf(g, s)
    form = g.pick(("{%s}:{%s!r}", "{%s:>4}|{%s:03d}", "{%s=}, {%s:x}", "[{%s:+}] {%s!s:<3}"))
    return f'len(f"{form % (a, b)}")'


def _lambda_call(g: Gen, s: Scope, depth: int) -> str:
    g.use("lambda")
    body = int_expr(g, s.with_ints("p", "q"), depth)
    if g.chance(0.3):
        items = ", ".join(int_expr(g, s, depth) for _ in range(3))
        key = int_expr(g, s.with_ints("p"), depth)
        # A lambda as a key function, called back from C code.
        pick = g.pick(("sorted", "min", "max"))
        return f"{pick}([{items}], key=lambda p: {key})" + ("[-1]" if pick == "sorted" else "")
    if g.chance(0.5):
        return f"(lambda p, q={g.small(1, 5)}: {body})({int_expr(g, s, depth)})"
    return f"(lambda p, q: {body})({int_expr(g, s, depth)}, {leaf(g, s)})"


def _comprehension(g: Gen, s: Scope, depth: int) -> str:
    g.use("comprehension")
    inner = s.with_ints("v")
    kind = g.rng.randrange(6)
    if kind == 0:
        return f"sum({int_expr(g, inner, depth)} for v in range({bound(g, s)}) if {cond(g, inner, depth)})"
    if kind == 1:
        return f"len([v * u for v in range({bound(g, s)}) for u in range(v) if u != {leaf(g, s)}])"
    if kind == 2:
        return f"sum({{v: {int_expr(g, inner, depth)} for v in range({bound(g, s)})}}.values())"
    if kind == 3:
        return f"len({{{int_expr(g, inner, depth)} % 4 for v in range({bound(g, s)})}})"
    if kind == 4:
        return f"sum([sum(u for u in range(v)) for v in range({bound(g, s)})])"
    return f"max([{int_expr(g, inner, depth)} for v in range({bound(g, s)})], default={leaf(g, s)})"
