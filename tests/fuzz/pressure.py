"""Generated programs under collector pressure: frames entered from C at any instruction.

Each program runs untraced, then traced, in this process, with a collection at
nearly every allocation (`gc.set_threshold(THRESHOLD, 1, 1)`) and three kinds of
callbacks the collector runs as frames entered from C: a `gc.callbacks` function,
the `__del__` of cyclic garbage that re-arms itself, and a weakref callback of
cyclic garbage that re-arms itself.  On 3.12 a collection runs inside whatever
instruction allocated; on 3.13 at the next eval-breaker check.  Every trace must
pass `validate`, and the traced call must return or raise what the untraced one did.

    PYTHONPATH=tests .venv-3.12/bin/python -m fuzz.pressure --seed 20000 --count 400
    PYTHONPATH=tests .venv-3.12/bin/python -m fuzz.pressure --values weak   # under a value policy
"""

from __future__ import annotations

import argparse
import gc
import re
import sys
import weakref
from collections import Counter

import tracer

from .child import load
from .program import generate

ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


class Pressure:
    """The callbacks, armed while `with` runs."""

    def __init__(self, threshold: int) -> None:
        self.threshold = threshold
        self.hits: Counter = Counter()
        self.armed = False
        self._ref = None

    def _on_gc(self, phase, info) -> None:
        self.hits["gc.callbacks"] += 1

    def _bomb(self) -> None:
        pressure = self

        class Bomb:
            def __init__(self):
                self.me = self

            def __del__(self):
                pressure.hits["__del__"] += 1
                if pressure.armed:
                    Bomb()

        Bomb()

    def _rearm(self, _=None) -> None:
        self.hits["weakref callback"] += 1
        if not self.armed:
            return

        class Node:
            pass

        n = Node()
        n.me = n
        self._ref = weakref.ref(n, self._rearm)

    def __enter__(self) -> "Pressure":
        self.armed = True
        self._old = gc.get_threshold()
        gc.callbacks.append(self._on_gc)
        self._bomb()
        self._rearm()
        gc.set_threshold(self.threshold, 1, 1)
        return self

    def __exit__(self, *exc) -> None:
        gc.set_threshold(*self._old)
        gc.callbacks.remove(self._on_gc)
        self.armed = False
        self._ref = None
        gc.collect()


def outcome(call) -> tuple[str, str]:
    try:
        return "returned", ADDRESS.sub("", repr(call()))
    except Exception as exc:
        return "raised", ADDRESS.sub("", f"{type(exc).__name__}: {exc}")


def run_one(seed: int, threshold: int, counts: Counter, examples: dict, values: str = "keep") -> None:
    source = generate(seed).source()
    untraced = load(source, str(seed))
    want = outcome(lambda: untraced.main(*untraced.ARGS))
    module = load(source, str(seed))
    roots = []

    def traced():
        roots.append(None)
        root = tracer.track(module.main, *module.ARGS, ctx=tracer.Context(values=values))
        roots[-1] = root
        return root.value

    with Pressure(threshold) as pressure:
        got = outcome(traced)
    counts.update(pressure.hits)
    root = roots[-1] if roots and roots[-1] is not None else tracer.last_trace()
    try:
        tracer.validate(root)
    except Exception as exc:
        key = "trace-broken: " + re.sub(r"\d+", "N", str(exc))[:100]
        counts[key] += 1
        examples.setdefault(key, (seed, str(exc)[:300]))
        return
    if got != want:
        counts["mismatch"] += 1
        examples.setdefault("mismatch", (seed, f"{want} != {got}"))
        return
    counts["ok"] += 1


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=20000)
    ap.add_argument("--count", type=int, default=200)
    ap.add_argument("--threshold", type=int, default=7,
                    help="gen-0 collection threshold while a program runs (default 7)")
    ap.add_argument("--values", default="keep", choices=("keep", "none", "summary", "weak"),
                    help="the value policy the programs are traced under (default keep): "
                         "a policy makes summaries and weak references as rows are written")
    args = ap.parse_args(argv)
    counts: Counter = Counter()
    examples: dict = {}
    for seed in range(args.seed, args.seed + args.count):
        run_one(seed, args.threshold, counts, examples, args.values)
    print(f"Python {sys.version.split()[0]}, seeds {args.seed}..{args.seed + args.count - 1}, "
          f"threshold {args.threshold}, values={args.values}")
    for key, n in sorted(counts.items()):
        print(f"  {key}: {n:,}")
    for key, (seed, text) in examples.items():
        print(f"example of {key}: seed {seed}: {text}")
    return 0 if set(k for k in counts if not k.startswith(("ok", "gc.", "__del", "weak"))) == set() \
        else 1


if __name__ == "__main__":
    sys.exit(main())
