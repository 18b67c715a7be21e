"""Workloads for the tracer benchmark (``bench/run.py``).

Each workload is a plain Python function together with a factory,
``make_args()``, that builds fresh ``(args, kwargs)`` for every call.  Building
arguments afresh means mutable state -- random number generators above all --
is identical for the untraced and the traced run, so their results can be
compared exactly.

The workloads cover different shapes of program:

``h``      an op-dense arithmetic loop (many tiny operations, no calls);
``fib``    naive recursion (many small Python calls);
``mlp``    a numpy-heavy model whose time is spent in numpy's C code;
``geom``   a "probabilistic model": stochastic recursion driven by an rng;
``words``  mixed everyday Python: lists, dicts, methods, comprehensions, sorting;
``json``   the standard library's pure-Python JSON encoder (a parser-like walk of
           nested containers through generators);
``difflib`` ``difflib.SequenceMatcher.ratio`` (library code: many small methods);
``nbody``  the classic n-body kernel (float arithmetic on lists, tuple unpacking);
``fannkuch`` permutation flipping (list slicing and swaps in tight loops);
``sched``  a round-robin scheduler of generator tasks (resumes, yields, a deque);
``yieldfrom`` items passed up a chain of ``yield from`` generators (delegation).
"""

from __future__ import annotations

import difflib
import json
import random
from collections import deque
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

Args = tuple[tuple[Any, ...], dict[str, Any]]


@dataclass(frozen=True)
class Workload:
    """A function to benchmark, a factory for its arguments and a result check."""

    name: str
    func: Callable[..., Any]
    make_args: Callable[[], Args]
    same_result: Callable[[Any, Any], bool] = lambda a, b: bool(a == b)
    description: str = ""


# Sizes are chosen so each untraced call takes roughly 5-200 ms on an ordinary
# machine: long enough to time reliably, short enough that traced runs finish.

# --- 1. op-dense loop -------------------------------------------------------

H_N = 80000

def h(x, n):
    r = 0.0
    i = 0
    while i < n:
        r += x ** i
        i += 1
    return r


# --- 2. naive recursion -----------------------------------------------------

FIB_N = 25

def fib(n):
    if n < 2:
        return n
    return fib(n - 1) + fib(n - 2)


# --- 3. numpy-heavy model ---------------------------------------------------

MLP_SIZE = 256
MLP_STEPS = 50


def make_mlp_args() -> Args:
    rng = np.random.default_rng(0)
    scale = 1.0 / np.sqrt(MLP_SIZE)
    x = rng.standard_normal((MLP_SIZE, MLP_SIZE))
    w1 = rng.standard_normal((MLP_SIZE, MLP_SIZE)) * scale
    b1 = rng.standard_normal(MLP_SIZE)
    w2 = rng.standard_normal((MLP_SIZE, MLP_SIZE)) * scale
    b2 = rng.standard_normal(MLP_SIZE)
    return (x, w1, b1, w2, b2, MLP_STEPS), {}


def mlp(x, w1, b1, w2, b2, steps):
    """Feed ``x`` through a 2-layer tanh MLP ``steps`` times."""
    out = x
    for _ in range(steps):
        hidden = np.tanh(out @ w1 + b1)
        out = np.tanh(hidden @ w2 + b2)
    return out


def arrays_match(a, b) -> bool:
    # Tight tolerance rather than exact equality: a BLAS may pick a different
    # kernel path depending on memory alignment, which can change the last bit.
    return a.shape == b.shape and a.dtype == b.dtype and bool(
        np.allclose(a, b, rtol=1e-12, atol=1e-15)
    )


# --- 4. probabilistic model -------------------------------------------------

GEOM_TRIALS = 20000
GEOM_BETA = 0.3


def geom(rng, n, beta):
    """Number of failures before the first success of a Bernoulli(beta)."""
    if rng.random() < beta:
        return n
    return geom(rng, n + 1, beta)


def geom_model(rng, trials, beta):
    return [geom(rng, 0, beta) for _ in range(trials)]


def make_geom_args() -> Args:
    return (random.Random(1), GEOM_TRIALS, GEOM_BETA), {}


