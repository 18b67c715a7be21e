"""Addresses of random choices: the call path and the site, stable across runs.

An address is a path of components separated by '/': the traced model, then each
enclosing call as `name@Lline[k]` (the function's name, the line of the call in its
caller, and `[k]` when it is the k-th call (from 0) of that name at that line within
the same caller call), then the draw site, `method@Lline[k]` (the k-th draw of that
method at that line in that call) or a name given with `tracer.ppl.sample(name, ...)`
(`name[k]`).  `[0]` is not written.  Example: `model/step@L20[3]/gauss@L12`.
"""

from __future__ import annotations

import functools
import re
from typing import NamedTuple

__all__ = ["Component", "Address", "component", "parse", "join"]


class Component(NamedTuple):
    """One step of an address: a name, a line (None for a named site), a count."""
    name: str
    line: int | None = None
    k: int = 0

    def __str__(self) -> str:
        s = self.name if self.line is None else f"{self.name}@L{self.line}"
        return s if self.k == 0 else f"{s}[{self.k}]"


_COMPONENT = re.compile(r"^(?P<name>[^/@\[\]]+)(?:@L(?P<line>-?\d+))?(?:\[(?P<k>\d+)\])?$")


def component(name: str, line: int | None, k: int) -> str:
    """The printed form of one component."""
    s = name if line is None else f"{name}@L{line}"
    return s if k == 0 else f"{s}[{k}]"


class Address(tuple):
    """A parsed address: a tuple of Components; `str()` prints it back."""

    __slots__ = ()

    def __str__(self) -> str:
        return "/".join(str(c) for c in self)

    def __repr__(self) -> str:
        return f"Address({str(self)!r})"

    @property
    def site(self) -> Component:
        """The last component: the draw site."""
        return self[-1]

    @property
    def calls(self) -> "Address":
        """The enclosing calls (every component but the site)."""
        return Address(self[:-1])


def parse(text: str) -> Address:
    """Parse `model/step@L20[3]/gauss@L12` into an Address (ValueError if malformed)."""
    if not isinstance(text, str) or not text:
        raise ValueError(f"an address is a non-empty str, got {text!r}")
    return _parse(text)


@functools.lru_cache(maxsize=1 << 16)
def _parse(text: str) -> Address:
    # (cached: the same observations are given to condition run after run, and
    # each run parses them twice, to check them and to find their lines)
    parts = []
    for piece in text.split("/"):
        m = _COMPONENT.match(piece)
        if m is None:
            raise ValueError(f"malformed address component {piece!r} in {text!r}: expected "
                             f"name, name@L<line> or either followed by [k]")
        line = m.group("line")
        parts.append(Component(m.group("name"), None if line is None else int(line),
                               int(m.group("k") or 0)))
    return Address(parts)


def join(prefix: str, comp: str) -> str:
    return comp if not prefix else f"{prefix}/{comp}"


def canonical(address) -> str:
    """The printed form of an address given as a str or an Address (checked)."""
    if isinstance(address, Address):
        return str(address)
    if not isinstance(address, str) or not address:
        raise ValueError(f"an address is a non-empty str, got {address!r}")
    return _canonical(address)


@functools.lru_cache(maxsize=1 << 16)
def _canonical(text: str) -> str:
    # (cached as _parse is: condition and update name the same addresses run
    # after run, and printing a parsed address back costs more than parsing it)
    return str(_parse(text))


@functools.lru_cache(maxsize=1 << 16)
def base_of(text: str) -> str:
    """The printed form of address `text` (canonical) with its site's count left
    out: the address of the first draw at that site in that call."""
    a = _parse(text)
    last = a[-1]
    return str(Address(a[:-1] + (Component(last.name, last.line, 0),)))
