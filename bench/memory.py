"""What a traced run pays for the memory its kept values need.

Usage::

    python bench/memory.py [WORKLOAD] [REPEAT] [drop|keep]

Times WORKLOAD (default ``mlp``) untraced and under ``tracer.track``,
interleaved, best of REPEAT (default 5), and counts the minor page faults of the
best traced run.  ``drop`` (the default) drops each run's root after timing it,
as a program that keeps nothing does; ``keep`` keeps the previous root alive
until the next traced run has recorded (what ``tracer.last_trace()`` used to do),
so the allocator still holds the freed values' memory when the next run needs it.
"""

from __future__ import annotations

import gc
import resource
import sys
import time
from typing import Any, Callable

import tracer

from workloads import BY_NAME


def minor_faults() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def main(argv: list[str]) -> None:
    workload = BY_NAME[argv[0] if argv else "mlp"]
    repeat = int(argv[1]) if len(argv) > 1 else 5
    protocol = argv[2] if len(argv) > 2 else "drop"
    if protocol not in ("drop", "keep"):
        raise SystemExit(f"protocol is drop or keep, not {protocol!r}")
    kept: list[Any] = [None]

    def untraced(f: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        return f(*args, **kwargs)

    def traced(f: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        root = tracer.track(f, *args, **kwargs)
        if protocol == "keep":
            kept[0] = root   # the previous root is freed here, inside the timing
        return root

    best = {"untraced": float("inf"), "traced": float("inf")}
    faults = {}
    for _ in range(repeat):
        for name, call in (("untraced", untraced), ("traced", traced)):
            args, kwargs = workload.make_args()
            gc.collect()
            before = minor_faults()
            start = time.perf_counter()
            result = call(workload.func, *args, **kwargs)
            elapsed = time.perf_counter() - start
            if elapsed < best[name]:
                best[name], faults[name] = elapsed, minor_faults() - before
            del result
    base = best["untraced"]
    print(f"{workload.name} ({protocol}): "
          + "  ".join(f"{name} {t * 1e3:.1f} ms ({t / base:.2f}x, {faults[name]:,} minor faults)"
                      for name, t in best.items()))


if __name__ == "__main__":
    main(sys.argv[1:])
