"""Which choices each choice, and the model's value, depend on (Pyro's model
relations): backward slices across calls and through in-place changes."""

from __future__ import annotations

import numpy as np

from ..views.mutation import reach_through_mutation

__all__ = ["relations"]


def relations(choice_trace) -> dict:
    """`{"choices": {address: [upstream addresses]}, "value": [addresses]}`.

    An upstream choice is one whose value flows (through data, across calls, and
    through lists, dicts and attributes changed in place) into the choice's
    parameters, or into the model's return value.  One slice per choice: for big
    models this costs a walk of the trace per choice.
    """
    trace = choice_trace.root.trace
    by_row = {c.node.row: a for a, c in choice_trace.choices.items()}
    rows = np.array(sorted(by_row), dtype=np.int32)

    def upstream(start: int) -> list[str]:
        got = reach_through_mutation(trace, np.array([start], dtype=np.int32), False, True)
        hit = np.intersect1d(got, rows, assume_unique=True)
        return [by_row[int(r)] for r in hit.tolist() if int(r) != start]

    per_choice = {a: upstream(c.node.row) for a, c in choice_trace.choices.items()}
    root = choice_trace.root
    value = upstream(root[-1].row) if len(root) else []
    return {"choices": per_choice, "value": value}
