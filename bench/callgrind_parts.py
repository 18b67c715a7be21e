"""Several cases counted apart in one callgrind run, one profile part per run.

bench/callgrind_marks.py counts case j as the inclusive cost of a C function of
the interpreter (`min`'s key, `sorted`'s key, ...), which is right only when that
function runs nowhere else: `min_max` and `list_sort_impl` run thousands of
times in tracer's and scipy's own code (84,805 `min` calls and 8,818 sorts in a
bench/ppl_phases.py run of session 16), so their counts took in the whole
program's.  Here every run of every case is one call of `itertools.starmap`'s
`starmap_next`, and callgrind collects only inside it and writes a part at its
end:

    valgrind --tool=callgrind --collect-atstart=no --toggle-collect=starmap_next \\
        --dump-after=starmap_next --callgrind-out-file=/tmp/cg.X python script.py
    # -> /tmp/cg.X.1, /tmp/cg.X.2, ...: one per starmap_next call, in order

`run_parts(cases, k)` runs each case k times that way (k parts, then one small
part for the iterator's end); `part_counts(path, names, k)` reads them back as
{name: instructions per run}.
"""

from __future__ import annotations

import gc
import glob
import itertools
import re

VALGRIND_ARGS = ["--tool=callgrind", "--collect-atstart=no", "--toggle-collect=starmap_next",
                 "--dump-after=starmap_next"]


def run_parts(cases: list, k: int) -> None:
    """Run each of `cases` (callables taking the run's index) k times, each run a
    call of starmap_next (one callgrind part)."""
    for f in cases:
        gc.collect()
        list(itertools.starmap(f, [(i,) for i in range(k)]))


def part_counts(path: str, names: list, k: int) -> dict:
    """{name: instructions per run} from the parts `path`.1, `path`.2, ... that
    run_parts wrote for cases `names`, k runs each."""
    parts = sorted(glob.glob(path + ".*"), key=lambda p: int(p.rsplit(".", 1)[1]))
    totals = []
    for p in parts:
        with open(p) as fh:
            for line in fh:
                m = re.match(r"totals: (\d+)", line)
                if m:
                    totals.append(int(m.group(1)))
                    break
    got = {}
    per = k + 1
    for j, name in enumerate(names):
        runs = totals[j * per:j * per + k]
        if len(runs) == k:
            got[name] = sum(runs) / k
    return got
