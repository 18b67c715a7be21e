"""The differential corpus: small deterministic functions and their inputs, one
module per kind of code, each ending in its own CASES.  `CASES` is all of them."""

from . import (
    algorithms, attributes, builtin_methods, callbacks, calls, classes, closures,
    comprehensions, conditionals, exceptions, interpreters, loops, mutating, numeric,
    numpy_cases, operators, raising, recursion, text,
)
from .common import Case
from .numpy_cases import np

# In the order of the original corpus: simple operators first, numpy last.
MODULES = (
    operators, calls, builtin_methods, classes, attributes, comprehensions, closures,
    loops, conditionals, exceptions, recursion, callbacks, text, algorithms,
    interpreters, numeric, raising, mutating, numpy_cases,
)
CASES = [case for module in MODULES for case in module.CASES]


__all__ = ["CASES", "Case", "MODULES"]


def self_check():
    import copy

    names = set()
    for case in CASES:
        assert case.name not in names, f"duplicate case name {case.name!r}"
        names.add(case.name)
        outcomes = []
        for _ in range(2):
            args, kwargs = case.arguments()
            snapshot = None if case.make_args is not None else copy.deepcopy((args, kwargs))
            if case.raises is not None:
                try:
                    case.func(*args, **kwargs)
                except BaseException as exc:  # noqa: BLE001 - checked below
                    if type(exc) is not case.raises:
                        raise AssertionError(
                            f"{case.name}: raised {type(exc).__name__}, expected {case.raises.__name__}") from exc
                    outcomes.append(type(exc))
                else:
                    raise AssertionError(f"{case.name}: did not raise {case.raises.__name__}")
            else:
                outcomes.append(case.func(*args, **kwargs))
            if snapshot is not None:
                assert (args, kwargs) == snapshot, f"{case.name}: mutated arguments shared between runs"
        assert outcomes[0] == outcomes[1], f"{case.name}: results differ: {outcomes[0]!r} != {outcomes[1]!r}"
    note = "" if np is not None else " (numpy not importable: numpy cases skipped)"
    print(f"{len(CASES)} cases OK{note}")