# --- 5. mixed everyday Python -----------------------------------------------

WORD_COUNT = 50000
SYLLABLES = ["ka", "lo", "mi", "ne", "su", "ta", "ri", "po", "de", "ga"]


def make_words_args() -> Args:
    rng = random.Random(2)
    vocabulary = [
        "".join(rng.choice(SYLLABLES) for _ in range(rng.randint(1, 3)))
        for _ in range(300)
    ]
    words = [
        w.upper() if rng.random() < 0.2 else w
        for w in rng.choices(vocabulary, k=WORD_COUNT)
    ]
    return (words,), {}


def word_frequencies(words):
    """Count words case-insensitively; return (word, count) by falling count."""
    counts = {}
    for word in words:
        key = word.lower().strip()
        counts[key] = counts.get(key, 0) + 1
    frequent = [(w, c) for w, c in counts.items() if c > 1]
    frequent.sort(key=lambda item: (-item[1], item[0]))
    return frequent


# --- 6. pure-Python JSON encoder ----------------------------------------------

JSON_RECORDS = 400


def make_json_args() -> Args:
    rng = random.Random(3)
    records = [
        {"id": i, "name": "".join(rng.choice(SYLLABLES) for _ in range(3)),
         "score": round(rng.random() * 100, 3), "tags": [rng.choice(SYLLABLES) for _ in range(4)],
         "active": rng.random() < 0.5, "parent": None if i % 7 else i // 7,
         "point": {"x": rng.randint(-99, 99), "y": rng.randint(-99, 99)}}
        for i in range(JSON_RECORDS)
    ]
    return (records,), {}


def json_encode(records):
    """JSON text by the standard library's pure-Python encoder: ``iterencode``
    without ``_one_shot`` never uses the C accelerator (``json.dumps`` would)."""
    return "".join(json.JSONEncoder(indent=1, sort_keys=True).iterencode(records))


# --- 7. difflib -------------------------------------------------------------

DIFF_LINES = 1500


