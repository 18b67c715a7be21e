"""Several cases counted apart in one callgrind run (bench/hooks_callgrind.py,
bench/ppl_callgrind.py): case j runs through its own C entry point of the
interpreter, ENTRY_POINTS[j] (`min`'s key, `filter`, `filterfalse`, `starmap`,
`reduce`, `takewhile`, `dropwhile`, `sorted`'s key), whose inclusive instruction
count in the callgrind output is that case's cost.
"""

from __future__ import annotations

import functools
import gc
import itertools
import re
import subprocess

# The C functions of CPython 3.12/3.13 each case runs under, in case order.
ENTRY_POINTS = ["min_max", "filter_next", "filterfalse_next", "starmap_next",
                "functools_reduce", "takewhile_next", "dropwhile_next", "list_sort_impl"]


def run_marked(cases: list, k: int) -> None:
    """Run each of `cases` (callables taking the run's index, at most
    len(ENTRY_POINTS)) k times, case j under ENTRY_POINTS[j]."""
    if len(cases) > len(ENTRY_POINTS):
        raise ValueError(f"at most {len(ENTRY_POINTS)} cases, got {len(cases)}")
    ks = list(range(k))
    through = [
        lambda f: min(ks, key=lambda i: (f(i), i)[1]),
        lambda f: list(filter(f, ks)),
        lambda f: list(itertools.filterfalse(f, ks)),
        lambda f: list(itertools.starmap(f, [(i,) for i in ks])),
        lambda f: functools.reduce(lambda a, i: f(i), ks, 0),
        lambda f: list(itertools.takewhile(lambda i: f(i) or True, ks)),
        lambda f: list(itertools.dropwhile(lambda i: f(i) or True, ks)),
        lambda f: sorted(ks, key=lambda i: (f(i), 0)[1]),
    ]
    for f, run in zip(cases, through):
        # Each case starts from a collected heap (outside its count): a collection
        # of the whole heap falling in one case or another moved a case by 5 %.
        gc.collect()
        run(f)


def marker_counts(path: str, names: list, per: int) -> dict:
    """{name: inclusive instructions / per} from the callgrind output at `path`,
    names[j] being case j's (cases that did not run are left out)."""
    markers = dict(zip(ENTRY_POINTS, names))
    # --threshold=100: every function listed (the default stops at 99 % of the
    # total, which left out the smaller cases of a short run).
    out = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--threshold=100", path],
                         capture_output=True, text=True).stdout
    got = {}
    for line in out.splitlines():
        m = re.match(r"\s*([\d,]+) .*:(\w+) \[", line)
        if m and m.group(2) in markers and markers[m.group(2)] not in got:
            got[markers[m.group(2)]] = int(m.group(1).replace(",", "")) / per
    return got
