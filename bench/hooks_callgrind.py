"""bench/hooks.py's variants as instruction counts (callgrind): stable on a busy
machine, where the wall times of bench/hooks.py vary by tens of percent.

One process runs every variant once warm (1,000 calls), then each once on N calls
(default 50,000, one in 100 to the hooked callable) through its own C entry point
of the interpreter (`min`'s key, `filter`, `filterfalse`, `starmap`, `reduce`,
`takewhile`, `dropwhile`), whose inclusive instruction count in the callgrind
output is that variant's cost:

    nice valgrind --tool=callgrind --callgrind-out-file=/tmp/cg.hooks \\
        .venv-3.13/bin/python bench/hooks_callgrind.py 50000
    .venv-3.13/bin/python bench/hooks_callgrind.py --read /tmp/cg.hooks 50000
"""

from __future__ import annotations

import functools
import gc
import itertools
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

ORDER = ["untraced", "plain tracing", "on_call={draw: hook}", "substitute={draw: fn}",
         "override={draw: hook}", "substitute, PLAN_INTERVENE", "override, PLAN_INTERVENE"]
MARKERS = dict(zip(["min_max", "filter_next", "filterfalse_next", "starmap_next",
                    "functools_reduce", "takewhile_next", "dropwhile_next"], ORDER))


def run(n: int) -> None:
    import hooks
    import tracer

    seen: list = []
    ctxs = hooks.variants(seen, False)

    def case(name):
        if name == "untraced":
            return lambda *_: hooks.program(n, 100) and False
        return lambda *_: tracer.track(hooks.program, n, 100, ctx=ctxs[name]) and False

    for name in ORDER[1:]:
        tracer.track(hooks.program, 1000, 100, ctx=ctxs[name])
    hooks.program(1000, 100)
    c = [case(name) for name in ORDER]
    gc.collect()     # (each variant starts from a collected heap, outside its count)
    min([0], key=c[0])
    gc.collect()
    list(filter(c[1], [0]))
    gc.collect()
    list(itertools.filterfalse(c[2], [0]))
    gc.collect()
    list(itertools.starmap(c[3], [(0,)]))
    gc.collect()
    functools.reduce(lambda a, i: c[4](i), [0], 0)
    gc.collect()
    list(itertools.takewhile(lambda i: c[5](i) or True, [0]))
    gc.collect()
    list(itertools.dropwhile(lambda i: c[6](i) or True, [0]))


def read(path: str, n: int) -> None:
    out = subprocess.run(["callgrind_annotate", "--inclusive=yes", path],
                         capture_output=True, text=True).stdout
    got = {}
    for line in out.splitlines():
        m = re.match(r"\s*([\d,]+) .*:(\w+) \[", line)
        if m and m.group(2) in MARKERS and MARKERS[m.group(2)] not in got:
            got[MARKERS[m.group(2)]] = int(m.group(1).replace(",", "")) / n
    plain = got.get("plain tracing")
    print(f"instructions per loop iteration ({n:,} iterations, one in 100 hooked)")
    print("| variant | instructions | / plain tracing | / untraced |")
    print("|---|---|---|---|")
    for name in ORDER:
        if name in got:
            print(f"| {name} | {got[name]:,.0f} | "
                  f"{got[name] / plain:.2f}× | {got[name] / got['untraced']:.2f}× |")


if __name__ == "__main__":
    if sys.argv[1] == "--read":
        read(sys.argv[2], int(sys.argv[3]))
    else:
        run(int(sys.argv[1]))