def make_difflib_args() -> Args:
    rng = random.Random(4)
    a = ["".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 5))) for _ in range(DIFF_LINES)]
    b = [line if rng.random() < 0.8 else line[::-1] for line in a]
    b.insert(DIFF_LINES // 2, "inserted")
    return (a, b), {}


def difflib_ratio(a, b):
    return difflib.SequenceMatcher(None, a, b).ratio()


# --- 8. n-body --------------------------------------------------------------

NBODY_STEPS = 1500


def make_nbody_args() -> Args:
    bodies = [
        # x, y, z, vx, vy, vz, mass
        [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 39.47],
        [4.84, -1.16, -0.10, 0.61, 2.81, -0.02, 0.037],
        [8.34, 4.12, -0.40, -1.01, 1.82, 0.008, 0.011],
        [12.89, -15.11, -0.22, 1.08, 0.87, -0.01, 0.0017],
        [15.37, -25.91, 0.17, 0.97, 0.59, -0.03, 0.002],
    ]
    return (bodies, NBODY_STEPS, 0.01), {}


def nbody(bodies, steps, dt):
    """Advance the bodies `steps` times; return the total energy."""
    n = len(bodies)
    for _ in range(steps):
        for i in range(n):
            b1 = bodies[i]
            for j in range(i + 1, n):
                b2 = bodies[j]
                dx = b1[0] - b2[0]
                dy = b1[1] - b2[1]
                dz = b1[2] - b2[2]
                mag = dt * (dx * dx + dy * dy + dz * dz) ** -1.5
                m1 = b1[6] * mag
                m2 = b2[6] * mag
                b1[3] -= dx * m2
                b1[4] -= dy * m2
                b1[5] -= dz * m2
                b2[3] += dx * m1
                b2[4] += dy * m1
                b2[5] += dz * m1
        for b in bodies:
            b[0] += dt * b[3]
            b[1] += dt * b[4]
            b[2] += dt * b[5]
    energy = 0.0
    for b in bodies:
        energy += 0.5 * b[6] * (b[3] * b[3] + b[4] * b[4] + b[5] * b[5])
    return energy


# --- 9. fannkuch ------------------------------------------------------------

FANNKUCH_N = 7


def fannkuch(n):
    """The maximum number of pancake flips over all permutations of range(n)."""
    count = list(range(1, n + 1))
    max_flips = 0
    m = n - 1
    r = n
    perm1 = list(range(n))
    while True:
        while r != 1:
            count[r - 1] = r
            r -= 1
        if perm1[0] != 0 and perm1[m] != m:
            perm = perm1[:]
            flips = 0
            k = perm[0]
            while k:
                perm[:k + 1] = perm[k::-1]
                flips += 1
                k = perm[0]
            if flips > max_flips:
                max_flips = flips
        while r != n:
            perm1.insert(r, perm1.pop(0))
            count[r] -= 1
            if count[r] > 0:
                break
            r += 1
        else:
            return max_flips


# --- 10. a task scheduler ---------------------------------------------------

SCHED_TASKS = 40
SCHED_STEPS = 500


def worker(ident, steps, log):
    total = 0
    for step in range(steps):
        total += (ident * step) % 7
        if step % 5 == 0:
            log.append((ident, total))
        yield
    return total


def scheduler(ntasks, steps):
    """Round-robin over generator tasks until all finish; their results in order."""
    log = []
    ready = deque((i, worker(i, steps + i % 3, log)) for i in range(ntasks))
    results = {}
    while ready:
        ident, task = ready.popleft()
        try:
            next(task)
        except StopIteration as done:
            results[ident] = done.value
        else:
            ready.append((ident, task))
    return [results[i] for i in range(ntasks)], len(log)


# --- 11. a yield from chain ---------------------------------------------------

CHAIN_DEPTH = 4
CHAIN_ITEMS = 20000


def chain_source(n):
    for i in range(n):
        yield i


def chain_level(depth, n):
    if depth == 0:
        yield from chain_source(n)
    else:
        yield from chain_level(depth - 1, n)


def yield_chain(depth, n):
    """Each item of a generator passed up `depth` delegating generators."""
    total = 0
    for v in chain_level(depth, n):
        total += v
    return total


# --- registry ---------------------------------------------------------------

WORKLOADS: list[Workload] = [
    Workload("h", h, lambda: ((1.0001, H_N), {}),
             description=f"while-loop summing x**i, x=1.0001, n={H_N}"),
    Workload("fib", fib, lambda: ((FIB_N,), {}),
             description=f"naive recursive fibonacci, n={FIB_N}"),
    Workload("mlp", mlp, make_mlp_args, same_result=arrays_match,
             description=f"2-layer MLP forward x{MLP_STEPS}, {MLP_SIZE}x{MLP_SIZE} float64"),
    Workload("geom", geom_model, make_geom_args,
             description=f"stochastic recursion x{GEOM_TRIALS}, beta={GEOM_BETA}"),
    Workload("words", word_frequencies, make_words_args,
             description=f"word frequencies over {WORD_COUNT} words, sorted"),
    Workload("json", json_encode, make_json_args,
             description=f"JSONEncoder(indent=1).iterencode of {JSON_RECORDS} records (pure-Python encoder)"),
    Workload("difflib", difflib_ratio, make_difflib_args,
             description=f"difflib.SequenceMatcher.ratio of two {DIFF_LINES}-line lists"),
    Workload("nbody", nbody, make_nbody_args,
             description=f"n-body kernel, 5 bodies x {NBODY_STEPS} steps"),
    Workload("fannkuch", fannkuch, lambda: ((FANNKUCH_N,), {}),
             description=f"fannkuch({FANNKUCH_N})"),
    Workload("sched", scheduler, lambda: ((SCHED_TASKS, SCHED_STEPS), {}),
             description=f"round-robin scheduler of {SCHED_TASKS} generator tasks x ~{SCHED_STEPS} steps"),
    Workload("yieldfrom", yield_chain, lambda: ((CHAIN_DEPTH, CHAIN_ITEMS), {}),
             description=f"{CHAIN_ITEMS} items through {CHAIN_DEPTH + 1} delegating generators"),
]

BY_NAME: dict[str, Workload] = {w.name: w for w in WORKLOADS}
