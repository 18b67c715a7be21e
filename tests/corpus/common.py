"""Corpus: the Case type, module-level constants and exceptions the cases share."""

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Case:
    """One corpus entry: call ``func(*args, **kwargs)`` and compare the outcome.

    When ``make_args`` is set it is called for every run and returns fresh
    ``(args, kwargs)``; use it for functions that mutate their arguments.
    When ``raises`` is set the call must raise exactly that exception type.
    """

    name: str
    func: Callable[..., Any]
    args: tuple = ()
    kwargs: dict = field(default_factory=dict)
    raises: type[BaseException] | None = None
    make_args: Callable[[], tuple[tuple, dict]] | None = None

    def arguments(self) -> tuple[tuple, dict]:
        """Return the ``(args, kwargs)`` to use for one run (fresh when ``make_args`` is set)."""
        if self.make_args is not None:
            args, kwargs = self.make_args()
            return tuple(args), dict(kwargs)
        return self.args, dict(self.kwargs)

    def run(self) -> Any:
        """Call the function once, untraced, with arguments from :meth:`arguments`."""
        args, kwargs = self.arguments()
        return self.func(*args, **kwargs)


TAX_RATE = 0.2


GOLDEN_RATIO = (1 + 5 ** 0.5) / 2


ROMAN_TABLE = (
    (1000, "M"), (900, "CM"), (500, "D"), (400, "CD"), (100, "C"), (90, "XC"),
    (50, "L"), (40, "XL"), (10, "X"), (9, "IX"), (5, "V"), (4, "IV"), (1, "I"),
)


VOWELS = frozenset("aeiou")


DIRECTIONS = ((0, 1), (1, 0), (0, -1), (-1, 0))


class ParseError(Exception):
    """Raised by the tiny expression parser."""


class ValidationError(ValueError):
    def __init__(self, field_name, message):
        super().__init__(f"{field_name}: {message}")
        self.field_name = field_name


class ConfigError(LookupError):
    """Raised when a configuration key cannot be resolved."""
