"""The training run of tracer's profile-guided build (setup.py runs it between the
instrumented build and the final one; see setup.py's ``build_ext``).

GCC lays the compiled core out by what this program makes it execute: the hot paths
together and in straight lines, the cold ones out of the way.  So it should run what
users' programs make the recorder do, in about the proportions they do it: small
Python calls and recursion, op-dense loops, generators and ``yield from``, dict and
string code, exceptions, library code of the standard library, numpy calls, each
value policy, hooks for chosen callables, and plans built for code seen for the first
time.  It deliberately is not ``bench/``'s workloads: those measure the result, so
they must not be what the build was tuned on.

Needs only the standard library and numpy (the build environment's packages), writes
nothing outside a temporary directory (the plan cache is pointed there), and takes a
few seconds.  Run by hand: ``python scripts/pgo_training.py`` with tracer importable.
"""

from __future__ import annotations

import fractions
import ipaddress
import os
import random
import shlex
import statistics
import sys
import tempfile
import textwrap
from collections import OrderedDict
from dataclasses import dataclass


# --- program shapes ------------------------------------------------------------------


def partitions(n, k):
    """Recursion with small integer arithmetic (counts partitions of n, parts <= k)."""
    if n == 0:
        return 1
    if n < 0 or k == 0:
        return 0
    return partitions(n - k, k) + partitions(n, k - 1)


@dataclass
class Leaf:
    weight: float


class Branch:
    def __init__(self, left, right, scale):
        self.left = left
        self.right = right
        self.scale = scale

    def total(self):
        return self.scale * (weigh(self.left) + weigh(self.right))


def weigh(node):
    if isinstance(node, Leaf):
        return node.weight
    return node.total()


def grow(rng, depth):
    """Stochastic recursion: a random tree whose shape depends on the draws."""
    if depth == 0 or rng.random() < 0.25:
        return Leaf(rng.gauss(0.0, 1.0))
    return Branch(grow(rng, depth - 1), grow(rng, depth - 1), rng.uniform(0.5, 1.5))


def random_walk_model(rng, steps):
    """A model of many small draws, each through a helper call."""
    position, path = 0.0, []
    for _ in range(steps):
        step = rng.gauss(0.0, 1.0)
        if abs(position + step) > 10:
            step = -step
        position += step
        path.append(position)
    return statistics.fmean(path), max(path), min(path)


def integrate(f, a, b, n):
    """An op-dense float loop calling a small function."""
    width = (b - a) / n
    total = 0.0
    i = 0
    while i < n:
        x = a + (i + 0.5) * width
        total += f(x) * width
        i += 1
    return total


def cubic(x):
    return x * x * x - 2.0 * x + 1.0


def mandel_rows(size, limit):
    """Nested `for` loops over complex arithmetic, with `break`."""
    rows = []
    for y in range(size):
        row = []
        for x in range(size):
            c = complex(-2.0 + 2.5 * x / size, -1.25 + 2.5 * y / size)
            z = 0j
            n = 0
            for n in range(limit):
                z = z * z + c
                if abs(z) > 2.0:
                    break
            row.append(n)
        rows.append(row)
    return rows


def index_words(text):
    """Dict and string code: tokens, counts, a sorted index, a comprehension."""
    counts, positions = {}, {}
    for i, word in enumerate(text.lower().split()):
        word = word.strip(".,;:!?")
        if not word:
            continue
        counts[word] = counts.get(word, 0) + 1
        positions.setdefault(word, []).append(i)
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    return [(w, c, positions[w][:3]) for w, c in ranked[:20]]


def numbers(n):
    for i in range(n):
        yield i * i


def evens(source):
    for v in source:
        if v % 2 == 0:
            yield v


def delegate(source, depth):
    if depth == 0:
        yield from source
    else:
        yield from delegate(source, depth - 1)


