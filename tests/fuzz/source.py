"""What the grammar writes with: the generation context, scopes and indentation."""

from __future__ import annotations

import random
from dataclasses import dataclass, field, replace

INDENT = "    "


def indent(lines: list[str]) -> list[str]:
    """`lines` one level deeper (blank lines stay blank)."""
    return [INDENT + line if line else line for line in lines]


@dataclass(frozen=True)
class Scope:
    """What the code being written at one point may refer to and do.

    `ints` are names certainly bound to ints here (a name bound only inside a branch
    is not passed back out, so every read is of a bound name); the flags say which
    statements are legal (break/continue in a loop, yield in a generator, await in a
    coroutine).  Loops and recursion are bounded by construction, so `depth` only
    limits nesting.
    """

    ints: tuple[str, ...]
    depth: int = 0
    in_loop: bool = False
    in_generator: bool = False
    in_async: bool = False
    in_try: bool = False
    # Whether `return` may end the function early (not in generators: an async
    # generator cannot return a value, and a generator's return is tested on purpose).
    can_return: bool = False

    def with_ints(self, *names: str) -> Scope:
        return replace(self, ints=self.ints + tuple(n for n in names if n not in self.ints))

    def deeper(self, **changes) -> Scope:
        return replace(self, depth=self.depth + 1, **changes)


@dataclass
class Gen:
    """One program's generation state: the random source, what is enabled, what was used.

    Per block (reset by `start_block`): `used` (the constructs the block contains, for
    counts by construct), `defs` (module-level helpers only this block calls),
    `needs` (keys of helpers written once per module and shared, such as the
    context-manager class), `imports`.  `shared` holds the text of those helpers.
    """

    rng: random.Random
    enabled: frozenset[str]
    used: set[str] = field(default_factory=set)
    defs: list[list[str]] = field(default_factory=list)
    needs: set[str] = field(default_factory=set)
    imports: set[str] = field(default_factory=set)
    shared: dict[str, list[str]] = field(default_factory=dict)
    _counts: dict[str, int] = field(default_factory=dict)

    def start_block(self) -> None:
        self.used, self.defs, self.needs, self.imports = set(), [], set(), set()

    def on(self, name: str) -> bool:
        return name in self.enabled

    def use(self, name: str) -> None:
        """Note that the block contains `name` (for counts by construct)."""
        self.used.add(name)

    def fresh(self, stem: str) -> str:
        """A new name: `stem` plus a number unique in the program."""
        n = self._counts.get(stem, 0) + 1
        self._counts[stem] = n
        return f"{stem}{n}"

    def chance(self, p: float) -> bool:
        return self.rng.random() < p

    def pick(self, seq):
        return self.rng.choice(seq)

    def small(self, lo: int = 0, hi: int = 9) -> int:
        return self.rng.randint(lo, hi)

    def define(self, lines: list[str]) -> None:
        """Add a module-level definition that this block uses."""
        self.defs.append(lines)

    def define_once(self, key: str, lines: list[str]) -> None:
        """Use a module-level definition shared by every block that needs it."""
        self.shared.setdefault(key, lines)
        self.needs.add(key)
