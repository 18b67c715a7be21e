"""bench/hooks.py's variants as instruction counts (callgrind): stable on a busy
machine, where the wall times of bench/hooks.py vary by tens of percent.

One process runs every variant once warm (1,000 calls), then each once on N calls
(default 50,000, one in 100 to the hooked callable) through its own C entry point
of the interpreter (bench/callgrind_marks.py), whose inclusive instruction count in
the callgrind output is that variant's cost:

    nice valgrind --tool=callgrind --callgrind-out-file=/tmp/cg.hooks \\
        .venv-3.13/bin/python bench/hooks_callgrind.py 50000
    .venv-3.13/bin/python bench/hooks_callgrind.py --read /tmp/cg.hooks 50000
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from callgrind_marks import marker_counts, run_marked  # noqa: E402

ORDER = ["untraced", "plain tracing", "on_call={draw: hook}", "substitute={draw: fn}",
         "override={draw: hook}", "substitute, PLAN_INTERVENE", "override, PLAN_INTERVENE"]


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
    run_marked([case(name) for name in ORDER], 1)


def read(path: str, n: int) -> None:
    got = marker_counts(path, ORDER, n)
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