def pipeline(n):
    """Generators: a chain of filters, `yield from` delegation and `send`."""
    total = sum(delegate(evens(numbers(n)), 3))
    acc = accumulator()
    next(acc)
    for v in range(n // 4):
        acc.send(v)
    return total, acc.send(0)


def accumulator():
    total = 0
    while True:
        value = yield total
        total += value


class LookupFailed(Exception):
    pass


def lookup(table, key):
    try:
        return table[key]
    except KeyError:
        raise LookupFailed(key) from None


def exceptions(n):
    """Raised and caught exceptions, `finally`, an OrderedDict reordered."""
    table = {i: i * 3 for i in range(0, n, 3)}
    found = missed = 0
    for i in range(n):
        try:
            found += lookup(table, i)
        except LookupFailed:
            missed += 1
        finally:
            found += 0
    cache = OrderedDict()
    for i in range(n):
        cache[i % 17] = i
        cache.move_to_end(i % 17)
    return found, missed, list(cache)[:3]


def library(rng, n):
    """Standard-library code that is Python, not C: call-dense parsers and arithmetic."""
    line = " ".join(f"--opt{i}='value {i}'" if i % 3 else f'"a b {i}"' for i in range(n))
    tokens = shlex.split(line)
    nets = [ipaddress.ip_network(f"10.{i % 256}.{(i * 7) % 256}.0/24") for i in range(n)]
    inside = sum(ipaddress.ip_address(f"10.{i % 256}.{(i * 7) % 256}.9") in nets[i] for i in range(n))
    fracs = sum((fractions.Fraction(rng.randint(1, 50), rng.randint(1, 50)) for _ in range(n)), fractions.Fraction(0))
    text = textwrap.fill(" ".join(tokens), width=40)
    return len(tokens), inside, fracs, len(text), statistics.median(rng.random() for _ in range(n))


def arrays(rng_seed, steps):
    """numpy calls: their time is numpy's, the recorder's share is per call."""
    import numpy as np

    gen = np.random.default_rng(rng_seed)
    w = gen.standard_normal((32, 32))
    x = gen.standard_normal(32)
    for _ in range(steps):
        x = np.tanh(w @ x + 0.1)
        if float(x.sum()) > 100:
            x = x / 2
    return float(np.abs(x).max())


def everything(seed, scale):
    rng = random.Random(seed)
    out = [
        partitions(18 + scale, 9),
        weigh(grow(rng, 8 + scale)),
        random_walk_model(rng, 2000 * scale),
        integrate(cubic, 0.0, 2.0, 20000 * scale),
        sum(map(sum, mandel_rows(12 * scale, 40))),
        index_words(textwrap.dedent(__doc__) * (4 * scale)),
        pipeline(5000 * scale),
        exceptions(1500 * scale),
        library(rng, 60 * scale),
        arrays(seed, 50 * scale),
    ]
    return out


# --- the training run ----------------------------------------------------------------


def main() -> None:
    # Plans go to a throwaway cache: the build must not write the user's cache.
    with tempfile.TemporaryDirectory(prefix="tracer-pgo-cache-") as cache_dir:
        os.environ["TRACER_PLAN_CACHE_DIR"] = cache_dir
        import tracer
        import tracer._core
        from tracer.context import Context

        stage = os.environ.get("TRACER_PGO_STAGE")
        if stage and not os.path.abspath(tracer._core.__file__).startswith(os.path.abspath(stage)):
            raise SystemExit(f"pgo training: imported {tracer._core.__file__}, not the build in {stage}")

        expected = everything(7, 2)
        # Plans built cold for every code object above and the library code it calls,
        # then warm runs: the calls' share of the profile is what users' runs have.
        for values in ("keep", "keep", "none", "summary", "weak"):
            root = tracer.track(everything, 7, 2, ctx=Context(values=values))
            if values == "keep" and repr(root.value) != repr(expected):
                raise SystemExit("pgo training: a traced run's result differs from the untraced run's")
            del root
        # Hooks for chosen callables, and interventions (a probabilistic layer's replay).
        def walk(ctx):
            return tracer.track(random_walk_model, random.Random(3), 3000, ctx=ctx).value

        seen = []
        gauss = random.Random.gauss
        walk(Context(on_call={gauss: seen.append}))
        if len(seen) != 3000:
            raise SystemExit(f"pgo training: the on_call hook saw {len(seen)} of 3000 draws")
        if walk(Context(substitute={gauss: lambda self, mu, sigma: mu})) != (0.0, 0.0, 0.0):
            raise SystemExit("pgo training: the substituted draws were not used")
        if walk(Context(override={gauss: lambda node: 0.5}))[2] != 0.5:
            raise SystemExit("pgo training: the overridden draws were not used")
        # Reading a finished trace: views and whole-trace queries.
        root = tracer.track(everything, 11, 1)
        tracer.validate(root)
        tracer.counts(root)
        for node in tracer.query(root, "descendants").where(kind="primitive")[:2000]:
            node.backward
    print(f"pgo training: done ({sys.version.split()[0]})")


if __name__ == "__main__":
    main()
