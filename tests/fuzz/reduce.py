"""Shrink a failing program to the fewest blocks that still fail the same way.

Blocks are independent, so dropping one still gives a valid program; a block stays
only if the failure (same failure class) goes away without it.
"""

from __future__ import annotations

import sys

from .outcome import failure_keys
from .program import Program
from .runner import run_programs


def reduce_blocks(program: Program, key: str, python: str = sys.executable) -> list[int]:
    """Indexes of the blocks to keep: a 1-minimal subset under block removal that
    still has the failure class `key`."""
    keep = list(range(len(program.blocks)))
    changed = True
    while changed and len(keep) > 1:
        changed = False
        for index in list(keep):
            trial = [i for i in keep if i != index]
            (result,) = run_programs([(f"{program.seed}-reduce", program.source(trial))], python,
                                     confirm_crashes=False)
            if key in failure_keys(result.outcome, result.detail):
                keep = trial
                changed = True
    return keep
