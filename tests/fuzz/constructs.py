"""The constructs a generated program may use, by name, so a run can switch them on and off."""

from __future__ import annotations

# name -> what enabling it lets the generator write.  Statement- and expression-level
# constructs can appear inside any block; the block constructs each give a program a
# function of its own (see blocks_*.py).
CONSTRUCTS: dict[str, str] = {
    "arith": "arithmetic, comparison and boolean operators, conditional expressions",
    "if": "if / elif / else statements",
    "while": "while loops with break / continue / else",
    "for": "for loops with break / continue / else",
    "try": "try / except / else / finally, raising and catching",
    "with": "with-statements on a context-manager class",
    "closure": "nested functions assigning an outer variable with nonlocal",
    "class_ops": "a class with __add__, __eq__, __bool__, __len__, __getitem__, __iter__",
    "comprehension": "list / dict / set comprehensions and generator expressions, nested",
    "generator": "generator functions with yield, consumed by for, list(), next()",
    "yield_from": "delegating generators (yield from, with the delegate's return value)",
    "gen_send": "generator send / throw / close",
    "await": "coroutines with await, tasks and gather, run by asyncio.run",
    "async_gen": "async generators consumed by async for and async comprehensions",
    "async_with": "async with on a class with __aenter__ / __aexit__",
    "match": "match statements: literal, sequence, mapping, class patterns, guards",
    "walrus": "assignment expressions (:=)",
    "fstring": "f-strings with conversions and format specs",
    "star_args": "calls with *args / **kwargs into functions taking *rest / **opts",
    "unpack": "tuple / starred / nested unpacking and dict merging",
    "recursion": "bounded direct and mutual recursion",
    "eval": "run-time eval / exec of generated snippets, the same string evaluated twice",
    "lambda": "lambda expressions, called directly and as sort keys",
    "defaults": "default arguments, keyword-only arguments, a mutable default",
    "global_state": "a function that mutates a module-level counter with `global`",
    "raise_escape": "exceptions that escape main",
}

ALL = frozenset(CONSTRUCTS)


def select(only: str | None = None, without: str | None = None) -> frozenset[str]:
    """The enabled set: `only` (comma-separated names, default all) minus `without`.

    Raises ValueError naming the unknown names, so a typo does not silently test less.
    """
    chosen = set(ALL) if not only else _parse(only)
    if without:
        chosen -= _parse(without)
    return frozenset(chosen)


def _parse(text: str) -> set[str]:
    names = {n.strip() for n in text.split(",") if n.strip()}
    unknown = sorted(names - ALL)
    if unknown:
        raise ValueError(
            f"unknown construct(s) {', '.join(unknown)}; known: {', '.join(sorted(ALL))}"
        )
    return names
