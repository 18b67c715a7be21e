"""Comparing two runs by their choices, address by address."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["ChoiceDiff", "diff"]


@dataclass
class ChoiceDiff:
    """`same`, `changed` (address -> (value in a, value in b)), `only_a`, `only_b`
    (address -> value), each in draw order; usable when control flow diverged."""
    same: list = field(default_factory=list)
    changed: dict = field(default_factory=dict)
    only_a: dict = field(default_factory=dict)
    only_b: dict = field(default_factory=dict)

    def __bool__(self) -> bool:
        """True when the runs differ in some choice."""
        return bool(self.changed or self.only_a or self.only_b)

    def __str__(self) -> str:
        lines = [f"{len(self.same)} same, {len(self.changed)} changed, "
                 f"{len(self.only_a)} only in a, {len(self.only_b)} only in b"]
        lines += [f"  ~ {a}: {va!r} -> {vb!r}" for a, (va, vb) in self.changed.items()]
        lines += [f"  - {a}: {v!r}" for a, v in self.only_a.items()]
        lines += [f"  + {a}: {v!r}" for a, v in self.only_b.items()]
        return "\n".join(lines)


def _equal(x, y) -> bool:
    if isinstance(x, np.ndarray) or isinstance(y, np.ndarray):
        return np.array_equal(np.asarray(x), np.asarray(y))
    try:
        return bool(x == y)
    except (TypeError, ValueError):
        return x is y


def diff(a, b) -> ChoiceDiff:
    """Compare two ChoiceTraces by address: same value, changed value, only in a,
    only in b."""
    out = ChoiceDiff()
    cb = b.choices
    for addr, c in a.choices.items():
        other = cb.get(addr)
        if other is None:
            out.only_a[addr] = c.value
        elif _equal(c.value, other.value):
            out.same.append(addr)
        else:
            out.changed[addr] = (c.value, other.value)
    for addr, c in cb.items():
        if addr not in a.choices:
            out.only_b[addr] = c.value
    return out
